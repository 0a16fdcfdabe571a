"""ASGI middleware of the query service: a request-body size limit enforced before anything
parses the body, a Host check, security headers, and Prometheus metrics for every request.

`BodyLimit` refuses a body larger than `max_bytes` with 413: at once when ``Content-Length``
says so, else (chunked uploads) as soon as the bytes received pass the limit, so an oversized
body is never buffered whole. `RecordRequests` counts requests by route and status, observes latency,
into a `ServiceMetrics` registry, which `/metrics` renders.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["BASE_HEADERS", "BodyLimit", "HeadAsGet", "HostCheck", "RecordRequests", "SecurityHeaders", "ServiceMetrics"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _reply(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# The console is one page with its own script and stylesheet: nothing inline, nothing from
# elsewhere, never framed. (/docs and /redoc start Swagger UI with an inline script: no CSP there.)
CONSOLE_CSP = ("default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
               "form-action 'none'")


# Every answer, errors included (the catch-all 500 handler adds them itself: Starlette answers
# it outside all middleware): no MIME sniffing, no framing, no referrer.
BASE_HEADERS = {"x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "no-referrer"}


_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]@/\s]*)(?::[0-9]*)?")

# the names a service bound to loopback answers, whatever address it was bound by
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _host_answered(host: str, allowed: list[str]) -> bool:
    """Whether a Host (or Origin) value, a name or a bracketed IPv6 literal and at most a port,
    is one of `allowed` (lower-case names; ``*.example.org`` any subdomain, ``*`` any host)."""
    m = _HOST.fullmatch(host)
    if m is None:
        return False
    name = m.group(1).lower()
    return any(a == "*" or name == a or (a.startswith("*.") and name.endswith(a[1:])) for a in allowed)


async def _refuse_websocket(receive: Receive, send: Send) -> None:
    await receive()  # the handshake's websocket.connect; closing before accepting is a 403
    await send({"type": "websocket.close", "code": 1008})


# the scope key where HeadAsGet keeps the method a request was made with
_ASKED_METHOD = "bindery.asked_method"
# the methods a metric names; any other token is a valid method too, so each would be a new series
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class HostCheck:
    """Answer only requests whose Host header names this service (DNS rebinding: a web page in
    the operator's browser must not reach a loopback service under a name the page chose).
    Entries are host names without a port; ``*.example.org`` matches any subdomain, ``*`` any
    host. Others get 400 in the service's one error shape, saying which setting to change."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str], *, setting: str = "query.allowed_hosts"):
        self.app = app
        self.allowed = [h.lower() for h in allowed_hosts]
        self.setting = setting  # what an operator changes to answer another name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [v for k, v in scope.get("headers") or [] if k == b"host"]
        if scope["type"] == "websocket":  # the Dagster UI's live GraphQL: the same names, or closed
            if len(hosts) == 1 and _host_answered(hosts[0].decode("latin-1"), self.allowed):
                await self.app(scope, receive, send)
            else:
                await _refuse_websocket(receive, send)
            return
        if len(hosts) > 1:  # RFC 9112 3.2: a 400; proxies and this check could each read another one
            await _reply(send, 400, {"error": "bad request", "detail": "more than one Host header"})
            return
        host = hosts[0].decode("latin-1") if hosts else ""
        if _host_answered(host, self.allowed):
            await self.app(scope, receive, send)
            return
        shown = host[:100] or "(none)"
        await _reply(send, 400, {"error": "bad request",
                                 "detail": f"Host {shown!r} is not answered here; list it in {self.setting}"})


class CrossSiteCheck:
    """Refuse requests another site's page makes (cross-site request forgery, cross-site
    websockets): the Dagster UI has no sign-in, and its GraphQL runs a mutation from a form POST
    (`text/plain`: no CORS preflight) and even from a GET, so any page open in the operator's
    browser could launch runs through a UI on loopback under its real name, which the Host check
    answers (a review found it). A browser says where a request comes from: `Sec-Fetch-Site`
    (cross-site, same-site) and `Origin`, which must name the Host asked or a name listed.
    Clients that are not browsers send neither and pass."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str] | None = None):
        self.app = app
        self.listed = [h.lower() for h in allowed_hosts or []]

    def _cross_site(self, headers: list[tuple[bytes, bytes]]) -> str | None:
        seen = {k: v.decode("latin-1") for k, v in headers if k in (b"sec-fetch-site", b"origin", b"host")}
        if seen.get(b"sec-fetch-site", "").lower() in ("cross-site", "same-site"):
            return f"a page of another site sent it (Sec-Fetch-Site: {seen[b'sec-fetch-site'][:40]})"
        origin = seen.get(b"origin")
        if origin is None:
            return None
        netloc = origin.split("://", 1)[-1].rstrip("/")
        if netloc.lower() == seen.get(b"host", "").lower() or _host_answered(netloc, self.listed):
            return None
        return f"a page of {origin[:100]!r} sent it"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or (why := self._cross_site(scope.get("headers") or [])) is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await _refuse_websocket(receive, send)
            return
        await _reply(send, 403, {"error": "forbidden", "detail": f"cross-site request refused: {why}"})


class SecurityHeaders:
    """Headers every answer carries (no MIME sniffing, no framing, no referrer) and the
    console's Content-Security-Policy: a document's text shown there can never run as script,
    even if a future change inserted it as markup."""

    def __init__(self, app: ASGIApp, console_prefix: str = "/console"):
        self.app = app
        self.console_prefix = console_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = [(k.encode(), v.encode()) for k, v in BASE_HEADERS.items()]
        if str(scope.get("path", "")).startswith(self.console_prefix):
            extra.append((b"content-security-policy", CONSOLE_CSP.encode()))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """HEAD answered as GET without the body, on every GET route: FastAPI registers GET only,
    so a load balancer's or an uptime checker's HEAD /healthz (or /docs) got 405 (an operator
    pass). The request takes the GET route's whole path, authentication included."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        # the metrics still count it as the HEAD it was (RecordRequests reads the mark)
        await self.app({**scope, "method": "GET", _ASKED_METHOD: "HEAD"}, receive, headers_only)


def loopback_hosts(host: str) -> list[str] | None:
    """The Host header values a service bound to a loopback address answers: its own names
    (the address it is bound to among them; an IPv6 one bracketed, as a Host header writes it),
    never a name a web page chose (DNS rebinding). None (any host) for another address."""
    if not _binds_loopback(host):
        return None
    own = f"[{host}]" if ":" in host else host.lower()
    return list(dict.fromkeys([*LOOPBACK_NAMES, own]))


def _loopback_address(text: str) -> bool:
    a = ipaddress.ip_address(text.split("%", 1)[0])
    return a.is_loopback or (isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None
                             and a.ipv4_mapped.is_loopback)


def _binds_loopback(host: str) -> bool:
    """Whether binding `host` listens on loopback only: an address (IPv4-mapped too), a short form
    uvicorn binds ("127.1"), or a name every address of which is loopback (LOCALHOST, this
    machine's name in /etc/hosts). Such names answered any Host before (a review found it)."""
    if host.lower() == "localhost":
        return True
    try:
        return _loopback_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host)).is_loopback
    except OSError:
        pass
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    try:
        return bool(found) and all(_loopback_address(a) for a in found)
    except ValueError:
        return False


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413, before they are read or parsed, and
    request heads over `max_header_bytes` with 431. (h11 bounds a head only while it is still
    incomplete: one that arrives in a single read, 90 KB say, reached the app whole.)"""

    def __init__(self, app: ASGIApp, max_bytes: int, max_header_bytes: int | None = None):
        self.app = app
        self.max_bytes = max_bytes
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = sum(len(k) + len(v) + 4 for k, v in scope.get("headers") or [])  # "name: value\r\n"
        if self.max_header_bytes is not None and head > self.max_header_bytes:
            await _reply(send, 431, {"error": "request header fields too large",
                                     "detail": f"the request headers are over the limit of {self.max_header_bytes} "
                                               "bytes (query.max_header_bytes)"})
            return
        too_large = {"error": "request too large",
                     "detail": f"the request body is over the limit of {self.max_bytes} bytes"}
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_bytes:
                    await _reply(send, 413, too_large)
                    return
            except ValueError:
                await _reply(send, 400, {"error": "bad request", "detail": "invalid Content-Length"})
                return
        seen = 0
        started = refused = False

        async def limited_receive() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # answer now and tell the app the client went away: it stops reading and
                    # whatever it would still send is dropped (it must not parse a partial body)
                    refused = True
                    if not started:
                        await _reply(send, 413, too_large)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, limited_receive, guarded_send)


class ServiceMetrics:
    """Prometheus metrics of one app, in their own registry (several apps never collide)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("bindery_http_requests", "HTTP requests by route and status",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("bindery_http_request_duration_seconds", "HTTP request latency by route",
                                 ["method", "route"], registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
        self.errors = Counter("bindery_search_errors", "Refused or failed searches by reason", ["reason"],
                              registry=self.registry)
        self.generation = Gauge("bindery_generation_served", "Id of the generation the service answers from",
                                registry=self.registry)
        self.binding_version = Gauge("bindery_binding_version_served", "Binding version being served",
                                     registry=self.registry)
        self.hits = Histogram("bindery_search_hits", "Hits returned per search", registry=self.registry,
                              buckets=(0, 1, 3, 5, 10, 20, 50, 100, 200))


def _unrouted(scope: Scope) -> str:
    """The route of a request answered before routing (the body limit's 413, the host check's
    400): the app's route with exactly this path, when it has one without parameters; else
    "unmatched"."""
    path = scope.get("path", "")
    for route in getattr(scope.get("app"), "routes", ()):
        template = getattr(route, "path", None)
        if template == path and "{" not in template:
            return str(template)
    return "unmatched"


class RecordRequests:
    """Counts every HTTP request by route template and status, and observes its latency."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        t0 = time.perf_counter()
        root = scope.get("root_path", "")

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            # the route template, never the raw path, and a known method or "other": fuzzed or
            # scanned requests must not create series. A mounted app (the API docs' files) sets
            # no route, only a longer root path: its mount point names it.
            mount = scope.get("root_path", "")
            name = (getattr(scope.get("route"), "path", None)
                    or (f"{mount[len(root):]}/{{path}}" if mount != root and mount.startswith(root) else None)
                    or _unrouted(scope))
            asked = scope.get(_ASKED_METHOD, scope.get("method"))
            method = asked if asked in _METHODS else "other"
            self.metrics.requests.labels(method, name, str(status)).inc()
            if status == 413 and name == "/search":  # refused before routing: still a refused search
                self.metrics.errors.labels("too-large").inc()
            self.metrics.latency.labels(method, name).observe(time.perf_counter() - t0)
