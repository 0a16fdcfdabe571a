"""The query service: FastAPI over `LiveRetriever`.

`POST /search` {query, k, filters} -> hits with provenance and a trace, for the principals of a
verified credential (query_service.auth; or the body's `principal` in `trusted-principal` mode).
`GET /healthz` (process up), `GET /readyz` (binding loaded, engines open), `GET /binding`,
`GET /metrics` (Prometheus), `GET /docs` and `/redoc` (served from local assets, no CDN).

Every request and response is a typed pydantic model, so the OpenAPI schema says what each
field is. Bad input is a 4xx with a message, never a 500: 401 without a valid credential, 413
for a body over `query.max_body_bytes` (refused before it is parsed), 422 for a malformed body
(including text that is not valid Unicode), 400 for a well-formed but unanswerable query (an
unknown source); no live binding is a 503.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Annotated, Any

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request, Response, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from connectors.config import BinderyConfig, load_config
from connectors.errors import BindingError, QueryError
from connectors.indexes.base import Filters
from query_service.api_docs import add_offline_redoc
from query_service.auth import Authenticator, Unauthorized
from query_service.console import console_router
from query_service.middleware import (
    BASE_HEADERS,
    BodyLimit,
    HeadAsGet,
    HostCheck,
    RecordRequests,
    SecurityHeaders,
    ServiceMetrics,
    loopback_hosts,
)
from query_service.neighbours import MAX_NEIGHBOURS
from query_service.retrieval import LiveRetriever, make_filters, redact_trace

__all__ = ["SearchRequest", "SearchResponse", "app_from_env", "create_app"]


# Length-constrained strings: pydantic then also refuses text that is not valid Unicode (a lone
# surrogate from a JSON "\ud800" escape), which no index can match and tantivy would reject.
Text = Annotated[str, Field(min_length=1, max_length=1024)]


def _a_number(value: Any) -> Any:
    """A count is a JSON number, whole: 5 or 5.0 (what many JSON encoders write for a double),
    never "5" or true, which lax validation would read as 5 and 1."""
    if isinstance(value, bool | str):
        raise ValueError(f"must be a number, not a {'boolean' if isinstance(value, bool) else 'string'}")
    return value


NUMBER = BeforeValidator(_a_number)  # after the Field constraints, or the schema loses min/max


class SearchFilters(BaseModel):
    """Restrictions applied identically to both retrievers. An empty list matches nothing."""

    model_config = ConfigDict(extra="forbid", strict=True)
    sources: list[Text] | None = Field(None, max_length=256, description="only these sources")
    docs: list[Text] | None = Field(None, max_length=1000, description="only these documents (paths)")
    exclude_docs: list[Text] | None = Field(None, max_length=1000, description="never these documents")


class SearchRequest(BaseModel):
    """A search. Strict: `"k": "5"` or `"neighbours": true` is a 422 naming the field, not
    quietly read as 5 or 1 (a client that sends the wrong type has a bug worth seeing); a
    whole number written as a float (5.0) is a number, as JSON Schema's integer allows."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: Annotated[str, Field(min_length=1, max_length=4000)]
    k: Annotated[int, Field(strict=False, ge=1, le=200), NUMBER] | None = Field(None, description=(
        "hits to return (default: query.k of the configuration, 10 unless set)"))
    filters: SearchFilters = Field(default_factory=SearchFilters)
    neighbours: Annotated[int, Field(strict=False, ge=0, le=MAX_NEIGHBOURS), NUMBER] | None = Field(None, description=(
        "with each hit, the texts of this many chunks just before and just after its unit, as `before` "
        "and `after` (default: query.neighbours of the configuration, 0 unless set)"))
    principal: Text | list[Text] | None = Field(
        None, description="only in `trusted-principal` mode (behind a gateway that sets it): who is asking. "
        "Otherwise the principals come from the credential and this field is refused.")


class ScoredChunk(BaseModel):
    chunk_id: str
    score: float | None = Field(None, description="the retriever's raw score: for operators only")


