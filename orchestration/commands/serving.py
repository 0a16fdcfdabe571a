"""The commands that serve or ask: `query` (one search, as the query service answers it), `serve`
(the query service), `ui` (the Dagster UI) and `hash-key` (an API key's configured form)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from typing import Any

from connectors.config import BinderyConfig
from connectors.errors import UsageError
from orchestration.commands.common import new_runner, searchable_generation, store_for

__all__ = ["cmd_hash_key", "cmd_query", "cmd_serve", "cmd_ui"]


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
    store = store_for(cfg)
    gen = searchable_generation(cfg, store, a.generation)
    binding = store.get_binding()
    version = binding.version if binding and binding.generation_id == gen.id else None
    r = GenerationRetriever(cfg, gen, store, version=version)
    try:
        filters = make_filters(a.principal, a.source or None, known_sources=[s.name for s in cfg.sources])
        return r.search(a.text, k, filters, neighbours=a.neighbours).to_json()
    finally:
        r.close()


def cmd_serve(cfg: BinderyConfig, a: argparse.Namespace) -> None:
    import uvicorn

    from query_service.app import server_config
    from query_service.auth import auth_warnings

    config = server_config(cfg, a.host, a.port)
    # the app opens the store as it starts: a database that is down would end in uvicorn's
    # startup traceback and exit 3; opened here it is one line and exit 1, like every command
    store_for(cfg).dispose()
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
    new_runner(cfg)
    # the names the UI answers (DNS rebinding, orchestration/ui_server.py): its loopback names on
    # a loopback address, with those named by --allow-host; on another address any, unless named
    from orchestration.ui_server import ALLOWED_HOSTS_ENV
    from query_service.middleware import LOOPBACK_NAMES, loopback_hosts

    own = loopback_hosts(a.host)
    if own is not None or a.allow_host:
        env[ALLOWED_HOSTS_ENV] = json.dumps([*(own or LOOPBACK_NAMES), *a.allow_host])
    root = Path(__file__).resolve().parents[2]  # the repository: workspace.yaml, the code server's cwd
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

    # typed at a terminal: the line Enter ends; piped: everything, so a file of keys is refused
    text = "" if a.new else sys.stdin.readline() if sys.stdin.isatty() else sys.stdin.read()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1:  # only the first was hashed: a file of keys read as one key, silently
        raise UsageError(f"{len(lines)} lines on standard input: pipe in one key (one line) at a time")
    key = new_key() if a.new else (lines[0] if lines else "")
    if not key:
        raise UsageError("no key on standard input (pipe one in, or pass --new to make one)")
    return {"key": key, "hash": hash_key(key)} if a.new else {"hash": hash_key(key)}
