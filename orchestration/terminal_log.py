"""The Dagster logger the CLI's runs print to the terminal with: one line per event.

Dagster's default console logger prints a step failure with its whole stack trace (67-150
lines for a missing folder). The CLI already reports why a run failed, in one line, from the
run's events (`orchestration.runs`), so this logger drops ERROR records (step failures and the
skipped steps after them) and prints the rest as `bindery [step] LEVEL: first line`.
With `full` (the CLI's `--debug`) it prints every message whole, tracebacks included.
The run's complete log always goes to the instance, where the UI shows it.

Its settings are fixed when the definitions are built, not passed as run config: a run's config
is stored with it and a re-execution from the UI reuses it, in a code location whose console
logger knows no `full`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import dagster as dg

__all__ = ["terminal_logger"]

_META = "dagster_meta"  # the attribute Dagster's log manager puts on every record it emits


class _OneLine(logging.Formatter):
    def __init__(self, full: bool):
        super().__init__()
        self.full = full

    def format(self, record: logging.LogRecord) -> str:
        meta: dict[str, Any] = getattr(record, _META, None) or {}
        text = str(meta.get("orig_message") or record.getMessage())
        step = meta.get("step_key")
        head = f"bindery [{step}]" if step else "bindery"
        if not self.full:
            text = next((line for line in text.splitlines() if line.strip()), "").strip()
        return f"{head} {record.levelname.lower()}: {text}"


class _DropErrors(logging.Filter):
    """Step failures (and the "dependencies failed, not executing" that follow them) are
    summarised by the CLI itself in one line; repeating them with stack traces is the noise
    this logger exists to remove."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


def terminal_logger(log_level: str = "WARNING", full: bool = False) -> dg.LoggerDefinition:
    """The logger for the CLI's runs: `log_level` and up, one line each unless `full`."""

    def init(_: dg.InitLoggerContext) -> logging.Logger:
        log = logging.Logger("bindery.terminal", level=logging.getLevelName(log_level.upper()))
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_OneLine(full))
        if not full:
            handler.addFilter(_DropErrors())
        log.addHandler(handler)
        return log

    return dg.LoggerDefinition(init, description="One line per event on stderr; failures are left to the CLI's "
                                                  "own summary.")
