"""The `bindery` command line's grammar: commands, options, their checks and help text.

Kept apart from `orchestration.commands` (what each command does) so the whole surface an operator
types can be read in one place. Parsing imports nothing beyond the configuration module the
CLI loads anyway: `bindery --help` and a usage mistake answer at once. A usage mistake is one
line and exit 2 (`_Parser`).
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, NoReturn

from connectors.config import MAX_NEIGHBOURS  # the CLI imports the configuration anyway

__all__ = ["ARGV", "RUN_STATUSES", "build_parser", "parse_command_line", "share_common_options"]

ARGV: list[str] = []  # the arguments being parsed, for _Parser.error's --json


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake in one line (exit 2), not usage + error; with
    `--json` anywhere on the line also `{"error": ..., "reason": "usage"}` on stdout."""

    def error(self, message: str) -> NoReturn:
        if "--json" in ARGV:
            print(json.dumps({"error": message, "reason": "usage"}))
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args`, but an argument a command does not know is reported by that command
    (`bindery gc: unrecognized arguments: --bogus`, pointing at `bindery gc --help`): argparse hands
    a subcommand's leftovers to the top parser, which blamed `bindery` itself."""
    a, extras = parser.parse_known_args(argv)
    if extras:
        subs = next(act for act in parser._actions if isinstance(act, argparse._SubParsersAction))
        command = subs.choices.get(getattr(a, "command", None) or "")
        after = argv[argv.index(a.command) + 1:] if command is not None and a.command in argv else []
        blamed = command if command is not None and all(x in after for x in extras) else parser
        blamed.error(f"unrecognized arguments: {' '.join(extras)}")
    return a


class _AppendOnce(argparse.Action):
    """`append`, each value once: `--source docs --source docs` ran the source twice (two runs,
    summed counts that no longer matched the plan's)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        have = list(getattr(namespace, self.dest, None) or [])
        if values not in have:
            have.append(values)
        setattr(namespace, self.dest, have)


def _whole_number(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None


_MAX_INT = 2**63 - 1  # the databases' integer: a larger id or limit was an OverflowError


def _positive_int(value: str) -> int:
    n = _whole_number(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {n}")
    if n > _MAX_INT:
        raise argparse.ArgumentTypeError(f"must be at most {_MAX_INT}, got {value}")
    return n


def _port(value: str) -> int:
    n = _positive_int(value)
    if n > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {n}")
    return n


# Dagster's run statuses (dagster.DagsterRunStatus), spelled for `runs --status`; checked
# against Dagster's own list by the tests, kept here so parsing needs no Dagster import.
RUN_STATUSES = ("queued", "not_started", "managed", "starting", "started", "suspended", "success", "failure",
                "canceling", "canceled")


def _neighbours(value: str) -> int:
    n = _whole_number(value)
    if not 0 <= n <= MAX_NEIGHBOURS:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_NEIGHBOURS}, got {n}")
    return n


def _principal(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("a principal is a name (a group or user as the ACL files write it), not empty")
    return value.strip()


def _run_status(value: str) -> str:
    if value.lower() in RUN_STATUSES:
        return value.lower()
    raise argparse.ArgumentTypeError(f"unknown run status {value!r} (one of: {', '.join(RUN_STATUSES)})")


_GENERATION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")  # as `status` and the console show them: g2_e1f7e4


def _generation_arg(value: str) -> str:
    if value.isascii() and value.isdigit():
        if 0 < int(value) <= _MAX_INT:
            return value
    elif _GENERATION_NAME.fullmatch(value):  # live, previous, candidate, or a name (`Lifecycle.resolve`)
        return value
    raise argparse.ArgumentTypeError(f"expected live, previous, candidate, a generation id (a number) or name, "
                                     f"got {value!r}")


def _common_options(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument("--config", default=default, help="configuration file (default: $BINDERY_CONFIG or ./bindery.yaml)")
    p.add_argument("--json", action="store_true", default=default,
                   help="machine-readable output (the stable contract of docs/json-contract.md)")
    p.add_argument("--debug", action="store_true", default=default,
                   help="show tracebacks and Dagster's full run log on the terminal")


def share_common_options(p: argparse.ArgumentParser) -> None:
    """`--config`, `--json` and `--debug` work before or after the command (`bindery status
    --json` and `bindery --json status`); on a subcommand they leave no default behind, so
    one given before the command is not overwritten."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _common_options(sub, argparse.SUPPRESS)


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bindery")
    except PackageNotFoundError:
        return None


class _Version(argparse.Action):
    """`--version`: `bindery 0.1.0`, or `{"version": "0.1.0"}` with `--json` anywhere on the line."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        v = _version()
        if "--json" in ARGV:
            print(json.dumps({"version": v}))
        else:
            print(f"bindery {v}" if v else "bindery (not installed)")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bindery", description="Batch ingestion and reindexing for RAG.")
    _common_options(p, argparse.SUPPRESS)
    p.add_argument("--version", action=_Version, help="print the version and exit (as JSON with --json)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("sync", help="bring sources up to date in the live generation")
    s.add_argument("--source", action=_AppendOnce, help="only this source (repeatable)")
    s.add_argument("--allow-mass-delete", action="store_true",
                   help="perform a delete sweep even if the listing shrank beyond the safety limits")
    _submit_options(s)
    s = sub.add_parser("plan", help="what the next sync or reindex would do (writes nothing)")
    s.add_argument("kind", nargs="?", choices=["sync", "reindex"], default="sync", help="sync (default) or reindex")
    s.add_argument("--source", action=_AppendOnce, help="only this source (repeatable; sync only)")
    s.add_argument("--allow-mass-delete", action="store_true",
                   help="plan as if the sync were allowed past the delete guard")
    s.add_argument("--ocr", action="store_true",
                   help="OCR scanned pages in memory too, for exact counts (as slow as the sync's OCR; "
                        "without it their chunks are estimated)")
    s = sub.add_parser("reindex", help="build a candidate generation from the current configuration")
    s.add_argument("--promote", action="store_true", help="run the gate and promote when it passes")
    s.add_argument("--force", action="store_true", help="rebuild even if the configuration is unchanged")
    _submit_options(s)
    s = sub.add_parser("promote", help="judge the candidate on the eval set (gate.queries) and flip the binding")
    s.add_argument("--force", action="store_true", help="flip even if the gate refuses (needs --reason)")
    s.add_argument("--reason", help="why a forced promotion is right (recorded with the generation)")
    s.add_argument("--by", help="who is promoting (default: $USER)")
    s.add_argument("--candidate", type=_positive_int, help="generation id to judge (default: the newest candidate)")
    s = sub.add_parser("rollback", help="restore the previous generation")
    s.add_argument("--by", help="who is rolling back (default: $USER)")
    s = sub.add_parser("discard", help="drop the candidate generation (a refused one, or a reindex no one will "
                                       "promote); the caches it filled stay")
    s.add_argument("--by", help="who is discarding it (default: $USER)")
    s = sub.add_parser("eval", help="run an eval set against a generation")
    s.add_argument("--queries", help="eval set (JSONL); default: gate.queries")
    s.add_argument("--generation", default="live", type=_generation_arg,
                   help="live, previous, candidate, or a generation id or name")
    s = sub.add_parser("tune", help="search retrieval settings on the eval set (tuning half), report the checking half")
    s.add_argument("--budget", help="trials (24) or minutes (10m); default: tune.budget")
    s.add_argument("--seed", type=int, default=None, help="split and trial-order seed; default: tune.seed")
    s.add_argument("--queries", help="eval set (JSONL); default: gate.queries")
    s.add_argument("--generation", default="live", type=_generation_arg,
                   help="live, previous, candidate, or a generation id or name (query-time keys only)")
    s.add_argument("--build", action="store_true",
                   help="build the best ingestion setting as a candidate generation for `bindery promote`")
    s = sub.add_parser("query", help="search the live generation")
    s.add_argument("text", help="what to search for")
    s.add_argument("-k", type=_positive_int, default=None,
                   help="number of hits (default: query.k of the configuration, 10 unless set)")
    s.add_argument("--principal", action="append", default=None, type=_principal,
                   help="identity (repeatable); default public")
    s.add_argument("--source", action=_AppendOnce, help="only this source (repeatable)")
    s.add_argument("--generation", default="live", type=_generation_arg,
                   help="live, previous, candidate, or a generation id or name")
    s.add_argument("--neighbours", type=_neighbours, default=None,
                   help=f"with each hit, this many chunks before and after it (0-{MAX_NEIGHBOURS}; "
                        "default: query.neighbours)")
    sub.add_parser("status", help="generations, documents, sources, freshness")
    s = sub.add_parser("dlq", help="dead letters: list, or retry after a fix")
    s.add_argument("action", nargs="?", choices=["list", "retry"], default="list",
                   help="list (default) or retry")
    which = s.add_mutually_exclusive_group()  # both given, one was silently ignored (a new-user pass)
    which.add_argument("--doc", action="append",
                       help="this document (path or doc id; repeatable): retry it, or list its dead letters whole")
    which.add_argument("--all", action="store_true", help="retry every dead letter")
    s.add_argument("--source", help="only this source's dead letters")
    s = sub.add_parser("verify", help="check store and indexes hold the same chunk ids")
    s.add_argument("--repair", action="store_true", help="rebuild a drifted index from the document store")
    sub.add_parser("gc", help="drop expired generations and orphaned cache rows")
    _evalset_parser(sub)
    s = sub.add_parser("runs", help="queued, running and finished runs of the Dagster instance")
    s.add_argument("--limit", type=_positive_int, default=20, help="at most this many runs (default 20)")
    s.add_argument("--status", action="append", type=_run_status,
                   help="only runs in this status (repeatable): queued, started, success, failure, ...")
    s.add_argument("--cancel", action="append", metavar="RUN_ID",
                   help="cancel this run (its id or first 8+ characters; repeatable): a queued run leaves the "
                        "queue, a started one is terminated")
    _service_parsers(sub)
    return p


def _service_parsers(sub: Any) -> None:
    """The long-running commands: the query service (and its keys) and the Dagster UI."""
    s = sub.add_parser("serve", help="run the query service")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    s = sub.add_parser("hash-key", help="hash a query-service API key for query.auth.api_keys (key on stdin)")
    s.add_argument("--new", action="store_true", help="generate a new random key and print it with its hash")
    s = sub.add_parser("ui", help="run the Dagster UI on this configuration")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=_port, default=3000, help="port (default 3000)")
    s.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a Host name the UI answers besides its own loopback names (repeatable; a "
                        "proxy's public name, say; *.example.org for its subdomains)")


def _evalset_parser(sub: Any) -> None:
    s = sub.add_parser("evalset", help="draft an eval set from the corpus, for a person to review")
    s.add_argument("action", choices=["draft"], help="draft: propose questions into --out")
    s.add_argument("--out", required=True, help="JSONL file to write (see docs/eval-format.md)")
    s.add_argument("--max", type=_positive_int, default=40, help="at most this many questions (default 40)")
    s.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    s.add_argument("--principal", action="append", metavar="NAME", type=_principal,
                   help="draft only from documents this principal may read (repeatable; default: every "
                        "document, whatever its ACL)")


def _submit_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--submit", action="store_true",
                   help="enqueue the runs on the Dagster instance for its daemon instead of running them here")
    s.add_argument("--wait", action="store_true", help="with --submit: follow the runs until they finish")
