"""The query service as the ecosystem expects it: API docs served from local assets (no CDN, so
they load offline), typed request and response models in the OpenAPI schema, security schemes,
and Prometheus metrics. Runs the real app over an empty store (no model is loaded)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from connectors.config import config_from_dict
from connectors.store import DocumentStore
from query_service.app import create_app
from query_service.auth import hash_key

KEY = "bk_openapi-tests"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"),
                            "query": {"auth": {"api_keys": [{"hash": hash_key(KEY), "principals": ["a"]}]}}})
    DocumentStore(cfg.database_url).dispose()
    with TestClient(create_app(cfg)) as c:
        yield c


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_api_docs_load_every_asset_locally(client: TestClient, page: str) -> None:
    html = client.get(page)
    assert html.status_code == 200
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text)
    scripts = [a for a in assets if a.endswith((".js", ".css"))]
    assert scripts, html.text
    for url in assets:
        assert url.startswith("/"), f"{page} loads {url} from elsewhere: the page would be blank offline"
        served = client.get(url)
        assert served.status_code == 200, url
        # a bundle that fetches from a CDN itself renders offline but logs a failed request (ReDoc's logo)
        assert b"https://cdn" not in served.content, url
    assert "cdn" not in html.text.lower()
    # the files under the docs' mount are counted as one route, not as unmatched requests
    metrics = client.get("/metrics").text
    assert 'route="unmatched"' not in metrics, metrics
    if page == "/docs":
        assert 'route="/static-offline-docs/{path}",status="200"' in metrics


def test_openapi_schema_is_typed(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    search = spec["paths"]["/search"]["post"]
    ok = search["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/SearchResponse"}
    hit = schemas["HitModel"]["properties"]
    assert {"chunk_id", "doc", "source", "score", "text", "heading_path", "page", "uri", "ranks"} <= set(hit)
    assert schemas["SearchResponse"]["properties"]["hits"]["items"] == {"$ref": "#/components/schemas/HitModel"}
    for code in ("400", "401", "413", "422", "503"):
        assert search["responses"][code]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorResponse"}
    assert {"HTTPBearer", "APIKeyHeader"} <= set(spec["components"]["securitySchemes"])
    assert spec["paths"]["/readyz"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Ready"}
    assert "/metrics" not in spec["paths"]


def test_metrics_count_requests_by_route_and_status(client: TestClient) -> None:
    client.get("/healthz")
    client.post("/search", json={"query": "x"})  # 401
    client.post("/search", json={"query": "x"}, headers={"X-API-Key": KEY})  # 503: nothing indexed yet
    client.get("/no/such/path/123")
    big = client.post("/search", content=b"{" + b" " * 2_000_000 + b"}",  # refused before routing
                      headers={"X-API-Key": KEY, "content-type": "application/json"})
    assert big.status_code == 413
    for i in range(5):  # invented methods: one "other" series, not one each
        client.request(f"M{i}XYZ", "/healthz")
    text = client.get("/metrics")
    assert text.headers["content-type"].startswith("text/plain")
    body = text.text
    assert 'bindery_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in body
    assert 'bindery_http_requests_total{method="POST",route="/search",status="401"} 1.0' in body
    assert 'bindery_http_requests_total{method="POST",route="/search",status="503"} 1.0' in body
    assert 'route="unmatched",status="404"' in body and "/no/such/path" not in body
    assert 'method="other",route="/healthz",status="405"} 5.0' in body and "XYZ" not in body
    assert 'bindery_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/healthz"}' in body
    assert 'bindery_search_errors_total{reason="unauthorized"} 1.0' in body
    assert 'bindery_search_errors_total{reason="no-binding"} 1.0' in body
    assert 'bindery_http_requests_total{method="POST",route="/search",status="413"} 1.0' in body
    assert 'bindery_search_errors_total{reason="too-large"} 1.0' in body
    assert "bindery_generation_served" in body


def test_binding_before_any_sync_is_a_503_and_leaves_no_database(tmp_path: Path) -> None:
    """A data dir never synced has no tables: /binding says why (503) like /readyz, not a 500, and
    serving it leaves no empty database file behind."""
    data = tmp_path / "data"
    cfg = config_from_dict({"data_dir": str(data), "query": {"auth": {"mode": "trusted-principal"}}})
    with TestClient(create_app(cfg)) as c:
        assert c.get("/readyz").status_code == 503
        r = c.get("/binding")
        assert r.status_code == 503 and "bindery sync" in r.json()["detail"]
    assert not (data / "bindery.db").exists()


@pytest.mark.parametrize(("fusion", "named", "not_named"), [("zscore", "z-score", "reciprocal rank"),
                                                            ("rrf", "reciprocal rank fusion", "z-score")])
def test_the_api_description_names_the_configured_fusion(tmp_path: Path, fusion: str, named: str,
                                                         not_named: str) -> None:
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "query": {"fusion": fusion}})
    with TestClient(create_app(cfg)) as c:
        description = c.get("/openapi.json").json()["info"]["description"]
    assert named in description and not_named not in description


def test_a_failure_of_the_service_is_one_json_line_without_its_cause(tmp_path: Path) -> None:
    """A store that cannot be read made /binding and /search a plain-text 500, and /readyz said
    'ready' while showing the database error's text (SQL, and for PostgreSQL host and user) to
    anyone. Now: the one error shape, the cause in the log only, and /readyz not ready."""
    import time

    import sqlalchemy.exc

    from query_service.retrieval import LiveRetriever

    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "query": {"poll_seconds": 0.05}})
    DocumentStore(cfg.database_url).dispose()
    live = LiveRetriever(cfg)

    def broken(*_a: object, **_k: object) -> None:
        raise sqlalchemy.exc.DatabaseError("SELECT secret FROM bindings", {}, Exception("host=db.internal user=ops"))

    try:
        with TestClient(create_app(cfg, live), raise_server_exceptions=False) as c:
            live.store.get_binding = broken  # type: ignore[method-assign]
            live.store.initialised = lambda: True  # type: ignore[method-assign]
            r = c.get("/binding")
            assert r.status_code == 500 and r.json()["error"] == "internal server error"
            assert r.headers["x-content-type-options"] == "nosniff"  # answered outside the middleware
            assert "SELECT" not in r.text and "db.internal" not in r.text
            deadline = time.monotonic() + 10
            while live.store_error is None and time.monotonic() < deadline:
                time.sleep(0.05)
            ready = c.get("/readyz")
            assert ready.status_code == 503 and ready.json()["ready"] is False and ready.json()["error"]
            assert "SELECT" not in ready.text and "db.internal" not in ready.text
    finally:
        live.close()


def test_the_host_check_answers_only_the_names_listed(tmp_path: Path) -> None:
    from query_service.middleware import loopback_hosts

    cfg = config_from_dict({"data_dir": str(tmp_path / "data")})
    DocumentStore(cfg.database_url).dispose()
    with TestClient(create_app(cfg, allowed_hosts=["search.example.org", "*.corp.example", "[::1]"])) as c:
        def status(host: str) -> int:
            return c.get("/healthz", headers={"Host": host}).status_code

        assert status("search.example.org:8080") == 200 and status("SEARCH.example.org") == 200
        assert status("a.b.corp.example") == 200 and status("[::1]:8000") == 200
        assert status("evil.example") == 400 and status("corp.example.evil") == 400
        # only a port may follow the name (a proxy that forwards such a header verbatim)
        for odd in ("[::1]evil.example", "search.example.org:80@evil.example", "search.example.org:x", ""):
            assert status(odd) == 400, odd
        bad = c.get("/healthz", headers={"Host": "evil.example"})
        assert bad.json()["detail"].startswith("Host 'evil.example' is not answered")
        assert bad.headers["x-frame-options"] == "DENY"
    # the address bound is answered too (127.0.0.2, ::1); any host on a non-loopback address
    assert "127.0.0.2" in (loopback_hosts("127.0.0.2") or []) and "127.1" in (loopback_hosts("127.1") or [])
    assert "[::1]" in (loopback_hosts("::1") or []) and loopback_hosts("0.0.0.0") is None
    # other spellings of loopback bind it too, and answer only its names (they answered any host)
    for spelled in ("LOCALHOST", "::ffff:127.0.0.1", "127.0.0.1.nip.invalid"):
        hosts = loopback_hosts(spelled)
        assert (hosts is not None) == (spelled != "127.0.0.1.nip.invalid"), spelled  # the last resolves to nothing
        assert hosts is None or "evil.example" not in hosts


def test_the_host_and_cross_site_checks_close_a_foreign_websocket() -> None:
    """The Dagster UI serves live GraphQL over a websocket (`bindery ui` puts the same check in
    front of it): a handshake naming another host is closed before the app sees it."""
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.testclient import WebSocketDenialResponse
    from starlette.websockets import WebSocket

    from query_service.middleware import HostCheck

    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text("hello")
        await ws.close()

    app = HostCheck(Starlette(routes=[WebSocketRoute("/ws", echo)]), ["localhost"], setting="--allow-host")
    c = TestClient(app)
    with c.websocket_connect("/ws", headers={"Host": "localhost:3000"}) as ws:
        assert ws.receive_text() == "hello"
    with pytest.raises((WebSocketDenialResponse, WebSocketDisconnect)):
        with c.websocket_connect("/ws", headers={"Host": "attacker.example:3000"}) as ws:
            ws.receive_text()
    # and another site's page, under the real name (the UI's live GraphQL: cross-site websockets)
    from query_service.middleware import CrossSiteCheck

    c = TestClient(CrossSiteCheck(app, ["localhost"]))
    with c.websocket_connect("/ws", headers={"Host": "localhost:3000", "Origin": "http://localhost:3000"}) as ws:
        assert ws.receive_text() == "hello"
    for foreign in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        with pytest.raises((WebSocketDenialResponse, WebSocketDisconnect)):
            with c.websocket_connect("/ws", headers={"Host": "localhost:3000", **foreign}) as ws:
                ws.receive_text()


def test_a_request_with_two_host_headers_is_refused(tmp_path: Path) -> None:
    """HTTP/1.0 lets a client send Host twice (h11 refuses it only over 1.1). A proxy in front
    may route by the first while the check read the last: such a request is a 400 (RFC 9112
    3.2), whichever order the allowed and the foreign name come in."""
    import socket
    import threading
    import time

    import uvicorn

    cfg = config_from_dict({"data_dir": str(tmp_path / "data")})
    DocumentStore(cfg.database_url).dispose()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(cfg, allowed_hosts=["localhost"]), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)

        def status(*hosts: str) -> int:
            head = "".join(f"Host: {h}\r\n" for h in hosts)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(f"GET /healthz HTTP/1.0\r\n{head}\r\n".encode())
                reply = b""
                while chunk := conn.recv(4096):
                    reply += chunk
            return int(reply.split(b" ", 2)[1])

        assert status("localhost") == 200 and status("evil.example") == 400
        assert status("evil.example", "localhost") == 400 and status("localhost", "evil.example") == 400
        assert status("localhost", "localhost") == 400
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_an_allowed_host_with_a_port_is_a_config_error() -> None:
    from connectors.errors import ConfigError

    with pytest.raises(ConfigError, match="without a port"):
        config_from_dict({"query": {"allowed_hosts": ["localhost:8000"]}})
    for never_matches in ("*example.org", "search.*", "a b"):
        with pytest.raises(ConfigError, match="'\\*\\.' and a domain"):
            config_from_dict({"query": {"allowed_hosts": [never_matches]}})
    assert config_from_dict({"query": {"allowed_hosts": ["[::1]", "*.example.org"]}}).query.allowed_hosts


def test_request_headers_over_the_limit_are_a_431(client: TestClient) -> None:
    """h11 bounds a request head only while it is incomplete: a 90 KB header that arrived in one
    read reached the app. The app refuses heads over `query.max_header_bytes` itself, in the one
    JSON error shape."""
    r = client.get("/healthz", headers={"X-Pad": "a" * 40_000})
    assert r.status_code == 431
    assert r.json()["error"] == "request header fields too large" and "query.max_header_bytes" in r.json()["detail"]
    assert client.get("/healthz", headers={"X-Pad": "a" * 20_000}).status_code == 200


def test_head_is_answered_as_get_without_a_body(tmp_path: Path) -> None:
    """A load balancer's HEAD /healthz, an uptime checker's HEAD /docs: 405 before (FastAPI
    registers GET only; an operator pass). The same status and headers as GET, no body."""
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "query": {"auth": {"mode": "trusted-principal"}}})
    with TestClient(create_app(cfg)) as c:
        for path in ("/healthz", "/docs", "/readyz"):
            head, get = c.head(path), c.get(path)
            assert head.status_code == get.status_code != 405, path
            assert head.content == b"" and head.headers["content-length"] == get.headers["content-length"], path
        assert c.head("/search").status_code == 405  # POST only: a HEAD is no search
        # ... and the metrics count them as the HEADs they were, not as GETs
        body = c.get("/metrics").text
        assert 'bindery_http_requests_total{method="HEAD",route="/healthz",status="200"} 1.0' in body
        assert 'bindery_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in body
