"""A real `dagster-webserver` for tests that drive what the UI does through its GraphQL API, and
stopping Dagster processes the way Ctrl-C does."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def graphql(port: int, query: str) -> dict[str, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{e}: {e.read()[:2000]!r}") from None
    assert "errors" not in body, body
    return cast(dict[str, Any], body["data"])


def wait_http(port: int, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"dagster-webserver exited {proc.returncode}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("dagster-webserver did not answer in time")


@contextmanager
def webserver(env: dict[str, str], log: Path) -> Iterator[int]:
    """`dagster-webserver` on workspace.yaml with `env` (DAGSTER_HOME, BINDERY_CONFIG), its
    output in `log` (what a failed request left); yields its port."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dagster_webserver", "-w", str(REPO / "workspace.yaml"), "-h", "127.0.0.1",
             "-p", str(port)], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_http(port, proc)
        yield port
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a Dagster process as Ctrl-C does (it shuts its children down), killing it after 30 s."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
