"""`bindery ui` stopped the way a service manager stops it (SIGTERM; SIGHUP when its terminal
closes) takes `dagster dev` and
everything it started down with it: an orphaned daemon would go on launching queued runs and
the port would stay taken."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.bindery_fixture import Deployment
from tests.moto_server import free_port

pytestmark = pytest.mark.slow


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:  # a local test server
            return bool(r.status == 200)
    except OSError:
        return False


def _status_as(port: int, host: str, method: str = "GET", path: str = "/server_info", body: str | None = None,
               **headers: str) -> int:
    """The UI's status for a request naming `host` in its Host header (as a DNS-rebinding page would)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Host": host, "Content-Type": "application/json",
                                                       **{k.replace("_", "-"): v for k, v in headers.items()}})
        return conn.getresponse().status
    finally:
        conn.close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_stops_dagster_dev_and_its_children(tmp_path: Path, sig: signal.Signals) -> None:
    dep = Deployment(tmp_path)
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    log = tmp_path / "ui.log"
    proc = subprocess.Popen([sys.executable, "-m", "orchestration.cli", "--config", str(dep.config_path),
                             "ui", "--port", str(port), "--allow-host", "ui.example.org"],
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:
        deadline = time.monotonic() + 120
        while not _answers(f"http://127.0.0.1:{port}/server_info"):
            assert proc.poll() is None, "bindery ui ended before the UI answered"
            assert time.monotonic() < deadline, "the UI did not answer within two minutes"
            time.sleep(0.5)
        # a name a web page chose is refused (DNS rebinding), the UI's own and --allow-host's answered
        query = '{"query": "{ version }"}'
        assert _status_as(port, f"attacker.example:{port}") == 400
        assert _status_as(port, f"attacker.example:{port}", "POST", "/graphql", query) == 400
        assert _status_as(port, f"localhost:{port}", "POST", "/graphql", query) == 200
        assert _status_as(port, "ui.example.org") == 200
        # another site's page, under the UI's real name: a form POST or a GET carrying a mutation
        own = f"127.0.0.1:{port}"
        assert _status_as(port, own, "POST", "/graphql", query, Origin="http://evil.example") == 403
        assert _status_as(port, own, "GET", "/graphql?query=mutation%7Bx%7D", Sec_Fetch_Site="cross-site") == 403
        assert _status_as(port, own, "POST", "/graphql", query, Origin=f"http://{own}",
                          Sec_Fetch_Site="same-origin") == 200  # the UI's own page
        assert _status_as(port, own, "POST", "/graphql", query, Origin="https://ui.example.org") == 200  # a proxy's
        # the configured sources' partitions are there for a UI-only operator's first `sync`
        import dagster as dg

        with dg.DagsterInstance.from_config(str(dep.data / "dagster_home")) as inst:
            assert inst.get_dynamic_partitions("sources") == ["docs"]
        proc.send_signal(sig)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while _group_alive(proc.pid) and time.monotonic() < deadline:  # its children, reaped by now
            time.sleep(0.2)
        assert not _group_alive(proc.pid), "dagster processes outlived `bindery ui`"
        assert not _answers(f"http://127.0.0.1:{port}/server_info")
        # no advice to run `dg dev`, a tool Bindery does not use (a new-user review's find)
        assert "SupersessionWarning" not in log.read_text(errors="replace")
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
