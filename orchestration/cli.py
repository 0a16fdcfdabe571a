"""`bindery` — the operator CLI. Every mutating command runs the same Dagster job the UI runs.

Human output by default, the DESIGN.md JSON contract with `--json`. Exit codes: 0 success,
1 a run or a gate failed (the reason on stderr and in the JSON), 2 bad usage or configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from connectors.config import BinderyConfig, load_config
from connectors.errors import BinderyError, ConfigError, GateRefused
from orchestration import report


class CommandFailed(Exception):
    """A command ran but did not succeed; carries the JSON to print."""

    def __init__(self, message: str, payload: dict[str, Any]):
        super().__init__(message)
        self.payload = payload


def _runner(cfg: BinderyConfig):  # type: ignore[no-untyped-def]
    from orchestration.runs import Runner

    return Runner(cfg)


def _store(cfg: BinderyConfig):  # type: ignore[no-untyped-def]
    from connectors.store import DocumentStore

    return DocumentStore(cfg.database_url)


def _source_names(cfg: BinderyConfig, only: list[str] | None) -> list[str]:
    if not cfg.sources:
        raise ConfigError("no sources configured: add one under `sources:` in the configuration")
    return [cfg.source(s).name for s in only] if only else [s.name for s in cfg.sources]


def cmd_sync(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    runner = _runner(cfg)
    outcomes, seconds = runner.run_sources("sync", _source_names(cfg, a.source), allow_mass_delete=a.allow_mass_delete)
    store = _store(cfg)
    out = report.sync_summary(outcomes, seconds, store)
    if out["errors"]:
        raise CommandFailed("; ".join(f"{k}: {v}" for k, v in out["errors"].items()), out)
    return out


def cmd_reindex(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from assets.runtime import Runtime

    rt = Runtime(cfg)
    live = rt.live()
    if live is not None and not rt.config_drift() and not a.force:
        raise CommandFailed("the configuration matches the live generation: nothing to reindex (use --force "
                            "to rebuild anyway)", {"candidate": None, "live": live.id})
    if a.force and live is not None and not rt.config_drift():
        rt.store.add_event("forced-rebuild", "operator rebuilt an identical candidate")
    cand = rt.ensure_candidate()
    runner = _runner(cfg)
    outcomes, seconds = runner.run_sources("reindex", _source_names(cfg, None), tags={"bindery/candidate": cand.name})
    out = report.sync_summary(outcomes, seconds, rt.store)
    out["candidate"] = cand.id
    out["candidate_name"] = cand.name
    out["changed_stages"] = rt.config_drift()
    if out["errors"]:
        raise CommandFailed("; ".join(f"{k}: {v}" for k, v in out["errors"].items()), out)
    if a.promote:
        out["promotion"] = cmd_promote(cfg, argparse.Namespace(force=False, reason=None, candidate=cand.id, by=None))
    return out


def cmd_promote(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from evals.promotion import candidate_row

    store = _store(cfg)
    cand = candidate_row(store, a.candidate)  # fails early and clearly when there is none
    if a.force and not a.reason:
        raise ConfigError("a forced promotion needs --reason")
    conf = {"candidate": cand["id"], "force": bool(a.force), "reason": a.reason,
            "forced_by": a.by or os.environ.get("USER") or "cli"}
    run_config = {"ops": {"generation_eval": {"config": conf}, "index_binding": {"config": conf}}}
    res = _runner(cfg).run("promote", run_config=run_config)
    b = store.get_binding()
    rep = (store.get_generation(cand["id"]) or {}).get("eval_report") or {}
    out = {"promoted": res.success, "live": b["generation_id"] if b else None,
           "previous": b["previous_generation_id"] if b else None, "candidate": cand["id"], "report": rep}
    if not res.success:
        out["error"] = res.error
        raise CommandFailed(res.error or "promotion failed", out)
    out["forced"] = bool(res.metadata.get("index_binding", {}).get("forced"))
    return out


def cmd_rollback(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from evals.promotion import rollback

    return rollback(cfg, _store(cfg), by=a.by)


def _generation(store: Any, which: str) -> dict[str, Any]:
    from connectors.errors import BindingError

    if which == "live":
        b = store.get_binding()
        if b is None:
            raise BindingError("no live generation yet: run `bindery sync`")
        return store.get_generation(b["generation_id"])
    if which == "candidate":
        building = store.generations(("building",))
        if not building:
            raise BindingError("no candidate generation: run `bindery reindex`")
        return building[-1]
    row = store.get_generation(int(which))
    if row is None:
        raise BindingError(f"no generation {which}")
    return row


def cmd_eval(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from evals.promotion import evaluate

    store = _store(cfg)
    gen = _generation(store, a.generation)
    rep = evaluate(cfg, store, gen, queries=a.queries)
    return {"generation": gen["id"], "generation_name": gen["name"], **rep.to_json(),
            "_table": report.eval_table(rep)}


def cmd_query(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from query_service.retrieval import GenerationRetriever, make_filters

    store = _store(cfg)
    gen = _generation(store, a.generation)
    r = GenerationRetriever(cfg, gen, store)
    try:
        filters = make_filters(a.principal, a.source or None, known_sources=[s.name for s in cfg.sources])
        return r.search(a.text, a.k, filters).to_json()
    finally:
        r.close()


def cmd_status(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    return report.status(cfg, _store(cfg))


def cmd_dlq(cfg: BinderyConfig, a: argparse.Namespace) -> Any:
    store = _store(cfg)
    if a.action == "retry":
        return _dlq_retry(cfg, store, a)
    return [{"doc": d["external_id"], "source": d["source"], "stage": d["stage"], "reason": d["reason"],
             "error": d["error"], "at": d["at"]} for d in store.dead_letters(source=a.source)]


def _dlq_retry(cfg: BinderyConfig, store: Any, a: argparse.Namespace) -> dict[str, Any]:
    """Forget cached failures of the chosen dead letters and sync their sources again;
    documents that now succeed leave the table."""

    from connectors.store import schema as t

    entries = store.dead_letters(source=a.source)
    if a.doc:
        entries = [e for e in entries if e["external_id"] in a.doc or e["doc_id"] in a.doc]
    elif not a.all:
        raise ConfigError("say which: `bindery dlq retry --doc PATH` or `bindery dlq retry --all`")
    if not entries:
        return {"retried": 0, "resolved": 0, "still_failing": []}
    hashes = sorted({e["content_hash"] for e in entries if e["content_hash"]})
    with store.tx() as c:
        for i in range(0, len(hashes), 500):
            c.execute(t.parses.delete().where(t.parses.c.content_hash.in_(hashes[i:i + 500]),
                                              t.parses.c.status != "ok"))
    runner = _runner(cfg)
    runner.run_sources("sync", sorted({e["source"] for e in entries}))
    still = {d["doc_id"] for d in store.dead_letters()}
    left = [e["external_id"] for e in entries if e["doc_id"] in still]
    out = {"retried": len(entries), "resolved": len(entries) - len(left), "still_failing": left}
    if left:
        raise CommandFailed(f"{len(left)} of {len(entries)} still failing: {', '.join(left[:5])}", out)
    return out


def cmd_verify(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from orchestration.verify import verify

    out = verify(cfg, _store(cfg), repair=a.repair)
    if not out["consistent"] and not a.repair:
        raise CommandFailed("indexes drifted from the document store (run `bindery verify --repair`)", out)
    return out


def cmd_gc(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from evals.promotion import collect_garbage

    store = _store(cfg)
    return {"dropped": collect_garbage(cfg, store), "caches": store.gc_orphan_caches()}


def cmd_serve(cfg: BinderyConfig, a: argparse.Namespace) -> None:
    import uvicorn

    from query_service.app import create_app

    uvicorn.run(create_app(cfg), host=a.host, port=a.port, log_level="info")


def cmd_ui(cfg: BinderyConfig, a: argparse.Namespace) -> None:
    import signal
    import subprocess
    from pathlib import Path

    from orchestration.instance import dagster_home

    env = {**os.environ, "BINDERY_CONFIG": cfg.config_path or "", "DAGSTER_HOME": str(dagster_home(cfg))}
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(root / "workspace.yaml"), "-h", a.host, "-p", str(a.port)]
    # dagster dev ignores SIGINT/SIGTERM when its parent ignored them; restore the default.
    proc = subprocess.Popen(cmd, env=env, cwd=root, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def cmd_hash_key(a: argparse.Namespace) -> dict[str, str]:
    """The configured form of a query-service API key (read from stdin, or a new random one)."""
    from query_service.auth import hash_key, new_key

    key = new_key() if a.new else sys.stdin.readline().strip()
    if not key:
        raise ConfigError("no key on standard input (pipe one in, or pass --new to make one)")
    return {"key": key, "hash": hash_key(key)} if a.new else {"hash": hash_key(key)}


COMMANDS: dict[str, Callable[[BinderyConfig, argparse.Namespace], Any]] = {
    "sync": cmd_sync, "reindex": cmd_reindex, "promote": cmd_promote, "rollback": cmd_rollback,
    "eval": cmd_eval, "query": cmd_query, "status": cmd_status, "dlq": cmd_dlq, "verify": cmd_verify,
    "gc": cmd_gc, "serve": cmd_serve, "ui": cmd_ui,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bindery", description="Batch ingestion and reindexing for RAG.")
    p.add_argument("--config", help="configuration file (default: $BINDERY_CONFIG or ./bindery.yaml)")
    p.add_argument("--json", action="store_true", help="machine-readable output (stable keys)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sync", help="bring sources up to date in the live generation")
    s.add_argument("--source", action="append", help="only this source (repeatable)")
    s.add_argument("--allow-mass-delete", action="store_true",
                   help="perform a delete sweep even if the listing shrank beyond the safety limits")
    s = sub.add_parser("reindex", help="build a candidate generation from the current configuration")
    s.add_argument("--promote", action="store_true", help="run the gate and promote when it passes")
    s.add_argument("--force", action="store_true", help="rebuild even if the configuration is unchanged")
    s = sub.add_parser("promote", help="judge the candidate on the eval set and flip the binding")
    s.add_argument("--force", action="store_true")
    s.add_argument("--reason")
    s.add_argument("--by", help="who is promoting (default: $USER)")
    s.add_argument("--candidate", type=int)
    s = sub.add_parser("rollback", help="restore the previous generation")
    s.add_argument("--by")
    s = sub.add_parser("eval", help="run an eval set against a generation")
    s.add_argument("--queries", help="eval set (JSONL); default: gate.queries")
    s.add_argument("--generation", default="live", help="live, candidate or a generation id")
    s = sub.add_parser("query", help="search the live generation")
    s.add_argument("text")
    s.add_argument("-k", type=int, default=5)
    s.add_argument("--principal", action="append", default=None, help="identity (repeatable); default public")
    s.add_argument("--source", action="append")
    s.add_argument("--generation", default="live")
    sub.add_parser("status", help="generations, documents, sources, freshness")
    s = sub.add_parser("dlq", help="dead letters: list, or retry after a fix")
    s.add_argument("action", nargs="?", choices=["list", "retry"], default="list")
    s.add_argument("--doc", action="append")
    s.add_argument("--all", action="store_true")
    s.add_argument("--source")
    s = sub.add_parser("verify", help="check store and indexes hold the same chunk ids")
    s.add_argument("--repair", action="store_true")
    sub.add_parser("gc", help="drop expired generations and orphaned cache rows")
    s = sub.add_parser("serve", help="run the query service")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s = sub.add_parser("hash-key", help="hash a query-service API key for query.auth.api_keys (key on stdin)")
    s.add_argument("--new", action="store_true", help="generate a new random key and print it with its hash")
    s = sub.add_parser("ui", help="run the Dagster UI on this configuration")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=3000)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.command == "query" and not a.principal:
        a.principal = ["*"]
    try:
        if a.command == "hash-key":  # needs no configuration
            result = cmd_hash_key(a)
        else:
            cfg = load_config(a.config)
            result = COMMANDS[a.command](cfg, a)
    except CommandFailed as e:
        e.payload.setdefault("error", str(e))
        _emit(a, e.payload)
        print(f"bindery {a.command}: {e}", file=sys.stderr)
        return 1
    except GateRefused as e:
        _emit(a, {"promoted": False, "error": str(e), "report": e.report})
        print(f"bindery {a.command}: {e}", file=sys.stderr)
        return 1
    except ConfigError as e:
        print(f"bindery {a.command}: configuration error: {e}", file=sys.stderr)
        return 2
    except BinderyError as e:
        if a.json:
            print(json.dumps({"error": str(e), "reason": e.reason}))
        print(f"bindery {a.command}: {e}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
