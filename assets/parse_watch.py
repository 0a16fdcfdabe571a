"""A file whose parse never ends, or takes the process down, stops one run, not every run after it.

A parse runs under a time limit (`stages.parse.max_parse_seconds`, `time_limit`): Python code and
the regular-expression engine notice the alarm, and the document becomes a `parse-timeout` dead
letter while the run goes on. A parse inside native code that never returns (a PDF library, the
Markdown parser) cannot be interrupted, and a memory bomb ends with the kernel killing the
worker: either way the run dies mid-parse, and the next run would parse that file first again,
and die again. So the
parse stage leaves a marker naming the document it is parsing (`data_dir/parsing/`, one file per
source or shard) and removes it when the parse returns or raises (Ctrl-C included). A marker the
next run finds names the document a dead run was parsing. One such death is forgiven (a machine
restarted, a worker evicted): the document is parsed again, its marker counting the death. The
second time the same bytes are found so, they are not parsed again: a failed parse is stored for
them (`parse-killed`), the document becomes a dead letter and the run goes on; `bindery dlq retry`
parses it again. `bindery plan` never parses a document a dead run was parsing.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets.runtime import Runtime
from connectors.errors import ParseTimeout
from connectors.store import DocumentRecord

__all__ = ["DEATHS_BEFORE_DEAD_LETTER", "Killed", "killed_parse", "killed_parses", "killed_row", "time_limit",
           "watched"]

DEATHS_BEFORE_DEAD_LETTER = 2


@dataclass(frozen=True)
class Killed:
    """The document a dead run was parsing: its parse key and how many runs died on it."""

    doc_id: str
    external_id: str
    key: tuple[str, str, str]
    deaths: int
    started: float

    @property
    def final(self) -> bool:
        """Whether this death is the one that makes the document a dead letter."""
        return self.deaths >= DEATHS_BEFORE_DEAD_LETTER


def _marker(rt: Runtime, source: str) -> Path:
    shard = getattr(rt.store, "shard", None)
    return _marker_path(rt.cfg.data_path, source, None if shard is None else (shard.index, shard.count))


def _marker_path(data_path: Path, source: str, shard: tuple[int, int] | None) -> Path:
    name = source if shard is None else f"{source}#{shard[0]}-of-{shard[1]}"
    return data_path / "parsing" / f"{urllib.parse.quote(name, safe='')}.json"


def killed_parse(rt: Runtime, source: str) -> Killed | None:
    """The document the last run of this source (or shard) died parsing, its deaths counting
    that run's; None when that run ended its parses (or the marker cannot be read)."""
    return _read(_marker(rt, source))


def killed_parses(data_path: Path, source: str, shards: int) -> list[Killed]:
    """What `killed_parse` tells each run of a whole source (`bindery plan` plans them all): the
    source's marker, or with `shards` > 1 each shard's."""
    paths = ([_marker_path(data_path, source, (i, shards)) for i in range(shards)] if shards > 1
             else [_marker_path(data_path, source, None)])
    return [k for k in map(_read, paths) if k is not None]


def _read(path: Path) -> Killed | None:
    try:
        m: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        key = tuple(str(k) for k in m["key"])
        if len(key) != 3:
            return None
        return Killed(str(m["doc_id"]), str(m["external_id"]), (key[0], key[1], key[2]),
                      int(m["deaths"]) + 1, float(m["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stopped_parses(data_path: Path, source: str) -> list[dict[str, Any]]:
    """What `bindery status` says of a source's dead runs: per marker left (the source, or each
    of its shards), the document being parsed and the runs that died on it."""
    folder = data_path / "parsing"
    prefix = urllib.parse.quote(source, safe="")
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.stem != prefix and not path.stem.startswith(prefix + urllib.parse.quote("#", safe="")):
            continue
        if (k := _read(path)) is not None:
            out.append({"doc": k.external_id, "deaths": k.deaths, "since": k.started})
    return out


def killed_row(killed: Killed) -> dict[str, Any]:
    """The failed parse stored for bytes whose parse killed `DEATHS_BEFORE_DEAD_LETTER` runs."""
    return {"content_hash": killed.key[0], "parse_version": killed.key[1], "format": killed.key[2],
            "doc_id": killed.doc_id, "created_at": time.time(), "status": "failed", "title": None,
            "blocks": None, "metrics": None, "page_metrics": None, "doc_metadata": None,
            "reason": "parse-killed", "seconds": None,
            "error": (f"{killed.external_id}: {killed.deaths} run{'s' if killed.deaths != 1 else ''} stopped while "
                      "parsing it (a parse that never ends, one that runs out of memory, or runs stopped by "
                      "hand, which look alike); not parsed again until its bytes change "
                      "(`bindery dlq retry` tries once more)")}


def forget(rt: Runtime, source: str) -> None:
    """Remove the marker (a dead run's document that is no longer pending)."""
    _marker(rt, source).unlink(missing_ok=True)


@contextmanager
def watched(rt: Runtime, source: str, doc: DocumentRecord, key: tuple[str, str, str],
            deaths: int = 0) -> Iterator[None]:
    """Mark `doc` as being parsed for as long as the block runs; `deaths`: runs that already died
    on these bytes. The marker stays only if the process dies inside the block."""
    path = _marker(rt, source)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"doc_id": doc.doc_id, "external_id": doc.external_id, "key": list(key),
                                    "deaths": deaths, "started": time.time()}), encoding="utf-8")
        marked = True
    except OSError:  # a read-only or full data_dir: parse unwatched rather than not at all
        marked = False
    try:
        yield
    finally:
        if marked:
            path.unlink(missing_ok=True)


class _Alarm(BaseException):
    """Raised by the alarm inside a parse. Not an `Exception`: a parser's own `except Exception`
    fallback must not swallow it and carry on past the limit."""


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise `ParseTimeout` (naming `what`) if the block runs longer than `seconds` (0: no limit).

    A real-time alarm (SIGALRM), so it can only be set from the main thread of a process with
    signals (a CLI run, a Dagster step's process, a plan's forked worker); elsewhere (a thread, a
    platform without SIGALRM) the block runs unlimited, the death marker (`watched`) still
    standing guard. The alarm repeats every second after it first fires: code that catches
    everything and carries on is interrupted again."""
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = True

    def on_alarm(signum: int, frame: Any) -> None:
        if armed:
            raise _Alarm

    def disarm() -> None:
        nonlocal armed
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)  # inside: a tiny limit may fire at once
            yield
        finally:
            disarm()
    except _Alarm:  # in the block, or in the instant before `disarm` ran (then it runs again here)
        disarm()
        raise ParseTimeout(f"{what}: parsing took longer than stages.parse.max_parse_seconds ({seconds:g} s); "
                           "stopped. Raise the limit and `bindery dlq retry` to try again") from None
