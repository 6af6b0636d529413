"""A fault-injecting HTTP proxy in front of the tests' S3 server (tests/s3_server.py), on
127.0.0.1 in a thread of the test process.

moto keeps its objects in memory, so a test cannot stop the server and start it again with
the same contents; it points a table's `aws_endpoint_url` at this proxy instead and cuts the
proxy: `down` makes it read each request and close its connection unanswered (a server that went
away; each attempt is still seen and counted), and `rule`
decides, request by request, whether to forward it, answer it 503 SlowDown as S3 does under
load, drop it unanswered (whole, or after half its body: the server gone in the middle of an
upload), forward it and lose the answer, or hold it until a test lets it go.  Every request is
recorded (`seen`) with what became of it and the server's status, so a test can count the
attempts a retry made.  The Host header is passed on unchanged, so the signatures still hold."""
from __future__ import annotations

import http.client
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

__all__ = ["DROP", "DROP_MID_BODY", "FORWARD", "LOSE_ANSWER", "SLOW_DOWN", "Request", "S3Proxy"]

FORWARD = "forward"              # to the server, its answer back
SLOW_DOWN = "slow-down"          # answered 503 SlowDown, not forwarded
DROP = "drop"                    # the connection closed, nothing forwarded
DROP_MID_BODY = "drop-mid-body"  # half the body read, then the connection closed
LOSE_ANSWER = "lose-answer"      # forwarded (the server acts on it), then the connection closed unanswered

SLOW_DOWN_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
                  b"<Message>Please reduce your request rate.</Message><RequestId>proxy</RequestId></Error>")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "expect",
               "proxy-connection", "content-length"}


@dataclass
class Request:
    """One request as the proxy saw it; `key` is the object key inside the bucket."""

    method: str
    key: str
    query: str
    action: str = FORWARD
    status: int | None = None  # the server's answer, when it was forwarded and answered
    body_length: int = 0
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    def is_put(self, key_part: str) -> bool:
        return self.method == "PUT" and key_part in self.key


def _reset(connection: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0): what a client sees when a server dies."""
    try:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        connection.close()
    except OSError:
        pass


class S3Proxy:
    """`rule(request) -> action` (None: forward everything); `down = True` cuts the proxy."""

    def __init__(self, upstream: str, rule: Callable[[Request], str] | None = None) -> None:
        parsed = urlsplit(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.rule = rule
        self.down = False
        self.seen: list[Request] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        proxy = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
                pass  # a client that went away (a killed writer, a reset): nothing to report

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect

            def log_message(self, *args: object) -> None:
                pass

            def handle_one(self) -> None:
                with proxy._lock:
                    proxy._in_flight += 1
                try:
                    proxy._handle(self)
                finally:
                    with proxy._idle:
                        proxy._in_flight -= 1
                        proxy._idle.notify_all()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = handle_one

        self.server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="s3-proxy", daemon=True)
        self.thread.start()

    # -- what a test uses
    def cut(self) -> None:
        self.down = True

    def restore(self) -> None:
        self.down = False

    def requests(self, method: str | None = None, key_part: str = "", action: str | None = None) -> list[Request]:
        with self._lock:
            seen = list(self.seen)
        return [r for r in seen if (method is None or r.method == method) and key_part in r.key
                and (action is None or r.action == action)]

    def clear(self) -> None:
        with self._lock:
            self.seen.clear()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Until no request is being handled (a forwarded one has reached the server and returned)."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._in_flight == 0, timeout):
                raise TimeoutError("the proxy is still handling a request")

    def wait_until(self, predicate: Callable[[list[Request]], bool], timeout: float = 60.0) -> None:
        """Until `predicate(requests seen)` holds, checked as each request ends (a rule holding a
        request back waits here for another's)."""
        with self._idle:
            if not self._idle.wait_for(lambda: predicate(list(self.seen)), timeout):
                raise TimeoutError("the proxy never saw what was awaited")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> S3Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one request
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        path = unquote(parts.path).lstrip("/")
        key = path.split("/", 1)[1] if "/" in path else ""
        request = Request(handler.command, key, parts.query)
        with self._lock:
            self.seen.append(request)
        try:
            action = self.rule(request) if self.rule is not None else FORWARD
            request.action = DROP if self.down and action == FORWARD else action
            length = int(handler.headers.get("Content-Length") or 0)
            request.body_length = length
            if request.action == DROP_MID_BODY:
                handler.rfile.read(length // 2)
                self._close(handler)
                return
            body = self._body(handler, length)
            if request.action == DROP or (self.down and request.action != LOSE_ANSWER):
                request.action = DROP
                self._close(handler)
                return
            if request.action == SLOW_DOWN:
                self._answer(handler, 503, [("Content-Type", "application/xml")], SLOW_DOWN_BODY)
                return
            status, headers, data = self._forward(handler, body)
            request.status = status
            if request.action == LOSE_ANSWER or self.down:
                request.action = LOSE_ANSWER if request.action == LOSE_ANSWER else DROP
                self._close(handler)
                return
            self._answer(handler, status, headers, data, head=handler.command == "HEAD")
        finally:
            request.done.set()

    @staticmethod
    def _body(handler: BaseHTTPRequestHandler, length: int) -> bytes:
        if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(handler.rfile.read(size))
                handler.rfile.readline()
        return handler.rfile.read(length) if length else b""

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            connection.request(handler.command, handler.path, body=body if body else None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            return response.status, response.getheaders(), data
        finally:
            connection.close()

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes,
                head: bool = False) -> None:
        try:
            handler.send_response(status)
            length = str(len(data))
            for name, value in headers:
                if name.lower() == "content-length" and head:
                    length = value  # a HEAD answer's length is the object's size
                elif name.lower() not in _HOP_BY_HOP and name.lower() not in ("server", "date"):
                    handler.send_header(name, value)
            handler.send_header("Content-Length", length)
            handler.end_headers()
            if not head:
                handler.wfile.write(data)
        except OSError:
            handler.close_connection = True  # the client went away (a killed writer)

    @staticmethod
    def _close(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        _reset(handler.connection)
