"""A small in-process HTTP stub of Qdrant's REST API, for server-mode tests of the vector index.

Written against Qdrant's OpenAPI description (`docs/redoc/master/openapi.json`, server 1.19)
and its REST test-suite (`tests/openapi/`), so that the official `qdrant-client` in server mode
(`QdrantClient(url=...)`, REST, not gRPC) works against it for everything Bindery calls:

* ``GET /`` (version check), ``GET /collections``, ``GET|PUT|DELETE /collections/{name}``,
  ``GET /collections/{name}/exists``; ``CreateCollection`` bodies are kept as given (vector
  params incl. ``on_disk``, ``quantization_config``, ``hnsw_config``, ``on_disk_payload``) and
  echoed back in ``CollectionInfo.config``
* ``PUT /collections/{name}/index`` (payload indexes, listed in ``payload_schema``)
* ``PUT /collections/{name}/points`` (upsert), ``POST .../points`` (retrieve by ids),
  ``POST .../points/delete`` (by ids or by filter), ``POST .../points/scroll`` (id order,
  ``next_page_offset``), ``POST .../points/count``, ``POST .../points/query`` (nearest by a
  dense vector, filter, ``limit``/``offset``, ``score_threshold``, ``with_payload``)
* ``POST /collections/aliases`` (``create_alias``/``delete_alias``/``rename_alias``, applied
  together or not at all), ``GET /aliases``, ``GET /collections/{name}/aliases``; every
  collection route accepts an alias in place of the collection name, as Qdrant resolves them
* an optional API key (the ``api-key`` header), refused with 401 like a secured server

Semantics follow Qdrant's: point ids are unsigned integers or UUIDs (normalised to the
hyphenated lower-case form); Cosine vectors are normalised on upsert; filters implement
``must``/``should``/``must_not``/``min_should``, ``match`` (``value``, ``any`` — empty matches
nothing —, ``except``, ``text``), ``range``, ``has_id``, ``is_empty``, ``is_null`` and nested
filters over dotted keys, any array element matching. Deleting a collection drops its aliases.
Search is exact (no HNSW), which is what a server returns for these small collections anyway.
Every request is recorded in :attr:`QdrantStub.requests`.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast, overload
from urllib.parse import parse_qs, unquote, urlsplit

VERSION = "1.19.0"
_NAME_RE = re.compile(r"^[^/\\\x00]{1,255}$")


class StubError(Exception):
    """A Qdrant-style error: ``{"status": {"error": ...}, "time": ...}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class Recorded:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Collection:
    config: dict[str, Any]  # the CreateCollection body, as sent
    points: dict[Any, dict[str, Any]] = field(default_factory=dict)  # id -> {"vector", "payload"}
    payload_schema: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def vectors(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.config["vectors"])


def _normalise_id(pid: Any) -> Any:
    if isinstance(pid, bool) or not isinstance(pid, int | str):
        raise StubError(400, f"Format error in JSON body: invalid point id {pid!r}")
    if isinstance(pid, int):
        if pid < 0:
            raise StubError(400, f"Format error in JSON body: negative point id {pid}")
        return pid
    try:
        return str(uuid.UUID(pid))
    except ValueError:
        raise StubError(400, f"Format error in JSON body: value {pid} is not a valid point ID") from None


def _id_key(pid: Any) -> tuple[int, Any]:
    """Qdrant orders integer ids before UUIDs, each ascending."""
    return (0, pid) if isinstance(pid, int) else (1, pid)


def _values(payload: dict[str, Any], key: str) -> list[Any]:
    """All values at a dotted key; arrays along the way are flattened (`a.b`, `a[].b`)."""
    current: list[Any] = [payload]
    for part in key.replace("[]", "").split("."):
        nxt: list[Any] = []
        for item in current:
            if isinstance(item, dict) and part in item:
                value = item[part]
                nxt.extend(value if isinstance(value, list) else [value])
        current = nxt
    return current


