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
DEFAULT_ROWS = 24


class TqdmSink:
    """One bar per stage and source; it disappears when the stage ends (the summary has the counts)."""

    def __init__(self, stage: str, source: str, unit: str, stream: TextIO):
        # A terminal that reports no size (`script`, `docker run -t`, a fresh pseudo-terminal)
        # would get an empty bar from 0 columns, and none at all from 0 rows: tqdm hides a bar
        # whose position is below the screen's height.
        columns, rows = _size(stream)
        self.bar = tqdm(desc=f"{stage} [{source}]", total=0, unit=f" {unit}", file=stream, leave=False,
                        dynamic_ncols=columns > 0, ncols=None if columns > 0 else DEFAULT_COLUMNS,
                        nrows=None if rows > 0 else DEFAULT_ROWS, mininterval=0.5)

    def update(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self, done: int, total: int) -> None:
        self.bar.close()


def _size(stream: TextIO) -> tuple[int, int]:
    """(columns, rows) of the terminal behind `stream`; 0 for what it does not say."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError):
        return 0, 0
    return size.columns, size.lines


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
