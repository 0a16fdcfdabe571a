"""Whether a process that left something behind (a run it was executing, a reader's private
index copy) is still there to clean up after itself."""

from __future__ import annotations

import os

__all__ = ["process_alive"]


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists on this machine (one owned by someone else counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
