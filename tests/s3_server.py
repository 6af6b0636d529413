"""A real S3 server for the tests: moto's standalone server (`python -m moto.server`) on
127.0.0.1, started once per test session (per xdist worker).  It speaks S3's HTTP API,
enforces `If-None-Match: *` on PutObject and, once `start()` has set up its users, checks
every request's signature: an admin user that may do anything and a read-only user, with
generated keys, and a bucket `lake`."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

__all__ = ["BUCKET", "MotoS3Server"]

BUCKET = "lake"
READ_ONLY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket", "s3:HeadObject"], "Resource": "*"}]}
EVERYTHING = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MotoS3Server:
    process: subprocess.Popen
    endpoint: str
    log: tempfile._TemporaryFileWrapper  # the server logs every request: a file, never a pipe that fills
    access_key_id: str = ""
    secret_access_key: str = ""
    read_only_key_id: str = ""
    read_only_secret: str = ""

    @classmethod
    def start(cls, timeout: float = 30.0) -> MotoS3Server:
        last_error = ""
        for _ in range(3):  # the free port may be taken between the probe and the bind
            port = free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            log = tempfile.NamedTemporaryFile(prefix="moto-server-", suffix=".log")
            process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                       stdout=subprocess.DEVNULL, stderr=log, env=env)
            server = cls(process, f"http://127.0.0.1:{port}", log)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    urllib.request.urlopen(server.endpoint + "/moto-api/", timeout=1).read()
                    server.set_up()
                    return server
                except (urllib.error.URLError, ConnectionError, OSError):
                    time.sleep(0.1)
            last_error = server.stop()
        raise RuntimeError(f"moto server did not start: {last_error[-2000:]}")

    def client(self, service: str, key_id: str = "setup", secret: str = "setup"):
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, aws_access_key_id=key_id,
                            aws_secret_access_key=secret, region_name="us-east-1")

    def set_up(self) -> None:
        """Users, keys and the bucket while moto accepts anything; then signatures are checked."""
        iam = self.client("iam")
        for user, policy in (("admin", EVERYTHING), ("reader", READ_ONLY)):
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="policy", PolicyDocument=json.dumps(policy))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            if user == "admin":
                self.access_key_id, self.secret_access_key = key["AccessKeyId"], key["SecretAccessKey"]
            else:
                self.read_only_key_id, self.read_only_secret = key["AccessKeyId"], key["SecretAccessKey"]
        self.client("s3").create_bucket(Bucket=BUCKET)
        request = urllib.request.Request(self.endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=10).read()

    def options(self, **overrides: object) -> dict[str, object]:
        """storage_options for the admin user."""
        return {"aws_endpoint_url": self.endpoint, "aws_access_key_id": self.access_key_id,
                "aws_secret_access_key": self.secret_access_key, "aws_region": "us-east-1",
                "aws_allow_http": "true", **overrides}

    def stop(self) -> str:
        """Stop the server; its stderr, for a failed start's message."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.seek(0)
        text = self.log.read().decode(errors="replace")
        self.log.close()
        return text
