"""`bindery` — the operator CLI. Every mutating command runs the same Dagster job the UI runs.

Human output by default (orchestration.report), the JSON contract of docs/json-contract.md with
`--json`. `--config`, `--json` and `--debug` go before or after the command. Exit codes: 0
success, 1 a run or a gate failed (the reason on stderr in one line and in the JSON), 2 a usage or
configuration mistake (one line naming the key or argument), 130 interrupted. Nothing prints a
traceback unless `--debug`: `main` turns every error into one line.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from connectors.config import (
    AutomationConfig,
    BinderyConfig,
    TuneConfig,
    check_paths,
    check_stage_resources,
    load_config,
)
from connectors.errors import BinderyError, ConfigError, GateRefused, UsageError
from connectors.generations import keyword_missing_fields
from orchestration import report
from orchestration.cli_parser import ARGV, build_parser, parse_command_line, share_common_options
from orchestration.interrupts import quiet_interrupted_logging

if TYPE_CHECKING:
    from pathlib import Path

    from connectors.lifecycle import Lifecycle
    from connectors.store import ChunkRecord, DeadLetterRecord, DocumentRecord, DocumentStore, GenerationRecord
    from orchestration.runs import Runner, RunOutcome


class CommandFailed(Exception):
    """A command ran but did not succeed; carries the JSON to print."""

    def __init__(self, message: str, payload: dict[str, Any]):
        super().__init__(message)
        self.payload = payload


_DEBUG = False  # --debug: tracebacks and Dagster's full run log on the terminal


def _runner(cfg: BinderyConfig) -> Runner:
    from orchestration.runs import Runner

    return Runner(cfg, debug=_DEBUG)


# Commands that list sources: their folders must exist before a run starts.
_LISTING_COMMANDS = ("sync", "reindex", "plan")


_DEFAULT_CRON = AutomationConfig().reconcile_cron


def preflight(cfg: BinderyConfig, a: argparse.Namespace) -> None:
    """Configuration facts no schema can check, verified before anything runs, each a one-line
    ConfigError naming its key: the file system (`data_dir`, source roots) and the values only
    Dagster or the gate can judge (the reconcile cron, the gate metrics)."""
    from evals.metrics import METRIC_NAMES

    only: list[str] | None = None
    if a.command in ("sync", "plan", "query"):
        only = a.source or None
    elif a.command == "dlq":
        only = [a.source] if a.source else None
    if a.command == "plan" and a.kind == "reindex" and only:
        raise UsageError("--source: plan reindex covers every source (a reindex builds all of them); "
                          "--source is for plan sync")
    listing = a.command in _LISTING_COMMANDS or (a.command == "dlq" and a.action == "retry")
    for name in only or []:
        try:
            cfg.source(name)  # an unknown source is a usage error before any run
        except ConfigError as e:
            raise UsageError(f"--source: {e}") from None
    # plan and status write nothing: a fresh data_dir is checked, not made
    check_paths(cfg, only if a.command != "query" else None, roots=listing, create=a.command not in ("plan", "status"))
    if a.command in _LISTING_COMMANDS:
        check_stage_resources(cfg)  # a model that is not here, an unset API key: before any work
    if a.command in ("serve", "ui"):
        check_port(a.host, a.port)
    if a.command == "tune" or cfg.tune != TuneConfig():  # the defaults need no check (nor numpy's import)
        from evals.tune import check_budget, check_tune_config

        check_tune_config(cfg)
        if a.command == "tune" and a.budget:
            try:
                check_budget(a.budget, "--budget")
            except ConfigError as e:
                raise UsageError(str(e)) from None
    if cfg.automation.reconcile_cron != _DEFAULT_CRON:  # Dagster judges it; the default needs no Dagster import
        from orchestration.automation import check_cron

        check_cron(cfg.automation.reconcile_cron, "automation.reconcile_cron")
    for key, value in (("metric", cfg.gate.metric), ("secondary_metric", cfg.gate.secondary_metric)):
        if value not in METRIC_NAMES:
            raise ConfigError(f"gate.{key}: unknown metric {value!r} (one of: {', '.join(METRIC_NAMES)})")
        cutoff = int(value.rsplit("@", 1)[1])
        if cfg.gate.k < cutoff:  # the eval retrieves gate.k hits: fewer make value@N a value@k in disguise
            raise ConfigError(f"gate.k ({cfg.gate.k}) must be at least the cutoff of gate.{key} {value!r} ({cutoff}): "
                              f"the eval retrieves only gate.k hits per question")


def check_port(host: str, port: int) -> None:
    """`serve` and `ui` need their address free: a port in use is a one-line usage error before
    the service loads anything (uvicorn would load the model, then log the bind error and exit 3)."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UsageError(f"--host {host}: cannot resolve it ({e.strerror})") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:  # no interface of this machine has that address
                raise UsageError(f"--host {host}: {host}:{port} cannot be used: {e.strerror} "
                                 "(choose another --host)") from None
            what = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be used: {e.strerror}"
            raise UsageError(f"--port {port}: {host}:{port} {what} (choose another --port)") from None


