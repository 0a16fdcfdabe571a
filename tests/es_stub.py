"""A small in-process HTTP stub of the Elasticsearch REST API, for adapter tests.

It follows the documented API closely enough for ``connectors.indexes.elasticsearch_index`` and
the official Python client: every response carries ``X-Elastic-Product: Elasticsearch`` (the
client refuses a server without it) and the compatibility media type the client asked for
(``application/vnd.elasticsearch+json; compatible-with=9``); a request for another major is
refused with 400 ``media_type_header_exception``, as a real cluster does. It implements:

* ``HEAD``/``PUT``/``DELETE /{index}`` (index names validated, ``resource_already_exists``)
* ``POST [/{index}]/_bulk`` (NDJSON ``index``/``create``/``delete``; ``dynamic: strict`` mapping
  rejects unknown fields per item, like a real cluster)
* ``POST [/{index}]/_refresh``: near-real-time visibility is emulated; written documents are
  searchable only after a refresh
* ``POST /{index}/_search``: ``bool`` (must/should/filter/must_not/minimum_should_match),
  ``match`` (``operator`` or/and), ``term``, ``terms``, ``constant_score``, ``dis_max``, ``match_all``,
  ``ids``;
  ``size``, ``from``, ``sort``, ``search_after``, ``_source``
* ``POST /{index}/_delete_by_query``, ``GET|POST /{index}/_count``
* ``PUT /{index}/_mapping`` (adds fields; refuses to change one), ``GET /{index}/_mapping``
* ``POST /_aliases`` (all actions validated first, then applied together), ``GET /_alias/{name}``

Scoring is NOT Elasticsearch's: ``match`` scores the number of query words found in the field
(lowercased, split on non-alphanumerics, no stemming); ``term``/``terms`` score their boost. It
exists to check the contract the adapter sends, not relevance. Every request is recorded in
:attr:`ESStub.requests` (method, path, query params, headers, parsed body).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

COMPAT_MAJOR = 9
# the standard tokenizer's words, roughly: runs of letters and digits in any script, each CJK
# ideograph and hiragana a word of its own (Unicode word boundaries)
_CJK = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD_RE = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
_INDEX_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.\-]*")


class StubError(Exception):
    """An Elasticsearch-style error response."""

    def __init__(self, status: int, type_: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.type, self.reason = status, type_, reason

    def body(self) -> dict[str, Any]:
        err = {"type": self.type, "reason": self.reason}
        return {"error": {"root_cause": [err], **err}, "status": self.status}


@dataclass
class Recorded:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: Any  # parsed JSON, a list of parsed NDJSON lines for _bulk, or None


@dataclass
class StubIndex:
    mappings: dict[str, Any]
    settings: dict[str, Any]
    live: dict[str, dict[str, Any]] = field(default_factory=dict)  # latest writes
    searchable: dict[str, dict[str, Any]] = field(default_factory=dict)  # as of last refresh

    def refresh(self) -> None:
        self.searchable = {k: dict(v) for k, v in self.live.items()}

    def normalized(self, fld: str) -> bool:
        return "normalizer" in self.mappings.get("properties", {}).get(fld, {})


class ESStub:
    """The stub server. Use as a context manager; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.indices: dict[str, StubIndex] = {}
        self.aliases: dict[str, set[str]] = {}  # alias -> indices
        self.requests: list[Recorded] = []
        # a shard that fails every search: real Elasticsearch then answers with the other shards'
        # hits and `_shards.failed` (a partial result), or, with allow_partial_search_results=false,
        # a 503 search_phase_execution_exception
        self.failed_shard = False
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ESStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self, method: str | None = None, endswith: str = "") -> list[Recorded]:
        """Recorded requests filtered by method and path suffix."""
        return [
            r
            for r in self.requests
            if (method is None or r.method == method) and r.path.endswith(endswith)
        ]

    # -- routing -------------------------------------------------------------------------

    def handle(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.strip("/").split("/") if p]
        with self._lock:
            if method == "GET" and not parts:
                return 200, {"name": "stub", "version": {"number": f"{COMPAT_MAJOR}.0.0"}}
            if parts == ["_aliases"] and method == "POST":
                return 200, self._update_aliases(body or {})
            if parts[0] == "_alias" or (len(parts) > 1 and parts[1] == "_alias"):
                return self._get_alias(method, parts[-1])
            if parts[-1] == "_bulk":
                return 200, self._bulk(parts[0] if len(parts) == 2 else None, body or [])
            if parts[-1] == "_refresh":
                targets = self._resolve(parts[0]) if len(parts) == 2 else list(self.indices)
                for name in targets:
                    self.indices[name].refresh()
                return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
            if len(parts) == 1:
                return self._index_op(method, parts[0], params, body)
            if parts[-1] == "_mapping" and method in ("PUT", "POST"):
                return 200, self._put_mapping(parts[0], body or {})
            if parts[-1] == "_mapping" and method == "GET":
                return 200, {name: {"mappings": self.indices[name].mappings} for name in self._resolve(parts[0])}
            if parts[-1] == "_search":
                if self.failed_shard and params.get("allow_partial_search_results") == "false":
                    raise StubError(503, "search_phase_execution_exception", "Partial shards failure")
                found = self._search(parts[0], body or {})
                if self.failed_shard:
                    found["_shards"] = {"total": 2, "successful": 1, "skipped": 0, "failed": 1, "failures": [
                        {"shard": 1, "index": parts[0], "reason": {"type": "node_disconnected_exception"}}]}
                return 200, found
            if parts[-1] == "_count":
                docs = self._searchable(parts[0])
                query = (body or {}).get("query", {"match_all": {}})
                return 200, {"count": sum(1 for d in docs if self._score(d, query) is not None)}
            if parts[-1] == "_delete_by_query":
                return 200, self._delete_by_query(parts[0], params, body or {})
        raise StubError(400, "illegal_argument_exception", f"stub: no route {method} {path}")

    def _index_op(
        self, method: str, name: str, params: dict[str, str], body: Any
    ) -> tuple[int, Any]:
        if method == "HEAD":
            return (200 if name in self.indices or name in self.aliases else 404), None
        if method == "PUT":
            if not _INDEX_NAME_RE.fullmatch(name):
                raise StubError(400, "invalid_index_name_exception", f"Invalid index [{name}]")
            if name in self.indices or name in self.aliases:
                raise StubError(
                    400, "resource_already_exists_exception", f"index [{name}] already exists"
                )
            body = body or {}
            self.indices[name] = StubIndex(body.get("mappings", {}), body.get("settings", {}))
            return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}
        if method == "DELETE":
            if name in self.aliases:
                reason = f"The provided expression [{name}] matches an alias, specify the "
                reason += "corresponding concrete indices instead."
                raise StubError(400, "illegal_argument_exception", reason)
            if name not in self.indices:
                if params.get("ignore_unavailable") == "true":
                    return 200, {"acknowledged": True}
                raise _missing(name)
            del self.indices[name]
            for members in self.aliases.values():
                members.discard(name)
            return 200, {"acknowledged": True}
        raise StubError(405, "method_not_allowed", f"{method} /{name}")

    def _put_mapping(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """``PUT /{index}/_mapping``: new fields are added; changing an existing one is refused."""
        props = self.indices[self._write_target_name(name)].mappings.setdefault("properties", {})
        for fld, spec in (body.get("properties") or {}).items():
            if fld in props and props[fld] != spec:
                raise StubError(400, "illegal_argument_exception", f"mapper [{fld}] cannot be changed")
            props[fld] = spec
        return {"acknowledged": True}

    def _write_target_name(self, name: str) -> str:
        targets = self._resolve(name)
        if len(targets) != 1:
            raise StubError(400, "illegal_argument_exception", f"no write index for [{name}]")
        return targets[0]

    def _resolve(self, name: str) -> list[str]:
        if name in self.indices:
            return [name]
        if self.aliases.get(name):
            return sorted(self.aliases[name])
        raise _missing(name)

    def _write_target(self, name: str) -> StubIndex:
        targets = self._resolve(name)
        if len(targets) != 1:
            raise StubError(400, "illegal_argument_exception", f"no write index for [{name}]")
        return self.indices[targets[0]]

    def _searchable(self, name: str) -> list[dict[str, Any]]:
        return [
            {"_index": idx, "_id": doc_id, "_source": src}
            for idx in self._resolve(name)
            for doc_id, src in self.indices[idx].searchable.items()
        ]

    # -- aliases -------------------------------------------------------------------------

    def _update_aliases(self, body: dict[str, Any]) -> dict[str, Any]:
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions:
            raise StubError(400, "action_request_validation_exception", "no actions")
        aliases = {k: set(v) for k, v in self.aliases.items()}  # apply to a copy: atomic
        for action in actions:
            ((kind, spec),) = action.items()
            names = spec.get("indices") or [spec.get("index")]
            alias_names = spec.get("aliases") or [spec.get("alias")]
            for idx in names:
                if idx not in self.indices:
                    raise _missing(idx)
                for alias in alias_names:
                    if kind == "add":
                        aliases.setdefault(alias, set()).add(idx)
                    elif kind == "remove":
                        if idx not in aliases.get(alias, set()):
                            raise StubError(404, "aliases_not_found_exception", f"[{alias}]")
                        aliases[alias].discard(idx)
                    else:
                        raise StubError(400, "parsing_exception", f"unknown action [{kind}]")
        self.aliases = {k: v for k, v in aliases.items() if v}
        return {"acknowledged": True, "errors": False}

    def _get_alias(self, method: str, alias: str) -> tuple[int, Any]:
        members = self.aliases.get(alias)
        if not members:
            if method == "HEAD":
                return 404, None
            return 404, {"error": f"alias [{alias}] missing", "status": 404}
        if method == "HEAD":
            return 200, None
        return 200, {idx: {"aliases": {alias: {}}} for idx in sorted(members)}

    # -- documents -----------------------------------------------------------------------

    def _bulk(self, default_index: str | None, lines: list[Any]) -> dict[str, Any]:
        items, errors, i = [], False, 0
        while i < len(lines):
            ((op, meta),) = lines[i].items()
            name = meta.get("_index", default_index)
            index = self._write_target(name)
            doc_id = meta.get("_id")
            if op == "delete":
                found = index.live.pop(doc_id, None) is not None
                items.append({op: {"_index": name, "_id": doc_id, "status": 200 if found else 404}})
                i += 1
                continue
            source = lines[i + 1]
            i += 2
            unknown = set(source) - set(index.mappings.get("properties", {}))
            if index.mappings.get("dynamic") == "strict" and unknown:
                errors = True
                err = {"type": "strict_dynamic_mapping_exception", "reason": str(sorted(unknown))}
                items.append({op: {"_index": name, "_id": doc_id, "status": 400, "error": err}})
                continue
            existed = doc_id in index.live
            if op == "create" and existed:
                errors = True
                err = {"type": "version_conflict_engine_exception", "reason": "exists"}
                items.append({op: {"_index": name, "_id": doc_id, "status": 409, "error": err}})
                continue
            index.live[doc_id] = source
            status, result = (200, "updated") if existed else (201, "created")
            items.append({op: {"_index": name, "_id": doc_id, "status": status, "result": result}})
        return {"took": 1, "errors": errors, "items": items}

    def _delete_by_query(
        self, name: str, params: dict[str, str], body: dict[str, Any]
    ) -> dict[str, Any]:
        query = body.get("query")
        if query is None:
            raise StubError(400, "action_request_validation_exception", "query is missing")
        deleted = 0
        for doc in self._searchable(name):  # like ES: only what the last refresh made visible
            if self._score(doc, query) is not None:
                if self.indices[doc["_index"]].live.pop(doc["_id"], None) is not None:
                    deleted += 1
        if params.get("refresh") == "true":
            for idx in self._resolve(name):
                self.indices[idx].refresh()
        return {"took": 1, "deleted": deleted, "version_conflicts": 0, "failures": []}

    # -- search --------------------------------------------------------------------------

    def _search(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        query = body.get("query", {"match_all": {}})
        hits = []
        for doc in self._searchable(name):
            score = self._score(doc, query)
            if score is not None:
                hits.append({**doc, "_score": score})
        sort = body.get("sort")
        if sort:
            keys = [next(iter(s)) if isinstance(s, dict) else s for s in sort]
            for hit in hits:
                hit["sort"] = [_first(hit["_source"].get(k)) for k in keys]
            hits.sort(key=lambda h: h["sort"])
            after = body.get("search_after")
            if after is not None:
                hits = [h for h in hits if h["sort"] > list(after)]
        else:
            hits.sort(key=lambda h: (-h["_score"], h["_id"]))
        start = int(body.get("from", 0))
        hits = hits[start : start + int(body.get("size", 10))]
        if body.get("_source") is False:
            for hit in hits:
                del hit["_source"]
        return {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"max_score": max((h["_score"] for h in hits), default=None), "hits": hits},
        }

    def _score(self, doc: dict[str, Any], query: dict[str, Any]) -> float | None:
        """The stub score of ``doc`` for ``query``, or None when it does not match."""
        ((kind, spec),) = query.items()
        src = doc["_source"]
        index = self.indices[doc["_index"]]
        if kind == "match_all":
            return 1.0
        if kind == "ids":
            return 1.0 if doc["_id"] in spec["values"] else None
        if kind == "match":
            ((fld, arg),) = spec.items()
            text = arg["query"] if isinstance(arg, dict) else arg
            every = isinstance(arg, dict) and str(arg.get("operator", "or")).lower() == "and"
            words = set(_WORD_RE.findall(str(text).lower()))
            have = set(_WORD_RE.findall(" ".join(map(str, _values(src.get(fld)))).lower()))
            overlap = len(words & have)
            return float(overlap) if overlap and (not every or words <= have) else None
        if kind == "match_phrase":  # the words in order, each within `slop` extra positions of the last
            ((fld, arg),) = spec.items()
            phrase = _WORD_RE.findall(str(arg["query"] if isinstance(arg, dict) else arg).lower())
            slop = int(arg.get("slop", 0)) if isinstance(arg, dict) else 0
            tokens = _WORD_RE.findall(" ".join(map(str, _values(src.get(fld)))).lower())
            starts = [i for i, w in enumerate(tokens) if phrase and w == phrase[0]]
            for start in starts:
                at = start
                for want in phrase[1:]:
                    nxt = next((j for j in range(at + 1, min(len(tokens), at + 2 + slop)) if tokens[j] == want), None)
                    if nxt is None:
                        break
                    at = nxt
                else:
                    return float(arg.get("boost", 1.0)) if isinstance(arg, dict) else 1.0
            return None
        if kind == "constant_score":
            return float(spec.get("boost", 1.0)) if self._score(doc, spec["filter"]) is not None else None
        if kind in ("term", "terms"):
            boost = float(spec.get("boost", 1.0))
            ((fld, arg),) = ((k, v) for k, v in spec.items() if k != "boost")
            if kind == "term":
                wanted = [arg["value"] if isinstance(arg, dict) else arg]
                boost = float(arg.get("boost", 1.0)) if isinstance(arg, dict) else boost
            else:
                wanted = list(arg)
            norm = str.lower if index.normalized(fld) else str
            have = {norm(str(v)) for v in _values(src.get(fld))}
            return boost if {norm(str(w)) for w in wanted} & have else None
        if kind == "bool":
            return self._bool(doc, spec)
        if kind == "dis_max":  # the best clause, plus tie_breaker x the others (as Elasticsearch)
            scores = [x for x in (self._score(doc, q) for q in spec["queries"]) if x is not None]
            if not scores:
                return None
            best = max(scores)
            return (best + float(spec.get("tie_breaker", 0.0)) * (sum(scores) - best)) * float(spec.get("boost", 1.0))
        raise StubError(400, "parsing_exception", f"unknown query [{kind}]")

    def _bool(self, doc: dict[str, Any], spec: dict[str, Any]) -> float | None:
        def clauses(key: str) -> list[dict[str, Any]]:
            value = spec.get(key, [])
            return value if isinstance(value, list) else [value]

        score = 0.0
        for q in clauses("must"):
            s = self._score(doc, q)
            if s is None:
                return None
            score += s
        for q in clauses("filter"):
            if self._score(doc, q) is None:
                return None
        for q in clauses("must_not"):
            if self._score(doc, q) is not None:
                return None
        should = clauses("should")
        matched = [s for s in (self._score(doc, q) for q in should) if s is not None]
        default_msm = 0 if clauses("must") or clauses("filter") else (1 if should else 0)
        if len(matched) < int(spec.get("minimum_should_match", default_msm)):
            return None
        return (score + sum(matched)) * float(spec.get("boost", 1.0))


def _values(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _first(value: Any) -> Any:
    values = _values(value)
    return values[0] if values else ""


def _missing(name: str) -> StubError:
    return StubError(404, "index_not_found_exception", f"no such index [{name}]")


def _handler_for(stub: ESStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes: avoid 40 ms stalls

        def log_message(self, *args: Any) -> None:
            """Keep test output quiet."""

        def _serve(self) -> None:
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query).items()}
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                body = _parse_body(url.path, raw)
                stub.requests.append(Recorded(self.command, url.path, params, headers, body))
                _check_compat(headers)
                status, payload = stub.handle(self.command, url.path, params, body)
            except StubError as exc:
                status, payload = exc.status, exc.body()
            except (ValueError, KeyError, TypeError) as exc:
                err = StubError(400, "parsing_exception", f"stub could not parse: {exc!r}")
                status, payload = err.status, err.body()
            except Exception as exc:  # a stub bug must reach the test as a 500, not a hang
                err = StubError(500, "stub_failure", repr(exc))
                status, payload = err.status, err.body()
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header(
                "Content-Type", f"application/vnd.elasticsearch+json;compatible-with={COMPAT_MAJOR}"
            )
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

    return Handler


def _parse_body(path: str, raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode()
    if path.endswith("/_bulk"):
        if not text.endswith("\n"):
            raise StubError(400, "illegal_argument_exception", "bulk body must end with newline")
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _check_compat(headers: dict[str, str]) -> None:
    """Refuse compatibility headers for another major, like a real cluster does."""
    for name in ("accept", "content-type"):
        value = headers.get(name, "")
        match = re.search(r"compatible-with=(\d+)", value)
        if match and int(match.group(1)) != COMPAT_MAJOR:
            raise StubError(
                400,
                "media_type_header_exception",
                f"Invalid media-type value on headers [{name}]: {value}",
            )
