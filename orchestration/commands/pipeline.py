"""The commands that run the ingestion jobs, or say what a run would do: `sync`, `reindex`,
`plan`, `runs` (the instance's runs, cancelling them) and `dlq` (dead letters, and retrying them).
Each run is the Dagster job the UI launches; `--submit` queues it for the daemon instead."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from connectors.config import BinderyConfig
from connectors.errors import ConfigError, UsageError
from connectors.generations import keyword_missing_fields
from orchestration import report, summaries
from orchestration.commands.common import (
    CommandFailed,
    check_eval_set,
    lifecycle_for,
    new_runner,
    partitions_of,
    require_data_dir,
    store_for,
)
from orchestration.commands.generations import cmd_promote

if TYPE_CHECKING:
    from connectors.store import DeadLetterRecord, DocumentStore
    from orchestration.runs import Runner, RunOutcome

__all__ = ["LEFT_RUNNING", "cmd_dlq", "cmd_plan", "cmd_reindex", "cmd_runs", "cmd_sync"]


def cmd_sync(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    runner = new_runner(cfg)
    if a.submit:
        return _submit(cfg, runner, a, "sync", partitions_of(cfg, a.source), allow_mass_delete=a.allow_mass_delete)
    outcomes, seconds = runner.run_sources("sync", partitions_of(cfg, a.source), allow_mass_delete=a.allow_mass_delete)
    return _ran(cfg, "sync", outcomes, seconds)


def _ran(cfg: BinderyConfig, job: str, outcomes: list[Any], seconds: float) -> dict[str, Any]:
    """The answer of a sync's (or a waited-for reindex's) runs: the `sync` contract, a warning
    when a sync's live generation changed under it, and exit 1 when a run failed."""
    store = store_for(cfg)
    out = summaries.sync_summary(outcomes, seconds, store, cfg.source_names())
    if job == "sync" and (moved := summaries.live_moved_warning(outcomes, store)):
        out["warnings"].append(moved)
    if out["errors"]:
        raise CommandFailed(summaries.errors_line(out["errors"]), out)
    return out