class QdrantStub:
    """The stub server. Use as a context manager; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.collections: dict[str, Collection] = {}
        self.aliases: dict[str, str] = {}  # alias -> collection
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> QdrantStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self, method: str | None = None, endswith: str = "") -> list[Recorded]:
        return [r for r in self.requests
                if (method is None or r.method == method) and r.path.endswith(endswith)]

    # -- routing -------------------------------------------------------------------------

    def handle(self, method: str, path: str, params: dict[str, str], body: Any) -> Any:
        parts = [unquote(p) for p in path.strip("/").split("/") if p]
        with self._lock:
            if not parts:
                return {"title": "qdrant - vector search engine", "version": VERSION, "commit": None}
            if parts == ["aliases"]:
                return {"aliases": self._alias_list()}
            if parts == ["collections"]:
                return {"collections": [{"name": n} for n in sorted(self.collections)]}
            if parts == ["collections", "aliases"] and method == "POST":
                return self._update_aliases(body or {})
            if parts[0] != "collections":
                raise StubError(404, f"stub: no route {method} {path}")
            name, rest = parts[1], parts[2:]
            if not rest:
                return self._collection_op(method, name, body)
            if rest == ["exists"]:
                return {"exists": self._resolve(name, required=False) is not None}
            if rest == ["aliases"]:
                real = self._resolve(name)
                return {"aliases": [a for a in self._alias_list() if a["collection_name"] == real]}
            coll = self.collections[self._resolve(name)]
            return self._points_op(method, rest, coll, body or {})

    def _points_op(self, method: str, rest: list[str], coll: Collection, body: dict[str, Any]) -> Any:
        route = (method, "/".join(rest))
        if route == ("PUT", "index"):
            return self._create_index(coll, body)
        if route == ("PUT", "points"):
            return self._upsert(coll, body)
        if route == ("POST", "points"):
            return [self._record(coll, pid, body) for pid in map(_normalise_id, body["ids"])
                    if pid in coll.points]
        if route == ("POST", "points/delete"):
            return self._delete(coll, body)
        if route == ("POST", "points/scroll"):
            return self._scroll(coll, body)
        if route == ("POST", "points/count"):
            return {"count": sum(1 for pid, p in coll.points.items() if self._matches(pid, p, body.get("filter")))}
        if route == ("POST", "points/query"):
            return {"points": self._query(coll, body)}
        raise StubError(404, f"stub: no route {method} /{'/'.join(rest)}")

    # -- collections and aliases ---------------------------------------------------------

    @overload
    def _resolve(self, name: str, *, required: Literal[True] = ...) -> str: ...
    @overload
    def _resolve(self, name: str, *, required: bool) -> str | None: ...

    def _resolve(self, name: str, *, required: bool = True) -> str | None:
        real = self.aliases.get(name, name)
        if real in self.collections:
            return real
        if required:
            raise StubError(404, f"Not found: Collection `{name}` doesn't exist!")
        return None

    def _collection_op(self, method: str, name: str, body: Any) -> Any:
        if method == "GET":
            return self._info(self.collections[self._resolve(name) or name])
        if method == "PUT":
            if not _NAME_RE.match(name):
                raise StubError(422, f"Validation error in path parameters: invalid collection name {name!r}")
            if name in self.collections:
                raise StubError(409, f"Wrong input: Collection `{name}` already exists!")
            if name in self.aliases:
                raise StubError(400, f"Wrong input: Alias `{name}` already exists!")
            vectors = (body or {}).get("vectors")
            if not isinstance(vectors, dict) or "size" not in vectors or "distance" not in vectors:
                raise StubError(400, "Format error in JSON body: stub supports one unnamed dense vector")
            self.collections[name] = Collection(dict(body))
            return True
        if method == "DELETE":  # by real name only; its aliases go with it
            if name not in self.collections:
                return False
            del self.collections[name]
            self.aliases = {a: c for a, c in self.aliases.items() if c != name}
            return True
        raise StubError(405, f"method {method} not allowed")

    def _info(self, coll: Collection) -> dict[str, Any]:
        cfg = coll.config
        params = {"vectors": cfg["vectors"], "shard_number": cfg.get("shard_number", 1),
                  "replication_factor": cfg.get("replication_factor", 1),
                  "write_consistency_factor": cfg.get("write_consistency_factor", 1),
                  "on_disk_payload": cfg.get("on_disk_payload", True)}
        hnsw = {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000, "max_indexing_threads": 0,
                **(cfg.get("hnsw_config") or {})}
        return {
            "status": "green", "optimizer_status": "ok", "segments_count": 1,
            "indexed_vectors_count": 0, "points_count": len(coll.points),
            "config": {"params": params, "hnsw_config": hnsw,
                       "optimizer_config": {"deleted_threshold": 0.2, "vacuum_min_vector_number": 1000,
                                            "default_segment_number": 0, "flush_interval_sec": 5},
                       "wal_config": {"wal_capacity_mb": 32, "wal_segments_ahead": 0},
                       "quantization_config": cfg.get("quantization_config")},
            "payload_schema": {k: {**v, "points": sum(1 for p in coll.points.values() if _values(p["payload"], k))}
                               for k, v in coll.payload_schema.items()},
        }

    def _alias_list(self) -> list[dict[str, str]]:
        return [{"alias_name": a, "collection_name": c} for a, c in sorted(self.aliases.items())]

    def _update_aliases(self, body: dict[str, Any]) -> bool:
        """All actions are applied to a copy, which replaces the mapping only if every one
        succeeded: readers never see a half-switched alias."""
        aliases = dict(self.aliases)
        for action in body.get("actions") or []:
            ((kind, spec),) = action.items()
            if kind == "create_alias":
                if spec["collection_name"] not in self.collections:
                    raise StubError(404, f"Not found: Collection `{spec['collection_name']}` doesn't exist!")
                if spec["alias_name"] in self.collections:
                    raise StubError(409, f"Wrong input: Collection `{spec['alias_name']}` already exists!")
                aliases[spec["alias_name"]] = spec["collection_name"]
            elif kind == "delete_alias":
                aliases.pop(spec["alias_name"], None)
            elif kind == "rename_alias":
                if spec["old_alias_name"] not in aliases:
                    raise StubError(404, f"Not found: Alias {spec['old_alias_name']} does not exists!")
                aliases[spec["new_alias_name"]] = aliases.pop(spec["old_alias_name"])
            else:
                raise StubError(400, f"Format error in JSON body: unknown alias operation {kind}")
        self.aliases = aliases
        return True

    # -- points --------------------------------------------------------------------------

    def _create_index(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        schema = body.get("field_schema")
        kind = schema if isinstance(schema, str) else (schema or {}).get("type")
        if kind not in ("keyword", "integer", "float", "geo", "text", "bool", "datetime", "uuid"):
            raise StubError(400, f"Format error in JSON body: unknown field schema {schema!r}")
        info: dict[str, Any] = {"data_type": kind}
        if isinstance(schema, dict):
            info["params"] = schema
        coll.payload_schema[body["field_name"]] = info
        return {"operation_id": len(self.requests), "status": "completed"}

    def _upsert(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        if "points" not in body:
            raise StubError(400, "Format error in JSON body: stub supports the `points` list form")
        size, distance = coll.vectors["size"], coll.vectors["distance"]
        staged = {}
        for point in body["points"]:
            vector = point.get("vector")
            if not isinstance(vector, list) or len(vector) != size:
                got = len(vector) if isinstance(vector, list) else type(vector).__name__
                raise StubError(400, f"Wrong input: Vector dimension error: expected dim: {size}, got {got}")
            if distance == "Cosine":
                norm = math.sqrt(sum(x * x for x in vector)) or 1.0
                vector = [x / norm for x in vector]
            staged[_normalise_id(point["id"])] = {"vector": vector, "payload": dict(point.get("payload") or {})}
        coll.points.update(staged)
        return {"operation_id": len(self.requests), "status": "completed"}

    def _delete(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        if "points" in body:
            for pid in map(_normalise_id, body["points"]):
                coll.points.pop(pid, None)
        elif "filter" in body:
            for pid in [pid for pid, p in coll.points.items() if self._matches(pid, p, body["filter"])]:
                del coll.points[pid]
        else:
            raise StubError(400, "Format error in JSON body: expected `points` or `filter`")
        return {"operation_id": len(self.requests), "status": "completed"}

    def _record(self, coll: Collection, pid: Any, body: dict[str, Any], score: float | None = None) -> dict[str, Any]:
        point = coll.points[pid]
        out: dict[str, Any] = {"id": pid, "payload": _select(point["payload"], body.get("with_payload", True)),
                               "vector": point["vector"] if body.get("with_vector") else None}
        if score is not None:
            out.update(score=score, version=0)
        return out

    def _scroll(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("order_by"):
            raise StubError(400, "stub: order_by is not supported")
        limit = int(body.get("limit") or 10)
        ids = sorted((pid for pid, p in coll.points.items() if self._matches(pid, p, body.get("filter"))),
                     key=_id_key)
        offset = body.get("offset")
        if offset is not None:
            start = _id_key(_normalise_id(offset))
            ids = [pid for pid in ids if _id_key(pid) >= start]
        page, rest = ids[:limit], ids[limit:]
        return {"points": [self._record(coll, pid, body) for pid in page],
                "next_page_offset": rest[0] if rest else None}

    def _query(self, coll: Collection, body: dict[str, Any]) -> list[dict[str, Any]]:
        query = body.get("query")
        if isinstance(query, dict) and "nearest" in query:
            query = query["nearest"]
        if not isinstance(query, list) or len(query) != coll.vectors["size"]:
            raise StubError(400, "Wrong input: stub queries need one dense vector of the collection's size")
        distance = coll.vectors["distance"]
        if distance == "Cosine":
            norm = math.sqrt(sum(x * x for x in query)) or 1.0
            query = [x / norm for x in query]
        scored = [(_score(distance, query, p["vector"]), pid) for pid, p in coll.points.items()
                  if self._matches(pid, p, body.get("filter"))]
        ascending = distance in ("Euclid", "Manhattan")  # distances: smaller is closer
        scored.sort(key=lambda s: (s[0] if ascending else -s[0], _id_key(s[1])))
        threshold = body.get("score_threshold")
        if threshold is not None:
            scored = [s for s in scored if (s[0] <= threshold if ascending else s[0] >= threshold)]
        offset, limit = int(body.get("offset") or 0), int(body.get("limit") or 10)
        return [self._record(coll, pid, body, score) for score, pid in scored[offset:offset + limit]]

    # -- filters -------------------------------------------------------------------------

    def _matches(self, pid: Any, point: dict[str, Any], flt: dict[str, Any] | None) -> bool:
        if not flt:
            return True
        must, should, must_not = (_clauses(flt, k) for k in ("must", "should", "must_not"))
        if not all(self._condition(pid, point, c) for c in must):
            return False
        if should and not any(self._condition(pid, point, c) for c in should):
            return False
        if any(self._condition(pid, point, c) for c in must_not):
            return False
        min_should = flt.get("min_should")
        if min_should:
            hits = sum(self._condition(pid, point, c) for c in min_should["conditions"])
            return hits >= int(min_should["min_count"])
        return True

    def _condition(self, pid: Any, point: dict[str, Any], cond: dict[str, Any]) -> bool:
        if any(k in cond for k in ("must", "should", "must_not", "min_should")):
            return self._matches(pid, point, cond)
        if "has_id" in cond:
            return pid in {_normalise_id(i) for i in cond["has_id"]}
        if "is_empty" in cond:
            return not [v for v in _values(point["payload"], cond["is_empty"]["key"]) if v is not None]
        if "is_null" in cond:
            return None in _values(point["payload"], cond["is_null"]["key"])
        if "key" not in cond:
            raise StubError(400, f"stub: unsupported condition {sorted(cond)}")
        values = [v for v in _values(point["payload"], cond["key"]) if v is not None]
        if cond.get("match") is not None:
            return _match(cond["match"], values)
        if cond.get("range") is not None:
            r = cond["range"]
            nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            return any(all(_cmp(op, v, r[op]) for op in ("gt", "gte", "lt", "lte") if r.get(op) is not None)
                       for v in nums)
        raise StubError(400, f"stub: unsupported field condition {sorted(cond)}")


def _clauses(flt: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = flt.get(key) or []
    return value if isinstance(value, list) else [value]


def _match(match: dict[str, Any], values: list[Any]) -> bool:
    if "value" in match:
        return match["value"] in values
    if "any" in match:
        return any(v in match["any"] for v in values)
    if "except" in match:
        return any(v not in match["except"] for v in values)
    if "text" in match:
        words = match["text"].lower().split()
        return any(all(w in str(v).lower() for w in words) for v in values)
    raise StubError(400, f"stub: unsupported match {sorted(match)}")


def _cmp(op: str, value: float, bound: float) -> bool:
    return {"gt": value > bound, "gte": value >= bound, "lt": value < bound, "lte": value <= bound}[op]


def _score(distance: str, a: list[float], b: list[float]) -> float:
    if distance in ("Cosine", "Dot"):
        return sum(x * y for x, y in zip(a, b, strict=True))
    if distance == "Euclid":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
    if distance == "Manhattan":
        return sum(abs(x - y) for x, y in zip(a, b, strict=True))
    raise StubError(400, f"stub: unsupported distance {distance}")


def _select(payload: dict[str, Any], selector: Any) -> dict[str, Any] | None:
    """`with_payload`: true/false, a list of keys to include, or {include|exclude: [...]}."""
    if selector is True:
        return dict(payload)
    if not selector:
        return None
    if isinstance(selector, list):
        return {k: v for k, v in payload.items() if k in selector}
    if "include" in selector:
        return {k: v for k, v in payload.items() if k in selector["include"]}
    return {k: v for k, v in payload.items() if k not in selector.get("exclude", [])}


def _handler_for(stub: QdrantStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            """Keep test output quiet."""

        def _serve(self) -> None:
            started = time.perf_counter()
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query).items()}
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                body = json.loads(raw) if raw else None
                stub.requests.append(Recorded(self.command, url.path, params, headers, body))
                if stub.api_key is not None and headers.get("api-key") != stub.api_key:
                    raise StubError(401, "Must provide an API key or an Authorization bearer token")
                result = stub.handle(self.command, url.path, params, body)
                # `GET /` answers VersionInfo itself; every other route wraps its result.
                status, payload = 200, (result if url.path.strip("/") == "" else {"result": result, "status": "ok"})
            except StubError as exc:
                status, payload = exc.status, {"status": {"error": exc.message}}
            except (ValueError, KeyError, TypeError) as exc:
                status, payload = 400, {"status": {"error": f"Format error in JSON body: {exc!r}"}}
            except Exception as exc:  # a stub bug must reach the test as a 500, not a hang
                status, payload = 500, {"status": {"error": f"stub failure: {exc!r}"}}
            if url.path.strip("/") or status != 200:
                payload["time"] = time.perf_counter() - started
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _serve

    return Handler