def _store(cfg: BinderyConfig) -> DocumentStore:
    from connectors.store.ownership import open_store

    return open_store(cfg)


def _lifecycle(cfg: BinderyConfig) -> Lifecycle:
    """The generation lifecycle over this configuration's document store."""
    from connectors.lifecycle import Lifecycle

    return Lifecycle(cfg, _store(cfg))


def _source_names(cfg: BinderyConfig, only: list[str] | None) -> list[str]:
    """The partitions to run: one per source, or one per shard of a sharded source."""
    from connectors.shards import all_partition_keys

    if not cfg.sources:
        raise ConfigError("no sources configured: add one under `sources:` in the configuration")
    return all_partition_keys(cfg, [cfg.source(s).name for s in only] if only else None)


def cmd_sync(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    runner = _runner(cfg)
    if a.submit:
        return _submit(cfg, runner, a, "sync", _source_names(cfg, a.source), allow_mass_delete=a.allow_mass_delete)
    outcomes, seconds = runner.run_sources("sync", _source_names(cfg, a.source), allow_mass_delete=a.allow_mass_delete)
    store = _store(cfg)
    out = report.sync_summary(outcomes, seconds, store, cfg.source_names())
    if out["errors"]:
        raise CommandFailed("; ".join(f"{k}: {v}" for k, v in out["errors"].items()), out)
    return out


def cmd_reindex(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    if a.submit and a.promote and not a.wait:  # refused whatever the state: the options cannot work together
        raise UsageError("reindex --submit --promote needs --wait (the gate judges a finished candidate)")
    partitions = _source_names(cfg, None)  # no sources: refused before a generation row is made
    lifecycle = _lifecycle(cfg)
    live = lifecycle.live()
    stale: list[str] = []
    if live is not None and not lifecycle.config_drift():
        # a live generation of an older release: the same configuration, but an index without
        # fields this release reads (attribution lines, whole threads): rebuilding it is the upgrade
        stale = keyword_missing_fields(cfg, live.record)
        if not a.force and not stale and (nothing := lifecycle.nothing_to_reindex()):
            # not a failure: nothing to build or promote
            return {"candidate": None, "live": live.id, "changed_stages": [],
                    "message": f"{nothing} (use --force to rebuild anyway)"}
    if a.promote:
        check_eval_set(cfg, lifecycle.store)  # before the build, not after it
    if a.force and live is not None and not lifecycle.config_drift():  # recorded once the checks pass
        lifecycle.store.add_event("forced-rebuild", "operator rebuilt an identical candidate")
    elif stale and live is not None:
        lifecycle.store.add_event("index-upgrade", f"live generation {live.name}'s keyword index lacks "
                                  f"{', '.join(stale)}: rebuilt with this release's indexes")
    cand = lifecycle.ensure_candidate()
    runner = _runner(cfg)
    tags = {"bindery/candidate": cand.name}
    if a.submit and not a.wait:
        return _submit(cfg, runner, a, "reindex", partitions, tags=tags,
                       extra={"candidate": cand.id, "candidate_name": cand.name})
    if a.submit:
        outcomes, seconds = _submit_and_wait(runner, "reindex", partitions, tags=tags)
    else:
        outcomes, seconds = runner.run_sources("reindex", partitions, tags=tags)
    out = report.sync_summary(outcomes, seconds, lifecycle.store, cfg.source_names())
    if (row := lifecycle.store.get_generation(cand.id)) is not None and row.status == "dropped":
        raise CommandFailed(f"candidate {cand.name} was dropped while this reindex ran (`bindery discard`): "
                            "nothing of it is kept; its caches are, for the next reindex", out)
    # the very first generation binds itself when it is built: it is live, not a candidate
    first = live is None and out["generation"] == cand.id
    # nothing live and nothing bound: no source listed a document, so the first build holds
    # nothing a reader could open, and there is no candidate to promote either
    unbuilt = live is None and out["generation"] is None
    out["candidate"] = None if first or unbuilt else cand.id
    out["candidate_name"] = None if first or unbuilt else cand.name
    out["changed_stages"] = lifecycle.config_drift()
    if first:
        out["message"] = (f"first generation {cand.name} (id {cand.id}) is live: nothing was live to judge it "
                          "against, so there is no candidate to promote")
    elif unbuilt and not out["errors"]:
        out["message"] = "no generation was built, so there is none to promote"
    if stale:
        out["stale_index_fields"] = stale
    if out["candidate"] is not None and not out["errors"]:
        lifecycle.store.add_event("candidate-built", f"reindex built candidate {cand.name} (stages changed: "
                                  f"{', '.join(out['changed_stages']) or 'none'})")
    if out["errors"]:
        raise CommandFailed("; ".join(f"{k}: {v}" for k, v in out["errors"].items()), out)
    if a.promote and (first or unbuilt):
        out["promotion"] = None
    elif a.promote:
        try:
            out["promotion"] = cmd_promote(cfg, argparse.Namespace(force=False, reason=None, candidate=cand.id,
                                                                   by=None))
        except CommandFailed as e:  # built but not promoted: the build's summary and the gate's report
            out["promotion"] = e.payload
            raise CommandFailed(f"candidate {cand.name} built, not promoted: {e}", out) from None
        out["generation"] = out["promotion"]["live"]  # the live generation after the run: the promoted one
    return out


def cmd_plan(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    """What the next sync or reindex would do; writes nothing and starts no run."""
    from assets.runtime import Runtime
    from connectors.store import DocumentStore
    from connectors.store.ownership import check_owner
    from orchestration.plan import compute_plan

    rt = Runtime(cfg, DocumentStore.preview(cfg.database_url))  # no file, no schema, no migration written
    check_owner(cfg, rt.store, claim=False)
    if a.kind == "reindex" and (nothing := rt.lifecycle.nothing_to_reindex()):
        return {"kind": "reindex", "candidate": None, "message": nothing}
    history = None
    home = cfg.data_path / "dagster_home"
    if home.exists():  # past runs to learn from
        from orchestration.estimate import cached_throughput, throughput

        # what the last CLI run measured, unless the instance changed since or is not this one
        if os.environ.get("DAGSTER_HOME") in (None, str(home)):
            history = cached_throughput(home)
        if history is None:  # only then import Dagster
            from orchestration.instance import get_instance

            history = throughput(get_instance(cfg))
    _source_names(cfg, a.source)  # an unknown source is a usage error
    return compute_plan(cfg, rt, a.kind, a.source, allow_mass_delete=a.allow_mass_delete, history=history)


def _reply_pairs(cfg: BinderyConfig, store: DocumentStore, gen: GenerationRecord,
                 docs: list[DocumentRecord], by_id: dict[str, str]) -> list[tuple[str, str]]:
    """(reply, the message it replies to) among the corpus's e-mails, named as `by_id` names
    documents, from the parse metadata the index stage reads (`assets.index_stage.message_keys`)."""
    from assets.index_stage import message_keys
    from assets.runtime import Runtime

    keys = message_keys(Runtime(cfg, store), docs, gen.stage_versions["parse"])
    doc_of_message = {mk.message_id: by_id[did] for did, mk in keys.items() if mk.message_id}
    return [(by_id[did], doc_of_message[mk.reply_to]) for did, mk in keys.items()
            if mk.reply_to in doc_of_message and doc_of_message[mk.reply_to] != by_id[did]]


def cmd_evalset(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    """`bindery evalset draft`: proposed eval questions from the live generation's chunks, into a
    JSONL file for a person to review (it never touches gate.queries)."""
    from collections import Counter
    from pathlib import Path

    from assets.index_stage import indexed_chunks
    from connectors.acl import allows
    from evals.draft import draft_cases

    out = Path(a.out)
    if a.out == "-":
        raise UsageError("--out -: the draft is a file to review and keep, not output; give its path")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder: give the path of a JSONL file to write")
    if out.exists() and not a.force:
        raise UsageError(f"--out {out} already exists (pass --force to overwrite it)")
    try:  # before any drafting (an LLM writer spends money): a place the file cannot go is a usage error
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create its folder: {e.strerror or e}") from None
    store = _store(cfg)
    gen = _generation(cfg, store, "live")
    every = store.documents()
    documents = [d for d in every if a.principal is None or allows(d.acl, a.principal)]
    chunks = indexed_chunks(store, gen, documents)  # the text the live generation serves, no other
    held = {c.doc_id for c in chunks}
    documents = [d for d in documents if d.doc_id in held]
    # a path two sources both hold is named `source:path`, as `bindery query` prints it: by the
    # path alone their chunks were drafted as one document and either file answered its questions
    paths = Counter(d.external_id for d in documents)
    docs = {d.doc_id: d.external_id if paths[d.external_id] == 1 else f"{d.source}:{d.external_id}" for d in documents}
    if a.principal is not None:  # the questions and their answers are the documents' own words
        chunks = _readable_chunks(store, gen, chunks, every, a.principal)
    by_doc: dict[str, list[ChunkRecord]] = {}
    for c in chunks:
        by_doc.setdefault(docs[c.doc_id], []).append(c)
    writer = None
    if cfg.stages.context.provider == "anthropic":
        from connectors.questions import AnthropicQuestionWriter

        writer = AnthropicQuestionWriter(cfg.stages.context)
    try:
        replies = _reply_pairs(cfg, store, gen, documents, docs)
        cases = draft_cases(by_doc, max_cases=a.max, writer=writer, replies=replies)
    finally:
        if writer is not None:
            writer.close()
    try:
        _write_private(out, "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write it: {e.strerror or e}") from None
    return {"out": str(out), "cases": len(cases), "by_kind": dict(Counter(c["category"] for c in cases)),
            "provider": "anthropic" if writer is not None else "offline", "generation": gen.id,
            "principals": a.principal}


def _readable_chunks(store: DocumentStore, gen: GenerationRecord, chunks: list[ChunkRecord],
                     documents: list[DocumentRecord], principal: str) -> list[ChunkRecord]:
    """The chunks `principal` may read whole: an AsciiDoc page's chunks hold the text of the files
    its parse read in place (`included`), each of which must be readable too, as the query service
    checks. Judged by the parse the chunks were cut from, not the page's current record: a page
    whose new content failed to parse keeps older chunks, and what they included."""
    from assets.index_stage import cut_heads, included_ids
    from connectors.acl import allows

    by_id = {d.doc_id: d for d in documents}
    by_doc: dict[str, list[ChunkRecord]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    heads = cut_heads(store, {did: (by_id[did], cs) for did, cs in by_doc.items()}, gen.stage_versions["parse"])
    ok = {did for did in by_doc if all(dep in by_id and allows(by_id[dep].acl, principal)
                                        for dep in included_ids(by_id[did], heads.get(did, (None, {}))[1]))}
    return [c for c in chunks if c.doc_id in ok]


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner alone, as data_dir is: a draft quotes the
    documents it was made from, whatever their ACLs."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(fd, 0o600)  # a file --force overwrites keeps its old mode otherwise
        f.write(text)


def check_eval_set(cfg: BinderyConfig, store: Any) -> None:
    """The gate's eval set, checked before anything is built or judged: `gate.queries` unset
    (once a generation is live: the gate needs it), missing, unreadable or malformed is a
    configuration mistake (exit 2) naming the key, not a failed promotion run."""
    if cfg.gate.queries:
        _check_queries(cfg, None)
    elif store.get_binding() is not None:
        raise ConfigError("gate.queries: no eval set configured, and the gate judges a candidate against live on it "
                          "(`bindery evalset draft` proposes one; or promote with --force --reason)")


def cmd_promote(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    if a.force and not a.reason:
        raise UsageError("a forced promotion needs --reason")
    lifecycle = _lifecycle(cfg)
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
    res = _runner(cfg).run_generation("promote", cand.name, run_config=run_config)
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


_LEFT_RUNNING: list[str] = []  # submitted runs a Ctrl-C stopped `--wait` from following


def _submit_and_wait(runner: Runner, job: str, sources: list[str], **kw: Any) -> tuple[list[RunOutcome], float]:
    """Enqueue runs for the daemon and follow them to the end, progress on stderr. Ctrl-C stops
    the waiting, not the runs: the daemon has them, and the one line says so (`_interrupted`)."""
    runs = runner.submit_sources(job, sources, **kw)
    try:
        return runner.follow(runs, echo=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        _LEFT_RUNNING[:] = [r.run_id for r in runs if not runner.finished(r.run_id)]
        raise


def _submit(cfg: BinderyConfig, runner: Runner, a: argparse.Namespace, job: str, sources: list[str],
            extra: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any] | None:
    """`--submit`: enqueue one run per source for the daemon. With `--wait`, follow them and
    answer like an in-process sync (non-zero exit if any failed); without, list what was queued."""
    if not runner.daemon_alive():  # said, not discovered as a run that never leaves QUEUED
        print("warning: no Dagster daemon has reported to this instance in the last 2 minutes; the runs wait "
              "in the queue until one runs (`bindery ui` starts one, or `dagster-daemon run`)", file=sys.stderr)
    if not a.wait:
        from orchestration.runs import runs_table

        runs = runner.submit_sources(job, sources, **kw)
        rows = [{"run_id": r.run_id, "status": "QUEUED", "job": r.job, "partition": r.partition} for r in runs]
        if a.json:
            return {"submitted": rows, **(extra or {})}
        table = runs_table([{**r, "launched_by": "cli-submit", "created_at": time.time(), "seconds": None}
                            for r in rows])
        print(f"{table}\nqueued for the Dagster daemon: follow with `bindery runs` or the UI")
        return None
    outcomes, seconds = _submit_and_wait(runner, job, sources, **kw)
    out = report.sync_summary(outcomes, seconds, _store(cfg), cfg.source_names())
    if out["errors"]:
        raise CommandFailed("; ".join(f"{k}: {v}" for k, v in out["errors"].items()), out)
    return out


def cmd_runs(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    """Queued, running and finished runs of the instance, newest first."""
    from orchestration.instance import get_instance
    from orchestration.runs import cancel_runs, fail_dead_runs, list_runs, runs_table

    if a.cancel:
        if a.status:
            raise UsageError("--status: lists runs; --cancel cancels the runs it names (use one or the other)")
        try:
            cancelled = cancel_runs(get_instance(cfg), a.cancel)
        except ConfigError as e:
            raise UsageError(str(e)) from None
        if a.json:
            return {"cancelled": cancelled}
        for c in cancelled:
            print(f"{c['run_id'][:8]}: {'cancelled' if c['cancelled'] else 'could not be cancelled'} ({c['status']})")
        return None
    instance = get_instance(cfg)
    fail_dead_runs(instance)
    rows = list_runs(instance, limit=a.limit, statuses=a.status)
    if a.json:
        return {"runs": rows}
    if a.status and not rows:  # the filter matched nothing: the instance may well hold other runs
        print(f"no runs with status {' or '.join(a.status)}")
        return None
    print(runs_table(rows))
    return None


def cmd_rollback(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    # "promoted" stays in the JSON (the contract's promote/rollback shape); people read "rolled back"
    return {**_lifecycle(cfg).rollback(by=a.by), "rolled_back": True}


def cmd_discard(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    return _lifecycle(cfg).discard(by=a.by)


def _generation(cfg: BinderyConfig, store: Any, which: str) -> GenerationRecord:
    """The row of `--generation`: live, candidate or an id (connectors.lifecycle), not a dropped one."""
    from connectors.lifecycle import Lifecycle

    gen = Lifecycle(cfg, store).resolve_searchable(which)
    if gen.status == "retired":  # searchable, but frozen: say so before its answers are taken as current
        print(f"note: generation {gen.id} ({gen.name}) is retired: its indexes have not received the deletes, "
              "edits and access changes since it retired", file=sys.stderr)
    return gen


def _check_queries(cfg: BinderyConfig, queries: str | None) -> None:
    """The eval set a command asks (`queries`, from --queries, else gate.queries), checked before
    any work: its mistake names where the path came from, `--queries` (a usage error) or
    `gate.queries` (a configuration error)."""
    from evals.evalset import load_eval_set

    path = queries or cfg.gate.queries
    if not path:
        raise ConfigError("no eval set: pass --queries FILE or set gate.queries in bindery.yaml")
    try:
        load_eval_set(path)
    except ConfigError as e:
        if queries:
            raise UsageError(f"--queries: {e}") from None
        raise ConfigError(f"gate.queries: {e}") from None


def cmd_eval(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from evals.promotion import evaluate

    _check_queries(cfg, a.queries)
    store = _store(cfg)
    gen = _generation(cfg, store, a.generation)
    rep = evaluate(cfg, store, gen, queries=a.queries)
    return {"generation": gen.id, "generation_name": gen.name, **rep.to_json(),
            "_table": report.eval_table(rep)}


def cmd_tune(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    """Search query-time retrieval settings on the eval set (see `evals.tune`); store a `tune`
    event with every trial, print the trials table (or return it with --json)."""
    from evals.tune import DEFAULT_SPACE, format_trials, parse_budget, split_space
    from orchestration.tuning import tune_generations, tune_query_time

    _check_queries(cfg, a.queries)
    store = _store(cfg)
    gen = _generation(cfg, store, a.generation)
    budget = parse_budget(a.budget) if a.budget else None
    ingestion, _ = split_space(cfg.tune.space or DEFAULT_SPACE)
    built = None
    if ingestion or a.build:
        if gen.status != "live":
            raise UsageError("tune --generation: ingestion settings and --build are tried against the live "
                             "generation (leave --generation out)")
        result, built = tune_generations(cfg, store, gen, build=a.build, budget=budget, seed=a.seed,
                                         queries=a.queries)
    else:
        result = tune_query_time(cfg, store, gen, budget=budget, seed=a.seed, queries=a.queries)
    out = result.to_json()
    out["built"] = {"id": built.id, "name": built.name} if built else None
    best = out["best"]
    store.add_event("tune", f"{len(result.trials)} trials on generation {gen.name}; best "
                    f"{best['settings']} (tune {result.metric} {best['tune'][result.metric]:.3f}, "
                    f"check {best['check'][result.metric]:.3f})", details={**out, "generation": gen.id})
    if a.json:
        return {"generation": gen.id, **out}
    print(format_trials(result))
    for w in result.warnings:
        print(f"warning: {w}")
    where = cfg.config_path or "bindery.yaml"
    if built:
        print(f"built candidate {built.name}: copy these settings into {where}, then `bindery promote` "
              f"(the gate judges it)\n{report.settings_yaml(best['settings'])}")
    elif a.build:
        changed = {k: v for k, v in best["settings"].items() if result.trials[0].settings.get(k) != v}
        print(f"the best trial changes only query-time settings: nothing to build; set them in {where} (they "
              f"take effect without a new generation)\n{report.settings_yaml(changed)}" if changed
              else "live, as the configuration stands, scored best: nothing to build")
    return None


def cmd_query(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from connectors.errors import QueryError
    from query_service.retrieval import GenerationRetriever, check_query, make_filters

    k = a.k or cfg.query.k
    # the text and k are checked as the retriever checks them, before the generation or the
    # embedding model is loaded: a mistake there is a usage error
    try:
        check_query(a.text, 1)
    except QueryError as e:
        raise UsageError(str(e)) from None
    try:
        check_query("k", k)
    except QueryError as e:
        raise UsageError(f"-k: {e}") from None
    store = _store(cfg)
    gen = _generation(cfg, store, a.generation)
    binding = store.get_binding()
    version = binding.version if binding and binding.generation_id == gen.id else None
    r = GenerationRetriever(cfg, gen, store, version=version)
    try:
        filters = make_filters(a.principal, a.source or None, known_sources=[s.name for s in cfg.sources])
        return r.search(a.text, k, filters, neighbours=a.neighbours).to_json()
    finally:
        r.close()


def cmd_status(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from pathlib import Path

    from sqlalchemy.engine import make_url

    from connectors.store import DocumentStore

    url = make_url(cfg.database_url)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists():
        # a fresh data_dir (a first look, a mistyped --config): shown empty, no database file made
        return report.status(cfg, DocumentStore.preview(cfg.database_url))
    return report.status(cfg, _store(cfg))


def cmd_dlq(cfg: BinderyConfig, a: argparse.Namespace) -> Any:
    store = _store(cfg)
    if a.action == "retry":
        return _dlq_retry(cfg, store, a)
    rows = [{"doc": d.external_id, "source": d.source, "stage": d.stage, "reason": d.reason,
             "error": d.error, "at": d.at} for d in _dead_letters_chosen(store, a)]
    return report.DeadLetterDetail(rows) if a.doc else rows


def _dead_letters_chosen(store: DocumentStore, a: argparse.Namespace) -> list[DeadLetterRecord]:
    """The dead letters of --source, and of the --doc paths or doc ids when given (each must
    name one: a typo must not read as "nothing there")."""
    entries = store.dead_letters(source=a.source)
    if not a.doc:
        return entries
    entries = [e for e in entries if e.external_id in a.doc or e.doc_id in a.doc]
    if unmatched := [d for d in a.doc if not any(d in (e.external_id, e.doc_id) for e in entries)]:
        where = f" of source {a.source!r}" if a.source else ""
        raise UsageError(f"--doc {', '.join(unmatched)}: no dead letter{where} has that path or doc id")
    return entries


def _dlq_retry(cfg: BinderyConfig, store: DocumentStore, a: argparse.Namespace) -> dict[str, Any]:
    """Forget cached failures of the chosen dead letters and sync their sources again;
    documents that now succeed leave the table."""

    from connectors.store import schema as t

    if not a.doc and not a.all:
        raise UsageError("say which: `bindery dlq retry --doc PATH` or `bindery dlq retry --all`")
    entries = _dead_letters_chosen(store, a)
    # a source no longer configured is not synced: its dead letters wait for `bindery gc`
    configured = set(cfg.source_names())
    removed = sorted({e.source for e in entries} - configured)
    if removed and a.doc and not any(e.source in configured for e in entries):
        raise UsageError(f"--doc: source {', '.join(map(repr, removed))} is no longer configured; nothing to retry "
                         "(`bindery gc` removes its documents and dead letters)")
    entries = [e for e in entries if e.source in configured]
    if not entries:
        return {"retried": 0, "resolved": 0, "still_failing": []}
    hashes = sorted({e.content_hash for e in entries if e.content_hash})
    with store.tx() as c:
        for i in range(0, len(hashes), 500):
            c.execute(t.parses.delete().where(t.parses.c.content_hash.in_(hashes[i:i + 500]),
                                              t.parses.c.status != "ok"))
    runner = _runner(cfg)
    # every shard of a sharded source: a dead letter names its source, not its shard
    outcomes, seconds = runner.run_sources("sync", _source_names(cfg, sorted({e.source for e in entries})))
    # a retry is a sync of those sources: whatever else it changed (documents deleted or edited
    # since the last sync) and why it failed (a source down, the delete guard) is said here too
    sync = report.sync_summary(outcomes, seconds, store, cfg.source_names())
    still = {d.doc_id for d in store.dead_letters()}
    left = [e.external_id for e in entries if e.doc_id in still]
    out = {"retried": len(entries), "resolved": len(entries) - len(left), "still_failing": left,
           "sync": {k: v for k, v in sync.items() if not k.startswith("_")}}
    if sync["errors"]:
        raise CommandFailed("the retry's sync failed: " + "; ".join(f"{k}: {v}" for k, v in sync["errors"].items()),
                            out)
    if left:
        # names as `dlq list` shows them: an escape sequence in a file name must not reach the terminal
        raise CommandFailed(f"{len(left)} of {len(entries)} still failing: "
                            f"{', '.join(report.shown(n) for n in left[:5])}", out)
    return out


def cmd_verify(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from orchestration.verify import verify

    out = verify(cfg, _store(cfg), repair=a.repair)
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

    lifecycle = _lifecycle(cfg)

    dropped = lifecycle.collect_garbage()  # first: what only dropped generations used goes with them
    # then their caches are orphans
    removed, warnings = remove_unconfigured_sources(Runtime(cfg, lifecycle.store))
    started = time.time()  # embeddings a concurrent run writes from now on are not judged
    in_use = embedded_text_hashes(lifecycle.store)
    return {"dropped": dropped, "removed_sources": removed,
            "caches": lifecycle.store.gc_orphan_caches(in_use, created_before=started),
            **({"warnings": warnings} if warnings else {})}


def cmd_serve(cfg: BinderyConfig, a: argparse.Namespace) -> None:
    import uvicorn

    from query_service.app import server_config
    from query_service.auth import auth_warnings

    config = server_config(cfg, a.host, a.port)
    # the app opens the store as it starts: a database that is down would end in uvicorn's
    # startup traceback and exit 3; opened here it is one line and exit 1, like every command
    _store(cfg).dispose()
    for warning in auth_warnings(cfg.query.auth):
        print(warning, file=sys.stderr)
    # Ctrl-C: uvicorn shuts down cleanly, then raises the interrupt again, and `main` ends
    # with one line and 130, so a supervisor tells a stop from a normal end (SIGTERM: uvicorn
    # shuts down, then the process ends by that signal, as a service manager expects)
    if not a.debug:
        from orchestration.interrupts import quiet_interrupted

        quiet_interrupted(logging.getLogger("uvicorn.error"))
    uvicorn.Server(config).run()


def cmd_ui(cfg: BinderyConfig, a: argparse.Namespace) -> None:
    import subprocess
    from pathlib import Path

    from orchestration.instance import checked_home

    env = {**os.environ, "BINDERY_CONFIG": cfg.config_path or "", "DAGSTER_HOME": str(checked_home(cfg)),
           # `dagster dev` opens by telling the operator to run `dg dev`, a tool Bindery does not use
           "PYTHONWARNINGS": ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"),
                                                    "ignore:Function `dev_command` is superseded"]))}
    # the configured sources' partitions, as every command that runs jobs registers them (and the
    # runs of dead CLI processes marked failed): on a fresh instance the UI could not launch
    # `sync` for any source ("Nonexistent partition keys") until a CLI run or the sensor did it
    _runner(cfg)
    # the names the UI answers (DNS rebinding, orchestration/ui_server.py): its loopback names on
    # a loopback address, with those named by --allow-host; on another address any, unless named
    from orchestration.ui_server import ALLOWED_HOSTS_ENV
    from query_service.middleware import LOOPBACK_NAMES, loopback_hosts

    own = loopback_hosts(a.host)
    if own is not None or a.allow_host:
        env[ALLOWED_HOSTS_ENV] = json.dumps([*(own or LOOPBACK_NAMES), *a.allow_host])
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "orchestration.ui_server", "dev", "-w", str(root / "workspace.yaml"),
           "-h", a.host, "-p", str(a.port)]
    # dagster dev ignores SIGINT/SIGTERM when its parent ignored them; restore the default.
    proc = subprocess.Popen(cmd, env=env, cwd=root, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # a service manager stops `bindery ui` with SIGTERM (SIGHUP: its terminal closed): pass on a
    # SIGTERM and wait, so `dagster dev` takes its webserver, daemon and code server down with it
    # rather than leave them running, holding the port and launching queued runs. SIGTERM for
    # both: dagster dev shuts down on it, while a SIGHUP kills it outright and orphans the rest
    forwarded = {s: signal.signal(s, lambda _signum, _frame: proc.send_signal(signal.SIGTERM))
                 for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        raise
    finally:
        for s, handler in forwarded.items():
            signal.signal(s, handler)


def cmd_hash_key(a: argparse.Namespace) -> dict[str, str]:
    """The configured form of a query-service API key (read from stdin, or a new random one)."""
    from query_service.auth import hash_key, new_key

    key = new_key() if a.new else sys.stdin.readline().strip()
    if not key:
        raise UsageError("no key on standard input (pipe one in, or pass --new to make one)")
    return {"key": key, "hash": hash_key(key)} if a.new else {"hash": hash_key(key)}


COMMANDS: dict[str, Callable[[BinderyConfig, argparse.Namespace], Any]] = {
    "sync": cmd_sync, "reindex": cmd_reindex, "promote": cmd_promote, "rollback": cmd_rollback,
    "discard": cmd_discard, "eval": cmd_eval, "query": cmd_query, "status": cmd_status, "dlq": cmd_dlq,
    "verify": cmd_verify, "gc": cmd_gc, "serve": cmd_serve, "ui": cmd_ui, "runs": cmd_runs, "plan": cmd_plan,
    "evalset": cmd_evalset, "tune": cmd_tune,
}


_COMMAND: list[str] = [""]  # the command main() ran, for entry()


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before a command began (its arguments, its modules): `_main` has the rest
        print("bindery: interrupted while starting; nothing was done", file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    share_common_options(parser)
    ARGV[:] = sys.argv[1:] if argv is None else argv
    a = parse_command_line(parser, ARGV)
    for key, default in {"config": None, "json": False, "debug": False}.items():
        a.__dict__.setdefault(key, default)
    if a.command == "query" and not a.principal:
        a.principal = ["*"]
    if a.__dict__.get("wait") and not a.submit:
        if a.json:
            print(json.dumps({"error": "--wait needs --submit", "reason": "usage"}))
        print(f"bindery {a.command}: --wait needs --submit", file=sys.stderr)
        return 2
    global _DEBUG
    _DEBUG = a.debug
    _COMMAND[0] = a.command
    if not a.debug:
        quiet_interrupted_logging()
    if a.command in _RUN_COMMANDS:
        from orchestration.terminal_progress import show_progress

        show_progress()
    try:
        code = _dispatch(a)
        sys.stdout.flush()  # a pipe's reader that left shows here, inside the handlers below
        return code
    except KeyboardInterrupt:
        print(f"bindery {a.command}: {_interrupted(a.command)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `bindery status | head`: the reader left; say nothing, as cat would
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
        return 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away
    except Exception as e:  # an internal error: one line, the traceback only on request
        if a.debug:
            raise
        from connectors.errors import out_of_space

        if full := out_of_space(e, _DATA_DIR[0]):  # not internal: the disk is full
            print(f"bindery {a.command}: {full}", file=sys.stderr)
            return 1
        print(f"bindery {a.command}: internal error: {type(e).__name__}: {_one_line(str(e))} "
              "(run again with --debug for the traceback)", file=sys.stderr)
        return 1


_DATA_DIR: list[str | None] = [None]  # the loaded configuration's data_dir, once there is one

# Commands that run the ingestion stages and so show their progress.
_RUN_COMMANDS = ("sync", "reindex", "dlq")


def _interrupted(command: str) -> str:
    """The one line after Ctrl-C. After a run: what the stages had stored (each stage stores in
    small batches, one transaction each, so the store is consistent and the next run resumes
    there). The servers have shut down cleanly; other commands stored nothing."""
    if command in ("serve", "ui"):
        return "stopped"
    if _LEFT_RUNNING:
        return (f"stopped waiting; the daemon still has {len(_LEFT_RUNNING)} submitted run(s), which go on: "
                f"{', '.join(r[:8] for r in _LEFT_RUNNING)} (`bindery runs` follows them, `bindery runs --cancel "
                "ID` stops one)")
    if command not in _RUN_COMMANDS:
        return "interrupted"
    from assets.progress import stored_counts

    counts = stored_counts()
    kept = ", ".join(f"{stage} {n:,}" for stage, n in counts.items()) or "nothing new"
    return f"interrupted; stored before stopping: {kept}; the next run resumes from there"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def check_options(a: argparse.Namespace) -> None:
    """Options that mean nothing beside the others given: a usage error, never silently ignored
    (an operator who types them expects them to do something)."""
    if getattr(a, "config", None) is not None and not str(a.config).strip():
        raise UsageError("--config: the path is empty (an unset variable?); name the configuration file")
    if a.command == "dlq" and a.action == "list" and a.all:
        raise UsageError("--all: only with `bindery dlq retry` (the list shows every dead letter; --source "
                         "narrows it, --doc shows one whole)")
    if a.command == "plan" and a.kind == "reindex" and a.allow_mass_delete:
        raise UsageError("--allow-mass-delete: a reindex deletes nothing from live (it builds a new generation); "
                         "the option is for plan sync")
    if a.command == "promote" and a.reason and not a.force:
        raise UsageError("--reason: only with --force (it records why a refused candidate was promoted anyway)")


def _dispatch(a: argparse.Namespace) -> int:
    """Run one command; map Bindery's errors to exit codes (1 failed, 2 usage/configuration)."""
    try:
        check_options(a)
        if a.command == "hash-key":  # needs no configuration
            result = cmd_hash_key(a)
        else:
            cfg = load_config(a.config)
            _DATA_DIR[0] = str(cfg.data_path)  # where a full disk is looked for (`_main`)
            preflight(cfg, a)
            result = COMMANDS[a.command](cfg, a)
    except CommandFailed as e:
        e.payload.setdefault("error", str(e))
        _emit(a, e.payload)
        print(f"bindery {a.command}: {_one_line(str(e))}", file=sys.stderr)
        return 1
    except GateRefused as e:
        _emit(a, {"promoted": False, "error": str(e), "report": e.report})
        print(f"bindery {a.command}: {_one_line(str(e))}", file=sys.stderr)
        return 1
    except ConfigError as e:  # a UsageError too: the command line, not the file, is wrong
        # config_from_dict's messages already open with "invalid configuration:"
        plain = isinstance(e, UsageError) or str(e).startswith("invalid configuration")
        what = "" if plain else "configuration error: "
        if a.json:  # the same words as on stderr (docs/operations.md names both openings)
            print(json.dumps({"error": f"{what}{e}", "reason": e.reason}))
        print(f"bindery {a.command}: {what}{_one_line(str(e))}", file=sys.stderr)
        return 2
    except BinderyError as e:
        if a.json:
            print(json.dumps({"error": str(e), "reason": e.reason}))
        print(f"bindery {a.command}: {_one_line(str(e))}", file=sys.stderr)
        return 1
    if result is not None:
        _emit(a, result)
    return 0


def _emit(a: argparse.Namespace, result: Any) -> None:
    if a.json:
        if isinstance(result, dict):
            result = {k: v for k, v in result.items() if not k.startswith("_")}
        print(json.dumps(result, indent=2, default=str))
    else:
        print(report.human(a.command, result))


# Commands that write nothing: nothing of theirs can wait on a finaliser at exit.
_READ_ONLY = frozenset({"plan", "status", "query", "runs"})


def entry() -> NoReturn:
    """The `bindery` console script: `main`, with the cyclic garbage collector kept off what
    lives until exit anyway. The imports are frozen first (module-level objects live as long as
    the process). After a read-only command everything is: at exit the interpreter collects
    again and again while it tears the modules down, walking every object the command made
    (~0.2 s after a plan of 300 documents, a tenth of the plan); frozen objects are still freed,
    flushed and closed by reference counting, only not scanned for cycles. A command that writes
    keeps the full final collection. Not in `main`: tests call it in-process."""
    gc.freeze()
    code = main()
    if _COMMAND[0] in _READ_ONLY:
        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry()
