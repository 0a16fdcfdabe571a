"""Fuzzing the real running query service with schemathesis: uvicorn on a free port, serving a real
generation built from a tmp data dir, every operation of its OpenAPI schema called with generated
valid and invalid requests, with and without a credential. No request may get a 5xx.

`FUZZ_EXAMPLES` per operation (environment variable `BINDERY_FUZZ_EXAMPLES`) bounds the run: small in `make
test`, larger in `make reliability`, which also prints the counts kept in `FUZZ`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

from query_service.auth import hash_key
from tests.bindery_fixture import Deployment

pytestmark = pytest.mark.slow

KEY = "bk_fuzzing-caller"
FUZZ: Counter[str] = Counter()
FUZZ_EXAMPLES = int(os.environ.get("BINDERY_FUZZ_EXAMPLES", "25"))
FUZZ_REPORT = os.environ.get("BINDERY_FUZZ_REPORT")  # read at import: the tests run with a cleaned environment
REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    keys = [{"name": "fuzz", "hash": hash_key(KEY), "principals": ["hr-team"]}]
    dep = Deployment(tmp_path_factory.mktemp("fuzz"), query={"poll_seconds": 0.5, "auth": {"api_keys": keys}})
    (dep.root / "people" / ".bindery-acl").write_text("hr-team\n")
    dep.cli("sync")
    port = _free_port()
    env = {**os.environ, "BINDERY_CONFIG": str(dep.config_path), "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    log = open(dep.data / "uvicorn.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "query_service.app:app_from_env",
                             "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (dep.data / "uvicorn.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the query service did not become ready"
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_no_request_gets_a_5xx(live_service: str) -> None:
    """Every operation, valid and invalid generated requests (schemathesis strategies run by
    Hypothesis; its pytest plugin does not load under this pytest), with and without a key."""
    schema = schemathesis.openapi.from_url(f"{live_service}/openapi.json")
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"an operation the schema cannot describe: {result.err()}"
        operations.append(result.ok())
    assert {op.path for op in operations} >= {"/search", "/healthz", "/readyz", "/binding"}
    try:
        _fuzz(live_service, operations)
    finally:
        if FUZZ_REPORT:  # make reliability reads the counts from here
            Path(FUZZ_REPORT).write_text(json.dumps(dict(FUZZ)))


def _fuzz(live_service: str, operations: list[schemathesis.APIOperation[Any, Any, Any, Any]]) -> None:
    for op in operations:
        cases = op.as_strategy(GenerationMode.POSITIVE) | op.as_strategy(GenerationMode.NEGATIVE)

        @given(case=cases)
        @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        def call(case: schemathesis.Case[Any]) -> None:
            for headers in ({"X-API-Key": KEY}, {}):
                response = case.call(base_url=live_service, headers=headers, timeout=60)
                FUZZ["requests"] += 1
                if response.status_code >= 500:
                    FUZZ["5xx"] += 1
                assert response.status_code < 500, (
                    f"{case.method} {case.path} -> {response.status_code}: {response.text[:500]}")

        call()