class EmailMeta(BaseModel):
    """Who wrote an e-mail, when, and its place in its thread, as its headers say."""

    model_config = ConfigDict(extra="allow")
    from_: str | None = Field(None, alias="from", description="the From header")
    date: str | None = Field(None, description="the Date header, ISO 8601")
    message_id: str | None = None
    in_reply_to: str | None = Field(None, description="the Message-ID it replies to (In-Reply-To, else the last "
                                                      "of References)")
    thread_id: str | None = Field(None, description="its thread's first Message-ID")


class HitModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    chunk_id: str = Field(description="the best-matching chunk of the unit")
    unit_id: str = Field(description="the unit returned (small-to-big: a short document, a section or a run of "
                                     "chunks), named by the chunk id of its first chunk")
    doc: str = Field(description="the document's path relative to its source root")
    source: str
    title: str | None = Field(None, description="the document's title as its parser found it (a first <h1>, else "
                                                "the <title>; a first heading; an e-mail's subject; a PDF's "
                                                "metadata), else its file name as words; null when its index was "
                                                "written before hits had titles")
    score: float = Field(description="fused score, comparable only within one answer: with z-score fusion "
                                     "(the default) a sum of each retriever's standardised score, so 0 is the "
                                     "candidates' average and a lone candidate scores 0")
    text: str = Field(description="the unit's text")
    chunk_text: str = Field(description="the best-matching chunk's own text")
    heading_path: list[str]
    page: int | None = None
    uri: str | None = None
    ranks: dict[str, int] = Field(description="rank in each list that found the unit: dense, sparse, unit (BM25 "
                                              "over whole units), thread, attribution")
    before: list[str] | None = Field(None, description="neighbour expansion only: the texts of the chunks just "
                                                        "before the unit, in document order")
    after: list[str] | None = Field(None, description="neighbour expansion only: the texts of the chunks just after "
                                                       "the unit, in document order")
    email: EmailMeta | None = Field(None, description="a single-message e-mail only (its subject is `heading_path`)")


class AttributionTrace(BaseModel):
    """What a pasted reply's attribution line ("On …, X wrote:") named, and what it found."""

    model_config = ConfigDict(extra="allow")
    names: list[str]
    address: str | None = None
    message_id: str | None = None
    day: str | None = Field(None, description="ISO date")
    time: str | None = Field(None, description="HH:MM")
    offset_minutes: int | None = Field(None, description="the zone named, minutes east of UTC")
    units: int = Field(description="messages of the writer that got some evidence")
    best: list[dict[str, Any]] = Field(description="up to five {unit_id, evidence}")
    index_outdated: bool | None = Field(None, description="the keyword index predates writers' fields: "
                                                          "`bindery reindex` rebuilds it")


class TraceModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    dense: list[ScoredChunk] = Field(default_factory=list)
    sparse: list[ScoredChunk] = Field(default_factory=list)
    unit: list[ScoredChunk] = Field(default_factory=list, description="BM25 over whole units")
    fusion: str | None = Field(None, description="zscore or rrf")
    attribution: AttributionTrace | None = Field(None, description="only for a pasted reply with an attribution line")
    binding: dict[str, Any] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)


class SearchResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    generation: int
    generation_name: str
    hits: list[HitModel]
    trace: TraceModel
    reason: str | None = Field(None, description="why there are no hits")


class ErrorResponse(BaseModel):
    """Every error body: a short phrase and what to do (a list for several malformed fields)."""

    error: str
    detail: str | list[str]


class Health(BaseModel):
    status: str


class Ready(BaseModel):
    ready: bool
    generation: int | None = None
    name: str | None = None
    version: int | None = None
    reason: str | None = None
    warning: str | None = None
    error: str | None = Field(None, description="with 503: the one error shape's phrase")
    detail: str | None = Field(None, description="with 503: what is wrong (the same as reason)")


