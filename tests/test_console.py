"""The web console (issue 11, item 6): its data endpoints over a real store, behind the
authentication dependency they are given, and the page itself in headless Chromium (Debian's
`chromium`, installed by `make system-deps`) driven by Playwright: the page loads, a search
returns hits, the panels fill, and the browser logs no console error.

Set BINDERY_SCREENSHOTS=DIR to keep the screenshots (docs/console-*.png were made that way).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI, Header, HTTPException
from fastapi.testclient import TestClient

from connectors.config import load_config
from connectors.store import DocumentStore
from query_service.auth import hash_key
from query_service.console import console_router
from tests.bindery_fixture import Deployment

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags known to work on these machines (no sandbox as root, no background network calls).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _store_with_history(tmp_path: Path) -> DocumentStore:
    store = DocumentStore(f"sqlite:///{tmp_path / 'store.db'}")
    report = {"passed": True, "reasons": ["recall@10 0.8 -> 0.9"], "metric": "recall@10", "warnings": [],
              "live": {"recall@10": 0.8}, "candidate": {"recall@10": 0.9, "mrr@10": 0.7, "ndcg@10": 0.75},
              "delta": {"recall@10": 0.1}}
    for n in (1, 2):
        gid = store.create_generation(
            name=f"g{n}_x", status="building", stage_versions={"chunk": f"c{n}"}, stage_configs={},
            embedder_id="e", vector_index="v", keyword_index="k", counts={"chunks": 10 * n},
            created_at=time.time(), eval_report=report)
        store.flip_binding(gid, by="test", forced={"by": "ops", "reason": "hotfix 4711"} if n == 2 else None)
    store.add_event("tune", "tune finished", details={"trials": [{"name": "t1", "tune": 0.8, "check": 0.78}]})
    store.add_dead_letter(doc_id="d1", source="docs", external_id="broken.pdf", stage="parse", reason="corrupt",
                          error="truncated file")
    return store


def _require_key(x_api_key: str | None = Header(None)) -> None:
    if x_api_key != "secret":
        raise HTTPException(401, "no valid credential")


def test_data_endpoints_report_the_store_and_sit_behind_the_auth_dependency(tmp_path: Path) -> None:
    store = _store_with_history(tmp_path)
    app = FastAPI()
    app.include_router(console_router(lambda: store, auth=_require_key))
    with TestClient(app) as c:
        assert c.get("/console/").status_code == 200 and "Bindery console" in c.get("/console/").text
        assert c.get("/console/console.js").headers["content-type"].startswith("text/javascript")
        assert c.get("/console/nope.js").status_code == 404
        for path in ("/console/api/generations", "/console/api/evals", "/console/api/dead-letters"):
            assert c.get(path).status_code == 401, path  # the page is public, the data is not
        key = {"X-API-Key": "secret"}
        g = c.get("/console/api/generations", headers=key).json()
        assert g["live"] == 2 and g["previous"] == 1 and g["candidate"] is None
        assert [x["id"] for x in g["generations"]] == [2, 1] and g["generations"][0]["gate"]["passed"] is True
        # a forced promotion says who and why, as `bindery status --json` does (the page showed only who)
        assert (g["generations"][0]["forced_by"], g["generations"][0]["force_reason"]) == ("ops", "hotfix 4711")
        assert g["serving"] is None  # a router without a query service behind it serves nothing
        e = c.get("/console/api/evals", headers=key).json()
        assert [p["generation"] for p in e["generations"]] == [1, 2] and e["generations"][0]["metrics"]["mrr@10"] == 0.7
        assert e["tune_trials"][0]["name"] == "t1"
        d = c.get("/console/api/dead-letters", headers=key).json()
        assert d == [{"doc": "broken.pdf", "source": "docs", "stage": "parse", "reason": "corrupt",
                      "error": "truncated file", "at": d[0]["at"]}]
    store.dispose()


def test_a_generation_judged_only_as_live_is_a_point_of_the_evals_chart(tmp_path: Path) -> None:
    """The first generation, built before the gate had an eval set, was measured only as the live
    side of the next one's gate: it is on the chart from that report (a new-user pass: the chart
    began at generation 2, one point)."""
    from query_service.console import evals

    store = DocumentStore(f"sqlite:///{tmp_path / 'store.db'}")
    first = store.create_generation(name="g1_x", status="building", stage_versions={}, stage_configs={},
                                    embedder_id="e", vector_index="v", keyword_index="k", counts={},
                                    created_at=time.time())
    store.flip_binding(first, by="test")
    second = store.create_generation(
        name="g2_x", status="building", stage_versions={}, stage_configs={}, embedder_id="e", vector_index="v",
        keyword_index="k", counts={}, created_at=time.time(),
        eval_report={"passed": True, "live": {"recall@10": 0.8}, "candidate": {"recall@10": 0.9},
                     "live_generation": first, "judged_at": 1.0, "cases": 263,
                     "eval_set": {"path": "gate.jsonl", "digest": "abc"}})
    points = evals(store)["generations"]
    assert [(p["generation"], p["metrics"]["recall@10"]) for p in points] == [(first, 0.8), (second, 0.9)]
    assert points[0]["measured_as_live_for"] == second and points[0]["passed"] is None
    # each point names the set that measured it, so the page charts one set's points together
    assert [(p["cases"], p["eval_set"]["digest"]) for p in points] == [(263, "abc"), (263, "abc")]
    store.dispose()


def test_operator_views_need_an_operator_credential(tmp_path: Path) -> None:
    """Through the real app: the console's data name documents of every source, so a reader's
    key is refused (403), no key is 401, and only a key holding an operator principal reads them."""
    from query_service.app import create_app

    keys = [{"name": "ops", "hash": hash_key(OPERATOR_KEY), "principals": ["operator"]},
            {"name": "reader", "hash": hash_key("reader-key"), "principals": ["hr-team"]}]
    dep = Deployment(tmp_path, query={"poll_seconds": 0.1, "auth": {"api_keys": keys, "operators": ["operator"]}})
    with TestClient(create_app(load_config(dep.config_path))) as client:
        assert client.get("/console/api/dead-letters").status_code == 401
        assert client.get("/console/api/dead-letters", headers={"X-API-Key": "reader-key"}).status_code == 403
        # nothing synced yet: the service runs and says so instead of failing
        assert client.get("/console/api/dead-letters", headers={"X-API-Key": OPERATOR_KEY}).status_code == 503
        assert client.get("/readyz").status_code == 503
        assert client.get("/console/").status_code == 200  # the page itself holds no data


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


OPERATOR_KEY = "console-operator-key"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, Deployment]]:
    """A synced deployment and its query service on a real port (uvicorn in a thread)."""
    import uvicorn

    from query_service.app import server_config

    keys = [{"name": "ops", "hash": hash_key(OPERATOR_KEY), "principals": ["operator"]}]
    dep = Deployment(tmp_path, query={"poll_seconds": 0.1, "auth": {"api_keys": keys, "operators": ["operator"]}})
    dep.write("broken/truncated.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n")  # a dead letter to show
    # a manual long enough for one unit per section: a hit in one section has neighbours
    dep.write("manuals/arm.md", "# Robot arm manual\n\n" + "".join(
        f"## {part}\n\n" + " ".join(f"Step {i} of the {part.lower()} procedure: {what} and note it in the log."
                                     for i in range(1, 16)) + "\n\n"
        for part, what in (("Unpacking", "lift the arm by the two blue handles"),
                           ("Mounting", "tighten the base bolts to twelve newton metres"),
                           ("Calibration", "run the zeroing routine against the hard stop"),
                           ("Maintenance", "grease the wrist bearings with the supplied tube"),
                           ("Storage", "fold the joints and cover the arm with its dust sheet"))))
    dep.cli("sync")
    port = _free_port()
    # as `bindery serve` runs it: h11 with a header limit, loopback Host names only
    server = uvicorn.Server(server_config(load_config(dep.config_path), "127.0.0.1", port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.started
    yield f"http://127.0.0.1:{port}", dep
    server.should_exit = True
    thread.join(timeout=30)


@pytest.mark.slow
def test_console_in_headless_chromium(service: tuple[str, Deployment], tmp_path: Path) -> None:
    if CHROMIUM is None:
        if os.environ.get("BINDERY_REQUIRE_BROWSER"):
            pytest.fail("chromium is not installed (make system-deps installs it as root)")
        pytest.skip("chromium is not installed (make system-deps installs it as root)")
    from playwright.sync_api import sync_playwright

    base, dep = service
    shots = Path(os.environ.get("BINDERY_SCREENSHOTS") or tmp_path)
    # two `bindery tune` runs over different spaces: the chart shows the latest run's trials only
    store = DocumentStore(load_config(dep.config_path).database_url)
    store.add_event("tune", "tune finished", details={"trials": [{"name": "older-run", "tune": 0.5, "check": 0.4}]})
    time.sleep(0.01)
    store.add_event("tune", "tune finished", details={"best_index": 1, "trials": [
        {"name": "latest-a", "tune": {"recall@10": 0.8}, "check": {"recall@10": 0.7}},
        {"settings": {"query.dense_weight": 2.0}, "tune": {"recall@10": 0.9}, "check": {"recall@10": 0.8}}]})
    store.dispose()
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        # the key an operator typed into the page earlier in this browser session
        page.add_init_script(f"sessionStorage.setItem('bindery-api-key', '{OPERATOR_KEY}')")
        page.goto(f"{base}/console/")
        page.wait_for_selector("#generations-table tbody tr td")
        page.fill("#query", "How long does the XR-4471 battery last?")
        page.press("#query", "Enter")  # the query box is a textarea (pasted e-mails keep their lines): Enter searches
        page.wait_for_selector("#hits li", timeout=60_000)
        hits = page.locator("#hits li")
        assert hits.count() >= 1
        first = hits.nth(0).inner_text()
        assert "robots/xr4471.md" in first and "dense #" in first  # provenance and per-retriever ranks
        assert "hits from generation 1" in page.inner_text("#search-status")
        assert "candidates" in page.inner_text("#timings")
        page.wait_for_selector("#dlq-table tbody tr td")
        assert "broken/truncated.pdf" in page.inner_text("#dlq-table")
        rows = page.locator("#generations-table tbody tr")
        assert rows.count() == 1 and "live" in rows.nth(0).inner_text()
        assert page.locator("#eval-chart svg, #eval-chart p").count() == 1
        page.wait_for_selector("#tune-chart svg")
        assert "latest-a" in page.inner_html("#tune-chart") and "older-run" not in page.inner_html("#tune-chart")
        # numbered as `bindery tune` prints them, the best marked, each with its settings
        trials = page.inner_text("#tune-trials")
        assert "1 (best)" in page.inner_html("#tune-chart") and '1 (best): {"query.dense_weight":2}' in trials
        # neighbour expansion: the hit in Calibration shows the end of Mounting and the start of Maintenance
        page.fill("#query", "run the zeroing routine against the hard stop")
        page.fill("#neighbours", "1")
        page.click("#search-form button")
        page.wait_for_selector("#hits li .hit-context.after", timeout=60_000)
        top = page.locator("#hits li").nth(0)
        assert "manuals/arm.md" in top.inner_text() and "Calibration" in top.inner_text()
        assert "mounting procedure" in top.locator(".hit-context.before").inner_text()
        assert "maintenance procedure" in top.locator(".hit-context.after").inner_text()
        page.screenshot(path=str(shots / "console-search.png"), full_page=True)
        page.fill("#neighbours", "0")
        # a pasted reply: the playground says whose message its attribution line asked for
        page.fill("#query", "On Tue, 3 Sep 2024 at 07:11, Hendrik de Vries wrote:\nHow long does the battery last?")
        page.click("#search-form button")
        # a selector, not wait_for_function: the console's CSP forbids the eval that would need
        page.wait_for_selector("#timings:has-text('attribution line')", timeout=60_000)
        assert "attribution line: hendrik vries, 2024-09-03 07:11" in page.inner_text("#timings")
        # the API docs render from local files alone (ReDoc's bundle fetched its menu logo from a CDN)
        for docs, rendered in (("/docs", ".swagger-ui .info .title"), ("/redoc", "img[alt='redocly logo']")):
            page.goto(f"{base}{docs}")
            page.wait_for_selector(rendered, state="attached", timeout=60_000)
            page.wait_for_load_state("networkidle")
            assert "Bindery query service" in page.content(), docs
        browser.close()
    assert errors == []




@pytest.mark.slow
def test_the_served_app_bounds_headers_checks_the_host_and_sets_security_headers(
        service: tuple[str, Deployment]) -> None:
    """Found by an attacker's audit: httptools took a 300 MB header, any Host was answered on
    loopback (DNS rebinding), and the console had no CSP. `bindery serve`'s server as built
    (`server_config`), on a real port."""
    import http.client
    from urllib.parse import urlsplit

    base, _ = service
    port = urlsplit(base).port
    assert port is not None

    def get(path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    status, headers, _ = get("/console/", {})
    assert status == 200 and "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert get("/healthz", {"Host": f"localhost:{port}"})[0] == 200
    status, headers, body = get("/healthz", {"Host": "evil.example"})  # a rebound name is not answered
    assert status == 400 and headers["x-frame-options"] == "DENY"
    assert json.loads(body) == {"error": "bad request", "detail": "Host 'evil.example' is not answered "
                                "here; list it in query.allowed_hosts"}
    for size in (200_000, 90_000):  # refused whether h11 sees the head arrive or the app gets it whole
        try:
            big = get("/healthz", {"X-Pad": "a" * size})[0]
        except (ConnectionError, http.client.HTTPException):
            big = 0  # the server may close the connection instead of answering
        assert big in (0, 400, 431), (size, big)
    assert get("/healthz", {})[0] == 200  # and it still serves


def test_tune_trials_name_the_metric_their_run_chose_the_best_by(tmp_path: Path) -> None:
    """Found by an operator's pass: with gate.metric mrr@10 the page charted recall@10 (1.000 for
    every trial) and marked a "best" nothing on it explained. Each trial now carries its run's
    metric and tie-breaker, which the page charts and lists."""
    from query_service.console import evals

    store = DocumentStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.add_event("tune", "tune finished", details={
        "metric": "mrr@10", "secondary_metric": "recall@10", "best_index": 1, "trials": [
            {"settings": {"query.sparse_weight": 1.0}, "tune": {"recall@10": 1.0, "mrr@10": 0.80}},
            {"settings": {"query.sparse_weight": 1.5}, "tune": {"recall@10": 1.0, "mrr@10": 0.83}}]})
    trials = evals(store)["tune_trials"]
    assert [(t["index"], t["best"], t["metric"], t["secondary_metric"]) for t in trials] == [
        (0, False, "mrr@10", "recall@10"), (1, True, "mrr@10", "recall@10")]
    store.dispose()


@pytest.mark.slow
def test_console_keeps_its_width_shows_the_tune_metric_and_takes_a_key_with_enter(
        service: tuple[str, Deployment]) -> None:
    """Found by an operator's pass in headless Chromium: a 400-letter word in a document and a
    180-letter file name in the dead letters made the page 4,700 px wide; the tune chart showed
    recall@10 for a run that chose on mrr@10; the trace's timings read `sparse_ms 1.0 ms`; and
    Enter in the API-key box submitted its form, which the CSP blocked with a console error while
    the search that had failed for want of a key stayed failed."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make system-deps installs it as root)")
    from playwright.sync_api import sync_playwright

    base, dep = service
    dep.write("long/" + "Q" * 180 + ".pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n")  # a dead letter
    dep.write("long/word.md", f"# {'H' * 250}\n\nLONGWORDMARKER text {'W' * 400}\n")
    dep.cli("sync")
    store = DocumentStore(load_config(dep.config_path).database_url)
    store.add_event("tune", "tune finished", details={
        "metric": "mrr@10", "secondary_metric": "recall@10", "best_index": 1, "trials": [
            {"settings": {"query.sparse_weight": 1.0}, "tune": {"recall@10": 1.0, "mrr@10": 0.801},
             "check": {"recall@10": 1.0, "mrr@10": 0.963}},
            {"settings": {"query.sparse_weight": 1.5}, "tune": {"recall@10": 1.0, "mrr@10": 0.834},
             "check": {"recall@10": 1.0, "mrr@10": 0.907}}]})
    store.dispose()
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        # no key yet: the panels and the search answer 401, which the browser logs as such
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "401" not in m.text else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.goto(f"{base}/console/?q=LONGWORDMARKER")
        page.wait_for_selector("#search-status.error")
        page.fill("#api-key", OPERATOR_KEY)
        page.press("#api-key", "Enter")
        page.wait_for_selector("#hits li", timeout=60_000)  # the failed search is redone with the key
        page.wait_for_selector("#dlq-table tbody tr td:has-text('QQQQ')")
        page.wait_for_selector("#tune-chart svg")
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1], width
        assert "tune half mrr@10" in page.inner_text("#tune-chart")
        assert "mrr@10 tune 0.834, check 0.907; recall@10 tune 1.000" in page.inner_text("#tune-trials")
        timings = page.inner_text("#timings")
        assert "total " in timings and "_ms" not in timings
        browser.close()
    assert errors == []