def cmd_reindex(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    if a.submit and a.promote and not a.wait:  # refused whatever the state: the options cannot work together
        raise UsageError("reindex --submit --promote needs --wait (the gate judges a finished candidate)")
    partitions = partitions_of(cfg, None)  # no sources: refused before a generation row is made
    lifecycle = lifecycle_for(cfg)
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
    runner = new_runner(cfg)
    tags = {"bindery/candidate": cand.name}
    if a.submit and not a.wait:
        return _submit(cfg, runner, a, "reindex", partitions, tags=tags,
                       extra={"candidate": cand.id, "candidate_name": cand.name})
    if a.submit:
        outcomes, seconds = _submit_and_wait(runner, "reindex", partitions, tags=tags)
    else:
        outcomes, seconds = runner.run_sources("reindex", partitions, tags=tags)
    out = summaries.sync_summary(outcomes, seconds, lifecycle.store, cfg.source_names())
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
        lifecycle.record_candidate_built(cand.record, "reindex")
    if out["errors"]:
        raise CommandFailed(summaries.errors_line(out["errors"]), out)
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
    partitions_of(cfg, a.source)  # an unknown source is a usage error
    return compute_plan(cfg, rt, a.kind, a.source, allow_mass_delete=a.allow_mass_delete, history=history,
                        read_scans=a.ocr)


LEFT_RUNNING: list[str] = []  # submitted runs a Ctrl-C stopped `--wait` from following


def _submit_and_wait(runner: Runner, job: str, sources: list[str], **kw: Any) -> tuple[list[RunOutcome], float]:
    """Enqueue runs for the daemon and follow them to the end, progress on stderr. Ctrl-C stops
    the waiting, not the runs: the daemon has them, and the one line says so (`orchestration.cli._interrupted`)."""
    runs = runner.submit_sources(job, sources, **kw)
    try:
        return runner.follow(runs, echo=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        LEFT_RUNNING[:] = [r.run_id for r in runs if not runner.finished(r.run_id)]
        raise


def _warn_already_pending(runner: Runner, job: str, partitions: list[str]) -> None:
    """Say so when a run of `job` for one of `partitions` is already queued or running: a second
    `--submit` queued a second run of the same work in silence (an operator pass)."""
    from orchestration.runs import list_runs

    pending = list_runs(runner.instance, limit=200, statuses=["queued", "not_started", "starting", "started"])
    for r in pending:
        if r["job"] == job and r["partition"] in partitions:
            print(f"warning: a {job} run of {r['partition']} is already {r['status'].lower()} ({r['run_id'][:8]}); "
                  "this one is queued too (`bindery runs --cancel RUN_ID` drops one)", file=sys.stderr)


def _submit(cfg: BinderyConfig, runner: Runner, a: argparse.Namespace, job: str, sources: list[str],
            extra: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any] | None:
    """`--submit`: enqueue one run per source for the daemon. With `--wait`, follow them and
    answer like an in-process sync (non-zero exit if any failed); without, list what was queued."""
    if not runner.daemon_alive():  # said, not discovered as a run that never leaves QUEUED
        print("warning: no Dagster daemon has reported to this instance in the last 2 minutes; the runs wait "
              "in the queue until one runs (`bindery ui` starts one, or `dagster-daemon run`)", file=sys.stderr)
    _warn_already_pending(runner, job, sources)
    if not a.wait:
        from orchestration.runs import list_runs, runs_table

        runs = runner.submit_sources(job, sources, **kw)
        # each run as the instance recorded it, as `bindery runs` shows it: the time this command
        # printed was seconds past the runs' creation (the code server stops in between)
        known = {r["run_id"]: r for r in list_runs(runner.instance, limit=len(runs), run_ids=[r.run_id for r in runs])}
        shown = [known[r.run_id] for r in runs]  # in the order submitted
        rows = [{k: r[k] for k in ("run_id", "status", "job", "partition", "created_at")} for r in shown]
        if a.json:
            return {"submitted": rows, **(extra or {})}
        table = runs_table(shown)
        print(f"{table}\nqueued for the Dagster daemon: follow with `bindery runs` or the UI")
        return None
    outcomes, seconds = _submit_and_wait(runner, job, sources, **kw)
    return _ran(cfg, job, outcomes, seconds)


def cmd_runs(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    """Queued, running and finished runs of the instance, newest first."""
    from orchestration.instance import get_instance, instance_home, postgres_target
    from orchestration.runs import cancel_runs, fail_dead_runs, list_runs, runs_table

    if postgres_target(cfg) is None and cfg.data_path in instance_home(cfg).parents:  # the runs live there
        require_data_dir(cfg)
    elif postgres_target(cfg) is not None:  # in the store's database: another deployment's data_dir is refused
        store_for(cfg).dispose()  # as every other command refuses it (it listed the owner's runs)
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


def cmd_dlq(cfg: BinderyConfig, a: argparse.Namespace) -> Any:
    store = store_for(cfg)
    if a.action == "retry":
        return _dlq_retry(cfg, store, a)
    rows = [{"doc": d.external_id, "source": d.source, "stage": d.stage, "reason": d.reason,
             "error": d.error, "at": d.at} for d in _dead_letters_chosen(store, a)]
    return report.DeadLetterDetail(rows) if a.doc else rows


def _dead_letters_chosen(store: DocumentStore, a: argparse.Namespace) -> list[DeadLetterRecord]:
    """The dead letters of --source, and of the --doc documents when given (each must name one:
    a typo must not read as "nothing there"), named by path in the source, doc id, or the
    `source:path` a query hit shows."""
    entries = store.dead_letters(source=a.source)
    if not a.doc:
        return entries
    entries = [e for e in entries if _dead_letter_names(e) & set(a.doc)]
    if unmatched := [d for d in a.doc if not any(d in _dead_letter_names(e) for e in entries)]:
        where = f" of source {a.source!r}" if a.source else ""
        raise UsageError(f"--doc {', '.join(map(report.shown, unmatched))}: no dead letter{where} has that document; "
                         "name it by its path in the source, as `bindery dlq` lists it, as source:path, or by doc id")
    return entries


def _dead_letter_names(e: DeadLetterRecord) -> set[str]:
    """Every name --doc accepts for a dead letter: also the path as `bindery dlq` prints it (a
    newline, tab or escape in a file name shown as `\\n`, `\\t`, `\\x1b`), which an operator
    copies from the table and could not otherwise type."""
    names = {e.external_id, e.doc_id, f"{e.source}:{e.external_id}"}
    return names | {report.shown(n) for n in names}


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
    runner = new_runner(cfg)
    # every shard of a sharded source: a dead letter names its source, not its shard
    outcomes, seconds = runner.run_sources("sync", partitions_of(cfg, sorted({e.source for e in entries})))
    # a retry is a sync of those sources: whatever else it changed (documents deleted or edited
    # since the last sync) and why it failed (a source down, the delete guard) is said here too
    sync = summaries.sync_summary(outcomes, seconds, store, cfg.source_names())
    still = {d.doc_id for d in store.dead_letters()}
    left = [e.external_id for e in entries if e.doc_id in still]
    out = {"retried": len(entries), "resolved": len(entries) - len(left), "still_failing": left,
           "sync": {k: v for k, v in sync.items() if not k.startswith("_")}}
    if sync["errors"]:
        raise CommandFailed("the retry's sync failed: " + summaries.errors_line(sync["errors"]),
                            out)
    if left:
        # names as `dlq list` shows them: an escape sequence in a file name must not reach the terminal
        raise CommandFailed(f"{len(left)} of {len(entries)} still failing: "
                            f"{', '.join(report.shown(n) for n in left[:5])}", out)
    return out