class BindingInfo(BaseModel):
    alias: str
    generation: int
    previous: int | None
    flipped_at: float
    version: int
    name: str | None
    embedder_id: str | None
    stage_versions: dict[str, str] | None
    served_generation: int | None
    served_version: int | None


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": why} for code, why in (
        (400, "a well-formed query that cannot be answered (unknown source, bad principal), or a Host this "
              "service does not answer"),
        (401, "no valid credential"), (403, "a cross-site request from a browser"), (413, "request body too large"),
        (422, "malformed request"), (431, "request headers too large (query.max_header_bytes)"),
        (500, "the service could not answer (its log has the cause)"),
        (503, "no live binding, or the binding cannot be served"))}

# `query.fusion` as the API description names it
_FUSION_NAMES = {"zscore": "z-score fusion", "rrf": "reciprocal rank fusion"}

log = logging.getLogger(__name__)

_bearer = HTTPBearer(auto_error=False, description="an API key or a JWT")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")


# The routes are closures over one app's retriever, limits and auth; splitting them out would
# thread that state through module globals.
def _problem(e: Any) -> str:
    """One validation error as a person reads it: where in the body, and what is wrong."""
    where = ".".join(str(p) for p in e["loc"][1:])
    if e["type"] == "json_invalid":  # pydantic's location is the character offset
        why = (e.get("ctx") or {}).get("error") or "invalid JSON"
        return f"body: not valid JSON at character {where or 0} ({why})"
    if not where and e["type"] in ("model_attributes_type", "dict_type"):
        return "body: must be a JSON object, sent with Content-Type: application/json"
    return f"{where or 'body'}: {e['msg']}"


def _repeated_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise RequestValidationError([{"loc": ("body", key), "type": "repeated_key",
                                           "msg": "given more than once; a JSON object names each key once"}])
        seen.add(key)
    return dict(pairs)


async def unique_keys(request: Request) -> None:
    """Refuse a body whose JSON object names a key twice. Parsers disagree on which one counts
    (Python's and pydantic's keep the last, many gateways the first), so a gateway that checks
    or sets `principal` and this service could read different callers from one request (an
    attacker pass: a second `principal` appended to a trusted gateway's body won)."""
    body = await request.body()  # cached: FastAPI reads the same bytes for the model
    # FastAPI's json.loads guesses UTF-16 and UTF-32 from the bytes (ASCII in UTF-16 is valid
    # UTF-8 too, with NULs between): a gateway reading UTF-8 would not see the `principal` read here
    if body and json.detect_encoding(body) not in ("utf-8", "utf-8-sig"):
        raise RequestValidationError([{"loc": ("body",), "type": "encoding",
                                       "msg": "not UTF-8: send the JSON body encoded as UTF-8"}])
    try:  # _repeated_key raises RequestValidationError, which is no ValueError: it goes through
        json.loads(body, object_pairs_hook=_repeated_key)
    except (ValueError, RecursionError):  # not JSON at all: the model's validation says so
        return


def _one_header(request: Request, name: str) -> str | None:
    """A credential header's value; one sent twice is refused (which copy counts would differ
    between this service and a proxy in front of it)."""
    values = request.headers.getlist(name)
    if len(values) > 1:
        raise Unauthorized(f"the {name} header was sent {len(values)} times: send it once")
    return values[0] if values else None


