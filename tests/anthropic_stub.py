"""A local stand-in for the Anthropic Messages API, served over real HTTP for SDK tests.

It follows the public API contract closely enough for the official ``anthropic`` SDK to talk to
it unchanged (``base_url=stub.base_url``):

- ``POST /v1/messages`` only; other paths answer 404 with the API's error envelope
  ``{"type": "error", "error": {"type": ..., "message": ...}}``.
- Requires the ``anthropic-version`` header and the key, as ``Authorization: Bearer <key>``
  (what SDK 2.x sends) or ``x-api-key: <key>`` (older SDKs, curl examples); else 400 / 401.
- Validates ``model``, ``max_tokens`` and ``messages``; replies with a Message object whose text
  is derived from the request ("This chunk is from <doc words> and covers <chunk words>."),
  cut to ``max_tokens`` with ``stop_reason: "max_tokens"`` when it does not fit.
- Simulates prompt caching: the prompt prefix up to the last ``cache_control`` block is a cache
  key; the first request with it reports ``cache_creation_input_tokens``, later ones report
  ``cache_read_input_tokens``, and ``input_tokens`` counts only the uncached rest, as the API
  does. Tokens are approximated as ceil(chars / 4).
- ``fail(status, times, match=...)`` makes the next (matching) requests fail (529
  ``overloaded_error``, 500 ``api_error``, 429 ``rate_limit_error`` ...) with
  ``retry-after-ms: 1`` so SDK retries are fast.
- Records every request (headers and JSON body) in ``requests``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["AnthropicStub", "RecordedRequest"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class RecordedRequest:
    """One request as the stub received it (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompt as a flat list of content blocks: system first, then message contents."""
    out: list[dict[str, Any]] = []
    system = body.get("system")
    if isinstance(system, str):
        out.append({"type": "text", "text": system})
    elif isinstance(system, list):
        out.extend(system)
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append({"type": "text", "text": content, "_role": m.get("role")})
        else:
            out.extend({**b, "_role": m.get("role")} for b in content)
    return out


def _words(text: str, n: int) -> str:
    plain = re.sub(r"</?[A-Za-z_][^>]*>", " ", text)
    return " ".join(plain.split()[:n])


class AnthropicStub:
    """Start with ``with AnthropicStub() as stub:`` or ``start()`` / ``stop()``."""

    def __init__(self, api_key: str = "test-key", *, min_cache_tokens: int = 0) -> None:
        self.api_key = api_key
        self.min_cache_tokens = min_cache_tokens
        self.requests: list[RecordedRequest] = []
        self._cache: set[str] = set()
        self._failures: list[tuple[int, str, str]] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ control

    @property
    def base_url(self) -> str:
        assert self._server is not None, "stub not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail(self, status: int, times: int = 1, message: str = "simulated failure", *, match: str = "") -> None:
        """Answer the next `times` requests with `status` (after auth and validation).

        With `match`, only requests whose raw body contains that string fail (and count).
        """
        with self._lock:
            self._failures.extend([(status, message, match)] * times)

    def clear_failures(self) -> None:
        """Forget every failure still queued by `fail` (the service has recovered)."""
        with self._lock:
            self._failures.clear()

    @property
    def message_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/messages"]

    def start(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ behaviour

    def handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Return (status, JSON body, extra headers) for one request."""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body))
        if path != "/v1/messages":
            return _error(404, f"Not found: {path}")
        if "anthropic-version" not in headers:
            return _error(400, "anthropic-version: header is required")
        auth = headers.get("authorization", "")
        key = auth[7:] if auth.lower().startswith("bearer ") else headers.get("x-api-key")
        if key != self.api_key:
            return _error(401, "invalid x-api-key")
        problem = _validate(body)
        if problem:
            return _error(400, problem)
        assert body is not None
        text = raw.decode("utf-8", "replace")
        with self._lock:
            i = next((i for i, f in enumerate(self._failures) if f[2] in text), None)
            failure = self._failures.pop(i) if i is not None else None
        if failure:
            status, message, _ = failure
            return _error(status, message, {"retry-after-ms": "1", "x-should-retry": "true"})
        return 200, self._reply(body), {}

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        blocks = _blocks(body)
        last_cached = max((i for i, b in enumerate(blocks) if b.get("cache_control")), default=-1)
        cached_text = "".join(b.get("text", "") for b in blocks[: last_cached + 1])
        rest_text = "".join(b.get("text", "") for b in blocks[last_cached + 1 :])
        creation = read = 0
        if last_cached >= 0 and _tokens(cached_text) >= self.min_cache_tokens:
            key = hashlib.sha256(
                json.dumps([body["model"], blocks[: last_cached + 1]], sort_keys=True).encode()
            ).hexdigest()
            with self._lock:
                hit = key in self._cache
                self._cache.add(key)
            if hit:
                read = _tokens(cached_text)
            else:
                creation = _tokens(cached_text)
        else:
            rest_text = cached_text + rest_text

        doc_text = blocks[last_cached].get("text", "") if last_cached >= 0 else ""
        last = blocks[-1].get("text", "") if blocks else ""
        m = re.search(r"<chunk>(.*?)</chunk>", last, re.DOTALL)
        chunk_text = m.group(1) if m else last
        text = f"This chunk is from {_words(doc_text, 6)} and covers {_words(chunk_text, 12)}."
        stop_reason = "end_turn"
        words = text.split()
        while _tokens(" ".join(words)) > body["max_tokens"] and words:
            words.pop()
            stop_reason = "max_tokens"
        text = " ".join(words)
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return {
            "id": f"msg_stub_{digest[:24]}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": _tokens(rest_text),
                "output_tokens": _tokens(text),
                "cache_creation_input_tokens": creation,
                "cache_read_input_tokens": read,
            },
        }


def _validate(body: dict[str, Any] | None) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    mt = body.get("max_tokens")
    if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
        return "max_tokens: Field required (integer >= 1)"
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "messages: at least one message is required"
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: must be 'user' or 'assistant'"
        content = m.get("content")
        if isinstance(content, list):
            for j, b in enumerate(content):
                if not isinstance(b, dict) or "type" not in b:
                    return f"messages.{i}.content.{j}.type: Field required"
                cc = b.get("cache_control")
                if cc is not None and cc.get("type") != "ephemeral":
                    return f"messages.{i}.content.{j}.cache_control.type: must be 'ephemeral'"
        elif not isinstance(content, str):
            return f"messages.{i}.content: must be a string or a list of content blocks"
    return None


def _error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
    }
    return status, body, headers or {}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: AnthropicStub


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

    def do_POST(self) -> None:  # http.server's naming
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        status, body, extra = self.server.owner.handle(path, headers, raw)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_stub_{len(self.server.owner.requests):06d}")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # silence the access log
        return
