"""A wall-clock guard for tests of inputs that used to hang a parser (super-linear patterns):
they must finish far inside an alarm the old code overran by minutes. Main thread only (SIGALRM)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def alarm(seconds: int) -> Iterator[None]:
    def hung(*_: object) -> None:
        raise TimeoutError("still super-linear: parsing did not finish")

    prior = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, prior)
