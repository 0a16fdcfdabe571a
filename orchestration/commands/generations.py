"""The commands over generations: `promote` (the gate, then the binding flip), `rollback`,
`discard`, `status`, `verify` (indexes against the document store) and `gc`."""

from __future__ import annotations

import argparse
import time
from typing import Any

from connectors.config import BinderyConfig
from connectors.errors import UsageError
from orchestration import summaries
from orchestration.commands.common import CommandFailed, check_eval_set, lifecycle_for, new_runner, store_for

__all__ = ["cmd_discard", "cmd_gc", "cmd_promote", "cmd_rollback", "cmd_status", "cmd_verify"]


def cmd_promote(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    if a.force and not a.reason:
        raise UsageError("a forced promotion needs --reason")
    lifecycle = lifecycle_for(cfg)
    store = lifecycle.store
    if not a.force:
        check_eval_set(cfg, store)  # a configuration mistake: exit 2 before anything else
    cand = lifecycle.resolve(a.candidate)  # fails early and clearly when there is none
    # the live or a dropped generation is refused before any judging: the gate would otherwise
    # record a verdict on live (live against itself, or "gate not run") and status would show it
    lifecycle.check_promotable(cand, force=bool(a.force), reason=a.reason)
    from connectors.lifecycle import operator_name
    from connectors.versions import settings_differences

    conf = {"force": bool(a.force), "reason": a.reason, "forced_by": operator_name(a.by)}  # checked before judging
    run_config = {"ops": {"generation_eval": {"config": conf}, "index_binding": {"config": conf}}}
    started = time.time()
    res = new_runner(cfg).run_generation("promote", cand.name, run_config=run_config)
    b = store.get_binding()
    judged = store.get_generation(cand.id)
    rep = (judged.eval_report if judged else None) or {}
    if rep.get("judged_at", started) < started:  # a verdict of an earlier run: this one judged nothing
        rep = {}
    out: dict[str, Any] = {"promoted": res.success, "live": b.generation_id if b else None,
           "previous": b.previous_generation_id if b else None, "candidate": cand.id, "report": rep}
    if not res.success:
        out["forced"] = False  # stable keys (docs/json-contract.md), refusal or not
        out["warnings"] = []
        out["error"] = res.error
        raise CommandFailed(res.error or "promotion failed", out)
    flip = res.metadata.get("index_binding", {})
    out["forced"] = bool(flip.get("forced"))
    out["gate_check"] = res.checks.get("eval_gate")  # a forced flip shows as a failed WARN check, with why
    out["warnings"] = list(flip.get("warnings") or [])  # sources a flip back to an older generation leaves out
    changed = lifecycle.drift(cand.stage_versions)
    if changed and (differs := settings_differences(cand.stage_configs, cfg.stages, only=changed)):
        # a `tune --build` candidate, or one built before bindery.yaml changed again: live now
        # runs settings the file does not hold, and the next reindex would build the file's
        out["warnings"].append(f"generation {cand.name} went live with settings bindery.yaml does not hold "
                               f"({'; '.join(differs)}): copy them into it, or the next `bindery reindex` "
                               "builds the configuration's instead")
    return out


def cmd_rollback(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    lifecycle = lifecycle_for(cfg)
    out = lifecycle.rollback(by=a.by)
    try:  # the flip is made; the UI's record of it must not undo or hide that
        from orchestration.instance import get_instance
        from orchestration.promotion import rollback_materialization

        get_instance(cfg).report_runless_asset_event(rollback_materialization(lifecycle.store, out))
    except Exception as e:  # the Dagster instance down, say: the rollback stands
        out["warnings"] = [*out.get("warnings", []), f"the rollback is made, but the Dagster UI does not show it: {e}"]
    # "promoted" stays in the JSON (the contract's promote/rollback shape); people read "rolled back"
    return {**out, "rolled_back": True}


def cmd_discard(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    return lifecycle_for(cfg).discard(by=a.by)


def sync_blockers(cfg: BinderyConfig) -> list[str]:
    """Why a sync would stop at its configuration check now, each as that check says it: what
    `status` shows beside the state (it said "run `bindery sync`" on a configuration a sync
    refuses, a new user's pass). Status itself still answers: a source's folder may be
    unmounted for a while, and the state is worth seeing then most."""
    from collections.abc import Callable

    from connectors.config import check_paths, check_sources, check_stage_resources
    from connectors.errors import ConfigError

    # the checks a sync's preflight makes (`cli.preflight`); with no source the others say nothing
    try:
        check_sources(cfg)
    except ConfigError as e:
        return [str(e)]
    out = []
    checks: tuple[Callable[[], None], ...] = (lambda: check_paths(cfg, roots=True, create=False),
                                              lambda: check_stage_resources(cfg))
    for check in checks:
        try:
            check()
        except ConfigError as e:
            out.append(str(e))
    return out


def cmd_status(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    out = _status(cfg)
    out["sync_blockers"] = sync_blockers(cfg)
    return out


def _status(cfg: BinderyConfig) -> dict[str, Any]:
    from pathlib import Path

    from sqlalchemy.engine import make_url

    from connectors.store import DocumentStore

    url = make_url(cfg.database_url)
    if not cfg.data_path.exists() or (
            url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists()):
        # a fresh data_dir (a first look, a mistyped --config): shown as the store has it, or
        # empty, with no data_dir, database file or store claim made; a store another data_dir
        # owns is refused all the same, as `plan` refuses it
        from connectors.store.ownership import check_owner

        store = DocumentStore.preview(cfg.database_url)
        check_owner(cfg, store, claim=False)
        return summaries.status(cfg, store)
    return summaries.status(cfg, store_for(cfg))


def cmd_verify(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from orchestration.verify import verify

    out = verify(cfg, store_for(cfg), repair=a.repair)
    if not out["consistent"] and not a.repair:
        stopped = any(not g["consistent"] and g.get("pending") for g in out["generations"].values())
        # a sync cancelled or killed before its index step leaves exactly such drift, and the next
        # sync writes it: a whole rebuild is the wrong first step then (a Dagster UI pass)
        raise CommandFailed("indexes drifted from the document store (" + (
            "documents changed since their indexing: if a sync was stopped, run `bindery sync`, then verify "
            "again; `bindery verify --repair` rebuilds what is still drifted)" if stopped else
            "run `bindery verify --repair`)"), out)
    return out


def cmd_gc(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from assets.embed_stage import embedded_text_hashes
    from assets.runtime import Runtime
    from orchestration.removed_sources import remove_unconfigured_sources
    from orchestration.tuning import remove_trial_configs

    lifecycle = lifecycle_for(cfg)

    dropped = lifecycle.collect_garbage()  # first: what only dropped generations used goes with them
    # then their caches are orphans
    removed, warnings = remove_unconfigured_sources(Runtime(cfg, lifecycle.store))
    started = time.time()  # embeddings a concurrent run writes from now on are not judged
    in_use = embedded_text_hashes(lifecycle.store)
    return {"dropped": dropped, "removed_sources": removed,
            "caches": lifecycle.store.gc_orphan_caches(in_use, created_before=started),
            "tune_configs": remove_trial_configs(cfg),
            **({"warnings": warnings} if warnings else {})}
