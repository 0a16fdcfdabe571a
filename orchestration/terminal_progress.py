"""Stage progress on the CLI's stderr: a tqdm bar per stage on a terminal (counts, rate, ETA),
one line every ten seconds otherwise (a pipe, a log file, CI).

The stage functions report through `assets.progress`; this module only decides how the CLI
shows it, by registering a sink factory for the process (the runs execute in-process).
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from tqdm import tqdm

from assets.progress import LogSink, ProgressSink, add_sink_factory, clear_sink_factories, reset_stored_counts

__all__ = ["TqdmSink", "show_progress"]

PIPE_EVERY_SECONDS = 10.0
DEFAULT_COLUMNS = 100


class TqdmSink:
    """One bar per stage and source; it disappears when the stage ends (the summary has the counts)."""

    def __init__(self, stage: str, source: str, unit: str, stream: TextIO):
        # a terminal that reports no size (a fresh pseudo-terminal) would get an empty bar
        sized = _columns(stream) > 0
        self.bar = tqdm(desc=f"{stage} [{source}]", total=0, unit=f" {unit}", file=stream, leave=False,
                        dynamic_ncols=sized, ncols=None if sized else DEFAULT_COLUMNS, mininterval=0.5)

    def update(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self, done: int, total: int) -> None:
        self.bar.close()


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return 0


def _print_line(line: str, stream: TextIO | None) -> None:
    """One progress line. The default stream is looked up at each line (whoever replaced
    sys.stderr since — a test's capture — is the one shown), and a display that has gone away
    never fails the stage it reports on."""
    try:
        print(line, file=stream or sys.stderr, flush=True)
    except (ValueError, OSError):
        pass


def show_progress(stream: TextIO | None = None) -> None:
    """From now on every stage of this process reports to `stream` (default stderr), and only
    there: a process that runs several commands (tests, benchmarks) keeps one display."""
    clear_sink_factories()
    reset_stored_counts()
    out = stream or sys.stderr
    if out.isatty():
        def bar(stage: str, source: str, unit: str) -> ProgressSink:
            return TqdmSink(stage, source, unit, out)

        add_sink_factory(bar)
    else:
        def lines(stage: str, source: str, unit: str) -> ProgressSink:
            return LogSink(lambda line: _print_line(line, stream), stage, source, unit,
                           every=PIPE_EVERY_SECONDS)

        add_sink_factory(lines)
