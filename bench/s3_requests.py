"""A counting relay in front of an S3 server: every request and the bytes answered, by who asked, and,
when asked, faults of the kinds real object stores make.

The object-storage benchmark points Spark's and the catalog's S3 settings at this relay instead of the
server, so every request of the run passes through it and is counted as it happens.  Requests are told
apart by their ``User-Agent``: zskip reaches files through pyarrow, whose S3 client is the AWS SDK for
C++ (``aws-sdk-cpp``); Spark, Hadoop's S3A and Iceberg's S3FileIO use the AWS SDK for Java.  Requests
and answers pass byte for byte (signatures stay valid); the relay adds one loopback hop to each.

Faults (``Faults``): a share of requests is answered ``503 SlowDown`` (throttling) or ``500
InternalError`` without reaching the server, a share reaches the server but its connection is dropped
before the answer (cut), a share has its answer cut off after the headers and half the body
(truncated), and a share waits before it is forwarded.  Which request meets which
fault is drawn from one seeded generator; faults are switched on and off while the relay runs
(``RelayCounts.set_faults``) and counted beside the requests.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

__all__ = ["Faults", "RelayCounts", "RequestCounts", "counting_relay"]

ZSKIP = "zskip (pyarrow)"
JVM = "Spark and Iceberg (JVM)"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection"}


def client_of(user_agent: str) -> str:
    return ZSKIP if "aws-sdk-cpp" in user_agent else JVM


@dataclass
class RequestCounts:
    """Requests (by client and method) and bytes answered (by client), counted since the relay started."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, client: str, method: str, answered: int) -> None:
        with self.lock:
            self.requests[(client, method)] += 1
            self.bytes[client] += answered

    def snapshot(self) -> dict[str, int]:
        """``{"<client> <METHOD>": requests, "<client> bytes": bytes}`` as of now."""
        with self.lock:
            out = {f"{client} {method}": n for (client, method), n in self.requests.items()}
            out |= {f"{client} bytes": n for client, n in self.bytes.items()}
            return out

    @staticmethod
    def since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        return {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}


@dataclass(frozen=True)
class Faults:
    """Shares of requests that meet each fault (0 to 1, drawn independently of the kind of request)."""

    throttled: float = 0.0  # 503 SlowDown
    failed: float = 0.0  # 500 InternalError
    cut: float = 0.0  # done by the server, the connection then closed before the answer
    delayed: float = 0.0  # forwarded after ``delay`` seconds
    # the answer's headers and half its body, then the connection closed: pyarrow's and zskip's reads
    # survive it; Iceberg's S3FileIO does not retry it (httpcore's ConnectionClosedException, "Premature
    # end of Content-Length delimited message body"), and on one machine Spark does not rerun the task
    truncated: float = 0.0
    delay: float = 0.1
    seed: int = 0
    # the clients (``ZSKIP``, ``JVM``) whose requests meet the shares above (every client's when empty)
    clients: tuple[str, ...] = ()
    # clients every request of which is answered 500 InternalError: a store that keeps failing for one
    failing: tuple[str, ...] = ()

    @classmethod
    def typical(cls, seed: int = 0) -> Faults:
        """A misbehaving store: 8% throttled, 3% server errors, 2% cut, 5% delayed."""
        return cls(throttled=0.08, failed=0.03, cut=0.02, delayed=0.05, seed=seed)

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> Faults:
        given = json.loads(text)
        return cls(**given | {key: tuple(given.get(key, ())) for key in ("clients", "failing")})


_ERRORS = {
    503: ("SlowDown", "Please reduce your request rate."),
    500: ("InternalError", "We encountered an internal error. Please try again."),
}


