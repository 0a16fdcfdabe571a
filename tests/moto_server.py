"""A real moto S3 server over HTTP for tests (not moto's in-process mock).

Tests then exercise the same code path as production: boto3 -> HTTP -> an S3 API. Register the
fixture in `tests/conftest.py`::

    import pytest
    from tests.moto_server import moto_endpoint as _moto_endpoint

    moto_endpoint = pytest.fixture(scope="session")(_moto_endpoint)

`moto_endpoint` yields the endpoint URL (`http://127.0.0.1:<port>`); while it is active the
environment holds test credentials (`AWS_ACCESS_KEY_ID=testing`, ...) so any boto3 client
built without explicit credentials works. `run_moto_server()` is the same as a context manager,
for use outside pytest (benchmarks, scripts).
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["TEST_AWS_ENV", "Rewrite", "free_port", "moto_endpoint", "rewriting_proxy", "run_moto_server"]

TEST_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    # An HTTP(S)_PROXY in the environment must not capture requests to the local server.
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
# Keep a developer's real AWS settings from leaking into tests.
_CLEARED = ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL")


def free_port() -> int:
    """A TCP port nothing listens on right now (also handy for 'endpoint down' tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _moto_binary() -> Path:
    exe = Path(sys.executable).parent / "moto_server"
    if not exe.exists():
        raise RuntimeError(f"moto_server not found at {exe}; install moto[server] in this venv")
    return exe


@contextmanager
def run_moto_server(timeout: float = 15.0) -> Iterator[str]:
    """Start `moto_server` on a free port, wait until it answers HTTP, yield its URL, stop it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in (*TEST_AWS_ENV, *_CLEARED)}
    os.environ.update(TEST_AWS_ENV)
    for k in _CLEARED:
        os.environ.pop(k, None)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [str(_moto_binary()), "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ},
        )
        try:
            _wait_ready(proc, url, timeout, log)
            yield url
        finally:
            # moto keeps no state worth a graceful stop, and its SIGTERM handler takes ~0.5 s.
            proc.kill()
            proc.wait()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _wait_ready(proc: subprocess.Popen[bytes], url: str, timeout: float, log: IO[bytes]) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            out = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"moto_server exited with {proc.returncode}:\n{out}")
        try:
            with opener.open(url + "/moto-api/", timeout=1):
                return
        except urllib.error.HTTPError:
            return  # it answered HTTP: good enough
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"moto_server did not answer at {url} within {timeout:.0f} s")


def moto_endpoint() -> Iterator[str]:
    """Pytest fixture body (register with `pytest.fixture(scope="session")`, see above)."""
    with run_moto_server() as url:
        yield url


# (method, path with query, upstream status, upstream body) -> the (status, body) to answer with
Rewrite = Callable[[str, str, int, bytes], tuple[int, bytes]]


@contextmanager
def rewriting_proxy(upstream: str, rewrite: Rewrite) -> Iterator[str]:
    """An HTTP proxy in front of `upstream` (a moto server) that passes each request on and lets
    `rewrite` change the reply: what a corporate proxy, a captive portal or an S3-compatible
    store with other habits puts between a source and its bucket. Yields the proxy's URL."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            pass

        def _forward(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            req = urllib.request.Request(upstream + self.path, data=self.rfile.read(n) if n else None,
                                         method=self.command)
            for k, v in self.headers.items():
                if k.lower() not in ("content-length", "connection"):
                    req.add_header(k, v)
            try:
                with opener.open(req, timeout=10) as resp:
                    status, headers, body = resp.status, resp.headers, resp.read()
            except urllib.error.HTTPError as e:
                status, headers, body = e.code, e.headers, e.read()
            new_status, new_body = rewrite(self.command, self.path, status, body)
            self.send_response(new_status)
            for k, v in headers.items():
                if k.lower() not in ("content-length", "connection", "transfer-encoding", "server", "date"):
                    self.send_header(k, v)
            length = headers.get("Content-Length", "0") if self.command == "HEAD" else str(len(new_body))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(new_body)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
