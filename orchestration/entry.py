"""The `bindery` console script.

Ctrl-C ends every command in one line (`orchestration.cli.main`), but `main` can only catch it
once its module is imported, and importing the CLI (the configuration schema, SQLAlchemy, the
stages) takes a few tenths of a second. An interrupt in that window printed a traceback from
whatever module was loading. So this module imports nothing heavy, ends such an interrupt with
one line and 130, and hands over to the CLI's own handling once it is loaded.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from types import FrameType
from typing import NoReturn


def _starting(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("bindery: interrupted while starting; nothing was done\n")
    sys.stderr.flush()
    os._exit(130)  # half-imported modules: no finalizers, nothing of ours to flush


def main() -> NoReturn:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when the caller ignores it
        signal.signal(signal.SIGINT, _starting)
    # the imports make objects that live until exit and almost no garbage (~700 objects in
    # cycles): the cyclic collector ran ~140 times over them while they loaded, ~40 ms of the
    # ~0.3 s of CPU a `bindery plan` spends importing; `entry` freezes them out of its sight
    gc.disable()
    try:
        from orchestration.cli import entry
    finally:
        gc.enable()

    if signal.getsignal(signal.SIGINT) is _starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    entry()
