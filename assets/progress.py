"""Progress of the long stages, reported by the stage functions themselves.

A stage function takes a `Progress` and calls `total(n)` once it knows how many items it will
compute (documents to parse or chunk, chunks to contextualise, texts to embed, documents to
index) and `advance(n)` after each batch is *stored* — so the counts are what the store holds,
also when a run is interrupted half-way. `NO_PROGRESS` is the default and does nothing.

Where the reports go is decided outside the stages: `StageProgress` fans one stage's counts
out to sinks — a Dagster step log (`LogSink(context.log.info)`), and whatever the process
registered with `add_sink_factory` (the CLI adds a terminal bar, or periodic lines when its
output is not a terminal). `stored_counts()` is the process-wide tally the CLI reads when a
run is interrupted, to say what was really stored.

    stage function --total/advance--> StageProgress --> LogSink (Dagster step log)
                                                    --> sinks from add_sink_factory (CLI)
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["NO_PROGRESS", "LogSink", "Progress", "ProgressSink", "StageProgress", "add_sink_factory",
           "clear_sink_factories", "format_line", "reset_stored_counts", "stored_counts"]


class Progress(Protocol):
    """What a stage function reports: the work it found, then the work it stored."""

    def total(self, n: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class _NoProgress:
    def total(self, n: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


NO_PROGRESS: Progress = _NoProgress()


class ProgressSink(Protocol):
    """One destination of one stage's progress (a bar, a log)."""

    def update(self, done: int, total: int) -> None: ...

    def close(self, done: int, total: int) -> None: ...


SinkFactory = Callable[[str, str, str], ProgressSink | None]  # (stage, source, unit) -> sink
_factories: list[SinkFactory] = []
_stored: dict[str, int] = {}
_lock = threading.Lock()


def add_sink_factory(factory: SinkFactory) -> None:
    """Every stage started in this process from now on also reports to `factory`'s sink."""
    _factories.append(factory)


def clear_sink_factories() -> None:
    _factories.clear()


def stored_counts() -> dict[str, int]:
    """Items stored per stage in this process since the last reset (what an interrupted run kept)."""
    with _lock:
        return dict(_stored)


def reset_stored_counts() -> None:
    with _lock:
        _stored.clear()


def format_line(stage: str, source: str, unit: str, done: int, total: int, elapsed: float) -> str:
    """`embed [docs]: 2,048/10,860 chunks (19%), 41.2/s, ETA 3m34s` — for logs and pipes."""
    pct = f" ({done / total:.0%})" if total else ""
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = f", ETA {_duration((total - done) / rate)}" if rate > 0 and total > done else ""
    return f"{stage} [{source}]: {done:,}/{total:,} {unit}{pct}, {rate:,.1f}/s{eta}"


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class LogSink:
    """One line per `every` seconds (and a first and a last one) through `emit`: for Dagster
    step logs and for output that is not a terminal."""

    def __init__(self, emit: Callable[[str], None], stage: str, source: str, unit: str, every: float = 10.0):
        self.emit, self.stage, self.source, self.unit, self.every = emit, stage, source, unit, every
        self.started = time.monotonic()
        self.last: float | None = None

    def update(self, done: int, total: int) -> None:
        if done >= total:  # nothing to do yet, or all done: `close` says so, once
            return
        now = time.monotonic()
        if self.last is None or now - self.last >= self.every:
            self.last = now
            self.emit(format_line(self.stage, self.source, self.unit, done, total, now - self.started))

    def close(self, done: int, total: int) -> None:
        if total or done:
            elapsed = time.monotonic() - self.started
            # a stage that ends by an exception (Ctrl-C, a failure) unwinding its `with` is not done
            end = " — done" if sys.exc_info()[1] is None else " — stopped"
            self.emit(format_line(self.stage, self.source, self.unit, done, total, elapsed) + end)


class StageProgress:
    """One stage's counts, fanned out to its sinks. Use as a context manager around the stage."""

    def __init__(self, stage: str, source: str, unit: str, sinks: list[ProgressSink] | None = None):
        self.stage, self.source, self.unit = stage, source, unit
        self.sinks = list(sinks or [])
        for factory in _factories:
            sink = factory(stage, source, unit)
            if sink is not None:
                self.sinks.append(sink)
        self.done = 0
        self.expected = 0

    def total(self, n: int) -> None:
        self.expected += n
        self._update()

    def advance(self, n: int = 1) -> None:
        if n <= 0:
            return
        self.done += n
        with _lock:
            _stored[self.stage] = _stored.get(self.stage, 0) + n
        self._update()

    def _update(self) -> None:
        for s in self.sinks:
            s.update(self.done, max(self.expected, self.done))

    def __enter__(self) -> StageProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        for s in self.sinks:
            s.close(self.done, max(self.expected, self.done))
