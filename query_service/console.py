"""The web console, served by the query service at `/console/`: plain HTML, JS and CSS shipped as
package data (`query_service/console/`), no front-end build step.

    /console/                 the page (search playground, generations, evals, dead letters)
    /console/{asset}          console.js, console.css
    /console/api/generations  live / previous / candidate and every kept generation: stage
                              versions, counts, gate reports
    /console/api/evals        eval metrics per generation (from the gate reports) and `tune` trials
    /console/api/dead-letters the dead-letter table

The search playground calls the service's own `POST /search`, so it shows exactly what users
get: hits with provenance, per-retriever ranks and the trace's timings. The data endpoints
take the same authentication dependency as `/search` (`auth`), so the console reveals nothing
a caller without a credential could not see.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse, RedirectResponse

from connectors.store import DocumentStore, GenerationRecord

__all__ = ["CONSOLE_DIR", "console_router"]

CONSOLE_DIR = Path(__file__).parent / "console"
_ASSETS = {"console.js": "text/javascript", "console.css": "text/css"}
TUNE_EVENT = "tune"  # events of this kind whose details hold {"trials": [...]} are charted


def _generation(g: GenerationRecord) -> dict[str, Any]:
    rep = g.eval_report or {}
    return {"id": g.id, "name": g.name, "status": g.status, "created_at": g.created_at,
            "stage_versions": g.stage_versions, "embedder_id": g.embedder_id, "counts": g.counts or {},
            "published_at": g.published_at, "forced_by": g.forced_by, "force_reason": g.force_reason,
            "gate": {"passed": rep.get("passed"), "reasons": rep.get("reasons") or [],
                     "warnings": rep.get("warnings") or [], "metric": rep.get("metric"),
                     "live": rep.get("live") or {}, "candidate": rep.get("candidate") or {},
                     "delta": rep.get("delta") or {}, "regressed": (rep.get("regressed") or [])[:20],
                     "improved": (rep.get("improved") or [])[:20], "judged_at": rep.get("judged_at")}}


def generations(store: DocumentStore, serving: dict[str, Any] | None = None) -> dict[str, Any]:
    """The generations and the binding, and `serving`: the generation this service answers from
    ({"id", "name", "warning"}), which is not the bound one while that one cannot be opened (the
    page said "live 3" while searches came from 4, and only /readyz told: an operator pass)."""
    b = store.get_binding()
    gens = [g for g in store.generations() if g.status != "dropped"]
    building = [g.id for g in gens if g.status == "building"]
    return {"live": b.generation_id if b else None, "previous": b.previous_generation_id if b else None,
            "candidate": building[-1] if building else None,
            "binding": {"version": b.version, "flipped_at": b.flipped_at, "flipped_by": b.flipped_by}
            if b else None,
            "generations": [_generation(g) for g in sorted(gens, key=lambda g: g.id, reverse=True)],
            "serving": serving}


def evals(store: DocumentStore) -> dict[str, Any]:
    """Each judged generation's own metrics (the `candidate` side of its gate report, else the
    `live` side of the gate that compared a later one with it), oldest first, and the trials
    `bindery tune` recorded."""
    gens = sorted(store.generations(), key=lambda g: g.id)
    # a generation never judged as a candidate (the first, built before the gate had an eval
    # set) was measured as the live side of the next one's gate: it is a point too (a new-user
    # pass: the chart began at generation 2, with a single point)
    as_live = {rep["live_generation"]: (rep, g.id) for g in gens
               if (rep := g.eval_report or {}).get("live") and rep.get("live_generation") is not None}
    points = []
    for g in gens:
        rep = g.eval_report or {}
        # which eval set measured it (path, digest) and how many questions: the page charts
        # one set's points together, never an 8-question set's beside a 263-question one's
        if rep.get("candidate"):
            points.append({"generation": g.id, "name": g.name, "status": g.status,
                           "metrics": rep["candidate"], "passed": rep.get("passed"), "judged_at": rep.get("judged_at"),
                           "cases": rep.get("cases"), "eval_set": rep.get("eval_set")})
        elif g.id in as_live:
            judged, judging = as_live[g.id]
            points.append({"generation": g.id, "name": g.name, "status": g.status, "metrics": judged["live"],
                           "passed": None, "judged_at": judged.get("judged_at"), "measured_as_live_for": judging,
                           "cases": judged.get("cases"), "eval_set": judged.get("eval_set")})
    trials = []
    for e in reversed(store.events(TUNE_EVENT, limit=20)):
        details = e.details or {}
        # numbered as `bindery tune` prints them: trial 0 is the current configuration; each names
        # the metric its run chose the best by (gate.metric, then the tie-breaker), so the page
        # charts that one, not a fixed recall@10 that can be flat while the run chose on mrr@10
        run = {"metric": details.get("metric"), "secondary_metric": details.get("secondary_metric")}
        for i, t in enumerate(details.get("trials") or []):
            trials.append({"at": e.at, "index": i, "best": i == details.get("best_index"), **run, **t})
    return {"generations": points, "tune_trials": trials}


def dead_letters(store: DocumentStore) -> list[dict[str, Any]]:
    return [{"doc": d.external_id, "source": d.source, "stage": d.stage, "reason": d.reason,
             "error": d.error, "at": d.at} for d in store.dead_letters()]


def console_router(store_of: Callable[[], DocumentStore], auth: Callable[..., Any] | None = None,
                   serving_of: Callable[[], dict[str, Any] | None] = lambda: None) -> APIRouter:
    """The console's routes. `auth` is the dependency `/search` uses; every data endpoint needs it.
    `serving_of`: the generation the service answers from (`generations`)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/console")
    def console_root() -> RedirectResponse:
        return RedirectResponse("/console/")

    @router.get("/console/")
    def page() -> FileResponse:
        return FileResponse(CONSOLE_DIR / "index.html", media_type="text/html")

    @router.get("/console/{name}")
    def asset(name: str) -> FileResponse:
        if name not in _ASSETS:
            raise HTTPException(404, f"no console asset {name!r}")
        return FileResponse(CONSOLE_DIR / name, media_type=_ASSETS[name])

    api = APIRouter(prefix="/console/api", dependencies=[Depends(auth)] if auth else [])

    def store_or_503() -> DocumentStore:
        store = store_of()
        if not store.initialised():
            raise HTTPException(503, "nothing has been synced yet: run `bindery sync` first")
        return store

    @api.get("/generations")
    def api_generations() -> dict[str, Any]:
        return generations(store_or_503(), serving_of())

    @api.get("/evals")
    def api_evals() -> dict[str, Any]:
        return evals(store_or_503())

    @api.get("/dead-letters")
    def api_dead_letters() -> list[dict[str, Any]]:
        return dead_letters(store_or_503())

    router.include_router(api)
    return router
