"""Ctrl-C ends a command in one line: library log records and finalizers that would print the
interrupt's traceback are silenced, and an interrupt a finalizer swallowed is delivered again.

Imports nothing of Dagster's: it is installed before a command runs.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Any

__all__ = ["quiet_interrupted", "quiet_interrupted_logging"]


def _not_interrupted(record: logging.LogRecord) -> bool:
    """False for a record of the interrupt: a KeyboardInterrupt (or the error Dagster turns one
    into inside a run: SQLAlchemy logged "Exception closing connection" with its traceback when
    the signal landed in a close, an operator pass), or an error raised while one was handled
    (the CancelledError of a task the interrupt cancelled)."""
    exc = record.exc_info[1] if record.exc_info else None
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if _is_interrupt(exc):
            return False
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return True


_INTERRUPT_NAMES = {"KeyboardInterrupt", "asyncio.exceptions.CancelledError", "CancelledError"}


def _no_interrupt_text(record: logging.LogRecord) -> bool:
    """False for a record of the interrupt, or one whose message is the text of its traceback
    (an ASGI app reports a failed lifespan step so: uvicorn logs the formatted traceback)."""
    if not _not_interrupted(record):
        return False
    msg = record.getMessage()
    last = msg.rstrip().rsplit("\n", 1)[-1]
    return not (msg.startswith("Traceback") and last.split(":", 1)[0].strip() in _INTERRUPT_NAMES)


def quiet_interrupted(logger: logging.Logger) -> None:
    """Drop `logger`'s records of the interrupt: a second Ctrl-C during `bindery serve`'s shutdown
    cancels the app's lifespan, whose traceback uvicorn logged as an error, ~40 lines before the
    command's one line (a new-user pass)."""
    if _no_interrupt_text not in logger.filters:
        logger.addFilter(_no_interrupt_text)


def quiet_interrupted_logging() -> None:
    """Ctrl-C must end in one line. A library that logs the interrupt it re-raises (SQLAlchemy's
    pool logs "Exception closing connection" with the KeyboardInterrupt's traceback when the
    signal lands in a close) would print that traceback through logging's last-resort handler
    first; such records are dropped there. An interrupt inside a finalizer (`__del__`, a weakref
    callback, a generator's close) is not printed as "Exception ignored in" either, and since a
    finalizer cannot raise, Python drops it there: it is delivered again (`_redeliver`), or the
    Ctrl-C would be lost and the run go on. Everything else still reaches stderr, and `--debug`
    keeps them all."""
    last = logging.lastResort
    if last is not None and _not_interrupted not in last.filters:
        last.addFilter(_not_interrupted)
    if sys.unraisablehook is sys.__unraisablehook__:
        def hook(unraisable: Any) -> None:
            if _is_interrupt(unraisable.exc_value):
                _redeliver()
            else:
                sys.__unraisablehook__(unraisable)

        sys.unraisablehook = hook


def _is_interrupt(exc: BaseException | None) -> bool:
    # Dagster turns SIGINT into DagsterExecutionInterruptedError inside a run (named, not
    # imported: the hook must not import Dagster)
    return isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "DagsterExecutionInterruptedError"


_REDELIVERIES = [0]  # a bound, so a finalizer that swallows every interrupt cannot loop forever


def _redeliver() -> None:
    """Send SIGINT to this process again in 50 ms, from a timer thread: by then the finalizer
    that swallowed the first one has returned, and the handler raises where it can."""
    if _REDELIVERIES[0] >= 5:
        return
    _REDELIVERIES[0] += 1
    timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()
