"""`bindery` — the operator CLI. Every mutating command runs the same Dagster job the UI runs.

The commands are in `orchestration.commands`, by concern; this module parses the command line,
checks the configuration before anything runs and maps every outcome to an exit code.

Human output by default (orchestration.report), the JSON contract of docs/json-contract.md with
`--json`. `--config`, `--json` and `--debug` go before or after the command. Exit codes: 0
success, 1 a run or a gate failed (the reason on stderr in one line and in the JSON), 2 a usage or
configuration mistake (one line naming the key or argument), 130 interrupted. Nothing prints a
traceback unless `--debug`: `main` turns every error into one line.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

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
    check_run_launcher,
    check_sources,
    check_stage_resources,
    load_config,
)
from connectors.errors import BinderyError, ConfigError, GateRefused, UsageError
from orchestration import report
from orchestration.cli_parser import ARGV, build_parser, parse_command_line, share_common_options
from orchestration.commands import evals, generations, pipeline, serving
from orchestration.commands.common import CommandFailed, set_debug
from orchestration.interrupts import quiet_interrupted_logging

# Commands that list sources: their folders must exist before a run starts.
_LISTING_COMMANDS = ("sync", "reindex", "plan")
# Commands that read (or judge, or flip) what a sync made: they never create data_dir (`store_for`
# and `runs` say when it is missing and holds their state).
_READING_COMMANDS = ("dlq", "verify", "gc", "query", "eval", "tune", "promote", "rollback", "discard",
                     "evalset", "runs")


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
    if a.command in _LISTING_COMMANDS:
        check_sources(cfg)
        check_stage_resources(cfg)  # a model that is not here, an unset API key: before any work
        check_ocr_language(cfg)
    if a.command != "hash-key":  # every other command reads the store
        from connectors.store.ownership import refuse_foreign_store

        refuse_foreign_store(cfg)
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
    check_run_launcher(cfg)  # a launcher whose package is missing failed each queued run at the daemon
    for key, value in (("metric", cfg.gate.metric), ("secondary_metric", cfg.gate.secondary_metric)):
        if value not in METRIC_NAMES:
            raise ConfigError(f"gate.{key}: unknown metric {value!r} (one of: {', '.join(METRIC_NAMES)})")
        cutoff = int(value.rsplit("@", 1)[1])
        if cfg.gate.k < cutoff:  # the eval retrieves gate.k hits: fewer make value@N a value@k in disguise
            raise ConfigError(f"gate.k ({cfg.gate.k}) must be at least the cutoff of gate.{key} {value!r} ({cutoff}): "
                              f"the eval retrieves only gate.k hits per question")
    # last: a command refused by any check above leaves no data_dir behind. plan and status write
    # nothing: a fresh data_dir is checked, not made; nor by the commands that read what a sync
    # made (`store_for` says a mistyped data_dir holds nothing)
    reads_only = a.command in _READING_COMMANDS
    check_paths(cfg, only if a.command != "query" else None, roots=listing,
                create=a.command not in ("plan", "status") and not reads_only)


def check_ocr_language(cfg: BinderyConfig) -> None:
    """With Tesseract's data installed, an OCR language it lacks is a mistake (a misspelling, a
    language pack not installed) that would make every scanned page a `needs-ocr` dead letter.
    Without any (no Tesseract here) OCR is simply unavailable, as documented: not checked."""
    from assets.parsing.ocr import find_tessdata, installed_languages

    parse = cfg.stages.parse
    if not parse.ocr or find_tessdata(parse.ocr_language) is not None:
        return
    if have := installed_languages():
        if set(parse.ocr_language.split("+")) <= set(have):  # each is here, in different folders
            raise ConfigError(f"stages.parse.ocr_language: the languages of {parse.ocr_language!r} are in different "
                              "tessdata folders; Tesseract reads one: set TESSDATA_PREFIX to a folder holding all")
        raise ConfigError(f"stages.parse.ocr_language: no Tesseract language data for {parse.ocr_language!r} "
                          f"(installed: {', '.join(have)}; install tesseract-ocr-<lang>, or set TESSDATA_PREFIX)")


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


COMMANDS: dict[str, Callable[[BinderyConfig, argparse.Namespace], Any]] = {
    "sync": pipeline.cmd_sync, "reindex": pipeline.cmd_reindex, "plan": pipeline.cmd_plan, "runs": pipeline.cmd_runs,
    "dlq": pipeline.cmd_dlq, "promote": generations.cmd_promote, "rollback": generations.cmd_rollback,
    "discard": generations.cmd_discard, "status": generations.cmd_status, "verify": generations.cmd_verify,
    "gc": generations.cmd_gc, "eval": evals.cmd_eval, "tune": evals.cmd_tune, "evalset": evals.cmd_evalset,
    "query": serving.cmd_query, "serve": serving.cmd_serve, "ui": serving.cmd_ui,
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
    set_debug(a.debug)
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
        line = _interrupted(a.command)
        if a.json and a.command not in ("serve", "ui"):  # `| jq` reads an object, as after any other end
            with contextlib.suppress(OSError):
                print(json.dumps({"error": line, "reason": "interrupted", "stored": _stored(a.command)}), flush=True)
        print(f"bindery {a.command}: {line}", file=sys.stderr)
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
    if left := pipeline.LEFT_RUNNING:
        return (f"stopped waiting; the daemon still has {len(left)} submitted run(s), which go on: "
                f"{', '.join(r[:8] for r in left)} (`bindery runs` follows them, `bindery runs --cancel "
                "ID` stops one)")
    if command not in _RUN_COMMANDS:
        return "interrupted"
    kept = ", ".join(f"{stage} {n:,}" for stage, n in _stored(command).items()) or "nothing new"
    return f"interrupted; stored before stopping: {kept}; the next run resumes from there"


def _stored(command: str) -> dict[str, int]:
    """What the stages of an interrupted run had stored, per stage (none for other commands)."""
    if command not in _RUN_COMMANDS:
        return {}
    from assets.progress import stored_counts

    return dict(stored_counts())


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
            result = serving.cmd_hash_key(a)
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
