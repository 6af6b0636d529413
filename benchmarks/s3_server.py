"""An S3 server on this machine for ``mergetree bench --storage``: moto's standalone server
(``python -m moto.server``, from ``moto[server]``) on 127.0.0.1 with one bucket.

The bench wants a server, not a security test: moto's request authentication stays off (the
server then takes any key and skips checking signatures, work a real store does on its own
machines), and the keys are fixed, so delta-rs and pyiceberg get the same options.  The test
suite's server (``tests/s3_server.py``) checks signatures and has a read-only user."""
from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

__all__ = ["BUCKET", "REQUEST_KINDS", "LocalS3", "moto_missing"]

BUCKET = "bench"
REGION = "us-east-1"
# the kinds mergetree's RequestCounter counts: a multipart upload's create, parts and complete
# count as PUTs (parts of one write), a bulk delete (POST ?delete) as a DELETE
REQUEST_KINDS = ("GET", "PUT", "LIST", "HEAD", "DELETE")
_LOGGED = re.compile(r'"(GET|PUT|POST|HEAD|DELETE) (\S+) HTTP/[0-9.]+"')
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def moto_missing() -> str | None:
    """Why the server cannot start here, or None."""
    try:
        import moto.server  # noqa: F401
    except ImportError:
        return "moto[server] is not installed (pip install 'moto[server]')"
    return None


class LocalS3:
    """``with LocalS3() as s3:`` a fresh server (its objects live in its memory), stopped at the end."""

    def __init__(self, startup_seconds: float = 30.0) -> None:
        self.startup_seconds = startup_seconds
        self.process: subprocess.Popen | None = None
        self.endpoint = ""
        # the server's request log: a file (never a pipe that fills) it appends to, read here
        # through a descriptor of our own (its own offset)
        descriptor, self._log_path = tempfile.mkstemp(prefix="bench-moto-", suffix=".log")
        os.close(descriptor)
        self._log = open(self._log_path, "rb")  # closed in __exit__

    def __enter__(self) -> LocalS3:
        with socket.socket() as probe:  # a free port; moto binds it a moment later
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        with open(self._log_path, "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                            stdout=subprocess.DEVNULL, stderr=log, env=env)
        self.endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + self.startup_seconds
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{BUCKET}", method="PUT"),
                                       timeout=2).read()
                return self
            except (urllib.error.URLError, OSError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise RuntimeError(f"the moto S3 server did not start on {self.endpoint}") from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        with contextlib.suppress(OSError):
            os.unlink(self._log_path)

    def mark(self) -> int:
        """Where the server's request log ends now: `requests_since(mark)` counts what came after."""
        self._quiet()
        return os.path.getsize(self._log_path)

    def requests_since(self, mark: int) -> dict[str, int]:
        """The requests the server answered since `mark`, by kind, read from its own log (so
        they count what any client sent: mergetree, delta-rs, pyiceberg, Spark's workers)."""
        self._quiet()
        self._log.seek(mark)
        text = _COLOUR.sub("", self._log.read().decode(errors="replace"))
        counts = dict.fromkeys(REQUEST_KINDS, 0)
        for method, target in _LOGGED.findall(text):
            path, _, query = target.partition("?")
            if method == "GET" and path.rstrip("/") == f"/{BUCKET}":
                counts["LIST"] += 1
            elif method == "POST":
                counts["DELETE" if query.startswith("delete") else "PUT"] += 1
            else:
                counts[method] += 1
        return counts

    def _quiet(self, settle: float = 0.05, limit: float = 3.0) -> None:
        """Wait until the log stops growing: the server writes a request's line after answering it."""
        deadline = time.monotonic() + limit
        size = os.path.getsize(self._log_path)
        while time.monotonic() < deadline:
            time.sleep(settle)
            now = os.path.getsize(self._log_path)
            if now == size:
                return
            size = now

    def cpu_seconds(self) -> float | None:
        """The server process's CPU time so far (user + system; None where /proc is not there):
        on a small machine the server's work competes with the client's."""
        try:
            with open(f"/proc/{self.process.pid if self.process else 0}/stat", encoding="ascii") as stat:
                fields = stat.read().rpartition(")")[2].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def uri(self, name: str) -> str:
        return f"s3://{BUCKET}/{name}"

    def options(self) -> dict[str, str]:
        """storage_options for mergetree and delta-rs (object_store's key names)."""
        return {"aws_endpoint_url": self.endpoint, "aws_access_key_id": "bench", "aws_secret_access_key": "bench",
                "aws_region": REGION, "aws_allow_http": "true"}

    def iceberg_properties(self) -> dict[str, str]:
        """The same for pyiceberg's FileIO (its ``s3.*`` keys)."""
        return {"s3.endpoint": self.endpoint, "s3.access-key-id": "bench", "s3.secret-access-key": "bench",
                "s3.region": REGION}
