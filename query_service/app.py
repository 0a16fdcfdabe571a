"""The query service: FastAPI over `LiveRetriever`.

`POST /search` {query, k, filters, principal} -> hits with provenance and a trace.
`GET /healthz` (process up), `GET /readyz` (binding loaded, engines open), `GET /binding`.
Bad input is a 4xx with a message, never a 500; no live binding is a 503.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from connectors.config import BinderyConfig, load_config
from connectors.errors import BindingError, QueryError
from query_service.console import console_router
from query_service.retrieval import LiveRetriever, make_filters


class SearchFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sources: list[str] | None = None
    docs: list[str] | None = None
    exclude_docs: list[str] | None = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4000)
    k: int = Field(10, ge=1, le=200)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    principal: str | list[str] = Field(
        description="who is asking; chunks are returned only if their ACL names one of these "
        "principals or is public. Use a non-privileged name (e.g. 'anonymous') for public-only.")


def create_app(cfg: BinderyConfig | None = None, retriever: LiveRetriever | None = None) -> FastAPI:
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        conf = cfg or load_config()
        state["retriever"] = retriever or LiveRetriever(conf)
        yield
        if retriever is None:
            state["retriever"].close()

    app = FastAPI(title="Bindery query service", lifespan=lifespan)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_req: Request, exc: RequestValidationError) -> JSONResponse:
        msgs = [f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()]
        return JSONResponse(status_code=422, content={"error": "bad request", "detail": msgs})

    def _retriever() -> LiveRetriever:
        return state["retriever"]

    # CONSOLE-AUTH SEAM: once the service authenticates callers, pass the dependency `/search`
    # uses as `auth=` so the console's data endpoints sit behind the same check.
    app.include_router(console_router(lambda: _retriever().store, auth=None))

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        r = _retriever()
        cur = r.current
        if cur is None:
            return JSONResponse(status_code=503, content={"ready": False, "reason": r.last_error})
        return JSONResponse(content={"ready": True, "generation": cur.gen["id"], "name": cur.gen["name"],
                                     "version": cur.version, "warning": r.last_error})

    @app.get("/binding")
    def binding() -> dict[str, Any]:
        r = _retriever()
        b = r.store.get_binding()
        if b is None:
            raise HTTPException(503, "no live binding yet")
        gen = r.store.get_generation(b["generation_id"]) or {}
        served = r.current
        return {"alias": b["alias"], "generation": b["generation_id"], "previous": b["previous_generation_id"],
                "flipped_at": b["flipped_at"], "version": b["version"], "name": gen.get("name"),
                "embedder_id": gen.get("embedder_id"), "stage_versions": gen.get("stage_versions"),
                "served_generation": served.gen["id"] if served else None,
                "served_version": served.version if served else None}

    @app.post("/search")
    def search(req: SearchRequest) -> dict[str, Any]:
        try:
            filters = make_filters(req.principal, req.filters.sources, req.filters.docs, req.filters.exclude_docs)
            return _retriever().search(req.query, req.k, filters).to_json()
        except QueryError as e:
            raise HTTPException(400, str(e)) from e
        except BindingError as e:
            raise HTTPException(503, str(e)) from e

    return app


def app_from_env() -> FastAPI:
    """uvicorn factory: `uvicorn --factory query_service.app:app_from_env` (reads BINDERY_CONFIG)."""
    return create_app()