class _FaultDraws:
    """Which fault each request meets, from one seeded generator shared by the relay's threads."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._random = random.Random(faults.seed)
        self._lock = threading.Lock()

    def draw(self, client: str) -> str | None:
        f = self.faults
        if client in f.failing:
            return "failed"
        if f.clients and client not in f.clients:
            return None
        with self._lock:
            r = self._random.random()
        shares = (("throttled", f.throttled), ("failed", f.failed), ("cut", f.cut), ("truncated", f.truncated),
                  ("delayed", f.delayed))  # fmt: skip
        for kind, share in shares:
            if r < share:
                return kind
            r -= share
        return None


class _Relay(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str, counts: RequestCounts, faults: Faults | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.counts = counts
        self.faults = _FaultDraws(faults or Faults())


class _Upstream(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect
    server: _Relay

    def setup(self) -> None:
        super().setup()
        # headers and body leave in separate writes: without this, Nagle's algorithm and the peer's
        # delayed acknowledgement hold each answer for tens of milliseconds
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per request would drown the benchmark's output

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self, "_upstream", None)
        if connection is None:
            connection = self._upstream = _Upstream(*self.server.upstream, timeout=120)
        return connection

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return b""
        raw = bytearray()  # the chunked framing forwarded as it came (the signature may cover it)
        while True:
            line = self.rfile.readline()
            raw += line
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, up to the empty line
                    trailer = self.rfile.readline()
                    raw += trailer
                    if trailer in (b"\r\n", b"\n", b""):
                        return bytes(raw)
            raw += self.rfile.read(size + 2)

    def _send_counts(self) -> None:
        data = json.dumps(self.server.counts.snapshot()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _set_faults(self) -> None:
        self.server.faults = _FaultDraws(Faults.from_json(self._body().decode()))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_error(self, status: int) -> None:
        code, message = _ERRORS[status]
        data = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>relay</RequestId></Error>"
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _forward(self) -> None:
        if self.path == COUNTS_PATH:
            self._send_counts()
            return
        if self.path == FAULTS_PATH:
            self._set_faults()
            return
        body = self._body()
        client = client_of(self.headers.get("User-Agent", ""))
        fault = self.server.faults.draw(client)
        if fault is not None:
            self.server.counts.add(client, f"fault {fault}", 0)
        if fault in ("throttled", "failed"):
            self._send_error(503 if fault == "throttled" else 500)
            return
        if fault == "delayed":
            time.sleep(self.server.faults.faults.delay)
        for attempt in (1, 2):
            connection = self._connection()
            try:
                connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    connection.putheader(name, value)
                connection.endheaders(body or None)
                answer = connection.getresponse()
                break
            except (OSError, http.client.HTTPException):
                connection.close()
                self._upstream = None
                if attempt == 2:
                    raise
                # the server closed an idle kept-alive connection: once more on a new one
        payload_length = answer.getheader("Content-Length")
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP_BY_HOP and not (name.lower() == "content-length" and payload_length is None):
                self.send_header(name, value)
        # counted before the client has the answer: a snapshot taken once the client is done sees it
        if fault in ("cut", "truncated"):
            self._cut(answer, has_length=payload_length is not None, body=fault == "truncated")
            return
        if payload_length is None and self.command != "HEAD" and answer.status not in (204, 304):
            data = answer.read()  # a chunked answer (listings): sent with its length
            self.server.counts.add(client, self.command, len(data))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            size = int(payload_length) if payload_length is not None and self.command != "HEAD" else 0
            self.server.counts.add(client, self.command, size)
            self.end_headers()
            while chunk := answer.read(1 << 20):
                self.wfile.write(chunk)
        answer.close()

    def _cut(self, answer: http.client.HTTPResponse, *, has_length: bool, body: bool) -> None:
        """The connection closed before the answer, or (``body``) after its headers and half its body."""
        data = b"" if self.command == "HEAD" else answer.read()
        answer.close()
        self.close_connection = True
        if body and data:  # an answer without a body is dropped before its status line
            if not has_length:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
        else:
            self._headers_buffer = []
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


COUNTS_PATH = "/__relay_counts"  # not an S3 path: bucket names hold no underscore
FAULTS_PATH = "/__relay_faults"


class RelayCounts:
    """The counts of a relay running in its own process, asked for over HTTP."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def snapshot(self) -> dict[str, int]:
        with urllib.request.urlopen(self.endpoint + COUNTS_PATH, timeout=30) as answer:
            return {key: int(value) for key, value in json.loads(answer.read()).items()}

    def set_faults(self, faults: Faults) -> None:
        """Faults from now on (``Faults()``: none)."""
        request = urllib.request.Request(self.endpoint + FAULTS_PATH, data=faults.to_json().encode(), method="PUT")
        with urllib.request.urlopen(request, timeout=30):
            pass


@contextmanager
def counting_relay(upstream: str, faults: Faults | None = None) -> Iterator[tuple[str, RelayCounts]]:
    """A relay in a process of its own (its threads must not take the benchmark's interpreter lock
    from the planner it measures), on a free loopback port, forwarding to ``upstream``
    (``http://host:port``), with ``faults`` from the start; yields its endpoint and its counts."""
    with tempfile.TemporaryDirectory(prefix="zskip-relay-") as folder:
        port_file = Path(folder) / "port"
        process = subprocess.Popen([sys.executable, __file__, upstream, str(port_file), (faults or Faults()).to_json()])
        try:
            deadline = time.monotonic() + 30
            while not (port_file.exists() and port_file.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the counting relay did not start")
                time.sleep(0.05)
            yield (
                f"http://127.0.0.1:{port_file.read_text().strip()}",
                RelayCounts(f"http://127.0.0.1:{port_file.read_text().strip()}"),
            )
        finally:
            process.terminate()
            process.wait(timeout=20)


def serve(upstream: str, port_file: Path, faults: Faults | None = None) -> None:
    relay = _Relay(upstream, RequestCounts(), faults)
    written = port_file.with_suffix(".tmp")
    written.write_text(str(relay.server_address[1]))
    written.rename(port_file)  # whole, at once
    relay.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]), Faults.from_json(sys.argv[3]) if len(sys.argv) > 3 else None)