def create_app(cfg: BinderyConfig | None = None, retriever: LiveRetriever | None = None, *,  # noqa: C901  # length: route closures
               allowed_hosts: list[str] | None = None) -> FastAPI:
    """The service's app. `allowed_hosts`: the Host header values answered (else
    `query.allowed_hosts`; when neither is set, any: `bindery serve` passes the loopback names
    when it binds a loopback address)."""
    conf = cfg or load_config()
    auth = Authenticator(conf.query.auth)  # fails at startup on a missing secret or JWKS file
    state: dict[str, LiveRetriever] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state["retriever"] = retriever or LiveRetriever(conf)
        yield
        if retriever is None:
            state["retriever"].close()

    fusion = _FUSION_NAMES[conf.query.fusion]
    app = FastAPIOffline(title="Bindery query service", lifespan=lifespan, redoc_url=None,
                         description=f"Hybrid retrieval (dense + BM25, {fusion}) over the live "
                                     "generation, with ACLs enforced from a verified credential.")
    add_offline_redoc(app)  # ReDoc's own bundle would still fetch its logo from a CDN
    metrics = ServiceMetrics()
    # the last added runs first: metrics see every answer, the security headers go on the
    # host check's 400 and the body limit's 413 too
    app.add_middleware(BodyLimit, max_bytes=conf.query.max_body_bytes, max_header_bytes=conf.query.max_header_bytes)
    hosts = allowed_hosts or conf.query.allowed_hosts
    if hosts:
        app.add_middleware(HostCheck, allowed_hosts=hosts)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RecordRequests, metrics=metrics)
    app.add_middleware(HeadAsGet)  # outermost: a HEAD is a GET to every check and metric

    @app.exception_handler(Exception)
    async def _internal_error(_req: Request, exc: Exception) -> JSONResponse:
        # the one error shape for a failure of the service itself (a store that cannot be
        # read, say); its text may name hosts, users or SQL, so it goes to the log, not the caller
        log.error("request failed: %s: %s", type(exc).__name__, exc)
        metrics.errors.labels("internal").inc()
        return JSONResponse(status_code=500, headers=BASE_HEADERS, content={
            "error": "internal server error", "detail": "the service could not answer; its log has the cause"})

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer to a body it cannot decode (not UTF-8, nested past the JSON
            # parser's depth): a malformed body like any other, 422 and counted
            metrics.errors.labels("invalid-request").inc()
            return JSONResponse(status_code=422, content={"error": "bad request", "detail": [
                "body: not a JSON document this service can read (UTF-8 JSON, nested at most a few hundred levels, "
                "numbers of at most 4,300 digits)"]})
        # every error body has one shape, {"error": a short phrase, "detail": what to do}, as the
        # 413 and 422 bodies already had (FastAPI's default is {"detail"} alone)
        try:
            phrase = HTTPStatus(exc.status_code).phrase.lower()
        except ValueError:  # a status code Python does not name
            phrase = "error"
        return JSONResponse(status_code=exc.status_code, headers=exc.headers,
                            content={"error": phrase, "detail": exc.detail})

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_req: Request, exc: RequestValidationError) -> JSONResponse:
        msgs = [_problem(e) for e in exc.errors()]
        metrics.errors.labels("invalid-request").inc()
        return JSONResponse(status_code=422, content={"error": "bad request", "detail": msgs})

    def _retriever() -> LiveRetriever:
        return state["retriever"]

    def caller(request: Request, _b: Any = Security(_bearer), _k: Any = Security(_api_key)) -> tuple[str, ...] | None:
        """The verified principals, or None in trusted-principal mode (the body says who)."""
        if auth.trusted_principal:
            return None
        try:
            return auth.principals(*(_one_header(request, h) for h in ("authorization", "x-api-key")))
        except Unauthorized as e:
            if request.url.path.rstrip("/").endswith("/search"):  # a search refused, not a console page's call
                metrics.errors.labels("unauthorized").inc()
            raise HTTPException(401, str(e), headers={"WWW-Authenticate": "Bearer"}) from e

    def filters_for(req: SearchRequest, principals: tuple[str, ...] | None) -> Filters:
        if principals is None:
            who: str | list[str] | None = req.principal
        elif req.principal is not None:
            raise QueryError("`principal` is only accepted in trusted-principal mode; "
                             "the credential says who is asking")
        else:
            who = list(principals)
        f = req.filters
        return make_filters(who, f.sources, f.docs, f.exclude_docs, known_sources=list(_retriever().cfg.source_names()),
                            allow_no_principal=principals is not None)

    def operator(principals: tuple[str, ...] | None = Depends(caller)) -> None:
        """The console's operator views (generations, gate reports, dead letters) name documents of
        every source: they need a credential holding one of `query.auth.operators`. In
        trusted-principal mode the gateway in front decides who reaches them."""
        if principals is not None and not set(principals) & set(conf.query.auth.operators):
            raise HTTPException(403, "the console's operator views need a credential whose principals include "
                                     "one of query.auth.operators")

    def serving() -> dict[str, Any] | None:
        r = _retriever()
        cur = r.current
        return {"id": cur.gen.id, "name": cur.gen.name, "warning": r.last_error} if cur is not None else None

    app.include_router(console_router(lambda: _retriever().store, auth=operator, serving_of=serving))

    @app.get("/healthz", response_model=Health)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", response_model=Ready, responses={503: {"model": Ready}})
    def readyz() -> JSONResponse:
        r = _retriever()
        cur = r.current
        if cur is None or r.store_error:
            reason = r.store_error or r.last_error
            return JSONResponse(status_code=503, content={"ready": False, "reason": reason,
                                                          "error": "service unavailable", "detail": reason})
        return JSONResponse(content={"ready": True, "generation": cur.gen.id, "name": cur.gen.name,
                                     "version": cur.version, "warning": r.last_error})

    @app.get("/binding", response_model=BindingInfo, responses={503: _ERRORS[503]})
    def binding() -> dict[str, Any]:
        r = _retriever()
        b = r.store.get_binding() if r.store.initialised() else None
        if b is None:
            raise HTTPException(503, r.last_error or "no live binding yet: run `bindery sync` first")
        gen = r.store.get_generation(b.generation_id)
        served = r.current
        return {"alias": b.alias, "generation": b.generation_id, "previous": b.previous_generation_id,
                "flipped_at": b.flipped_at, "version": b.version, "name": gen.name if gen else None,
                "embedder_id": gen.embedder_id if gen else None,
                "stage_versions": gen.stage_versions if gen else None,
                "served_generation": served.gen.id if served else None,
                "served_version": served.version if served else None}

    # exclude_unset: a key the answer leaves out stays out (`reason` with hits, `attribution`
    # without an attribution line), as in `bindery query --json`, instead of coming back as null
    @app.post("/search", response_model=SearchResponse, response_model_exclude_unset=True, responses=_ERRORS)
    def search(req: SearchRequest, principals: tuple[str, ...] | None = Depends(caller),
               _once: None = Depends(unique_keys)) -> dict[str, Any]:
        m = metrics
        try:
            r = _retriever()
            out = r.search(req.query, req.k or r.cfg.query.k, filters_for(req, principals),
                           neighbours=req.neighbours).to_json()
            if principals is None or not set(principals) & set(conf.query.auth.operators):
                out["trace"] = redact_trace(out["trace"])
        except QueryError as e:
            m.errors.labels("bad-query").inc()
            raise HTTPException(400, str(e)) from e
        except BindingError as e:
            m.errors.labels("no-binding").inc()
            raise HTTPException(503, str(e)) from e
        m.hits.observe(len(out["hits"]))
        return out

    @app.get("/metrics", include_in_schema=False)
    def prometheus() -> Response:
        m = metrics
        cur = _retriever().current
        if cur is not None:
            m.generation.set(cur.gen.id)
            m.binding_version.set(cur.version or 0)
        return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def server_config(cfg: BinderyConfig, host: str, port: int, *, log_level: str = "info") -> uvicorn.Config:
    """How `bindery serve` runs the app. h11, not httptools: h11 bounds the request head
    (`query.max_header_bytes`; httptools buffered a 300 MB header), so no client can make the
    service hold unbounded headers. On a loopback address only loopback Host names are answered
    unless `query.allowed_hosts` says otherwise."""
    app = create_app(cfg, allowed_hosts=cfg.query.allowed_hosts or loopback_hosts(host))
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, http="h11",
                          h11_max_incomplete_event_size=cfg.query.max_header_bytes)


def app_from_env() -> FastAPI:
    """uvicorn factory: `uvicorn --factory query_service.app:app_from_env` (reads BINDERY_CONFIG).

    Opens the store first, as `bindery serve` does: a store that belongs to another deployment's
    data_dir (`connectors.store.ownership`) is refused here too, with its one line (this entry
    point served another deployment's documents under its own credentials)."""
    from connectors.errors import BinderyError
    from connectors.store.ownership import open_store

    try:
        cfg = load_config()
        open_store(cfg).dispose()
    except BinderyError as e:
        raise SystemExit(f"bindery: {e}") from None
    return create_app(cfg)
