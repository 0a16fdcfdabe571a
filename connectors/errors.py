"""Bindery's error hierarchy. Every failure a user can cause or meet has its own class::

    BinderyError
    ├── ConfigError            bad or incomplete configuration
    │   └── UsageError         a mistake in the command line itself (an argument, not the file)
    ├── SourceError            a source could not be listed or read (down, denied, missing)
    │   ├── SourceUnavailable  the whole source is out of reach (endpoint down, credentials, bucket)
    │   └── UnsafeDeleteError  a listing too small to trust; the delete sweep was aborted
    ├── ParseError             one document could not be parsed (reason is specific)
    │   ├── EncryptedDocument
    │   ├── CorruptDocument    truncated / invalid bytes
    │   ├── EmptyDocument      no text at all
    │   ├── NeedsOCR           image-only pages and OCR unavailable
    │   ├── UnsupportedFormat  nothing can parse this kind of file
    │   ├── FormatMismatch     bytes do not match the extension
    │   └── TooLarge           over the source's size limit
    ├── StoreError             the document store refused an operation
    ├── IndexError_            a vector or keyword index refused an operation
    ├── BindingError           no live binding, or the binding cannot be served
    │   ├── EmbedderMismatch   query embedder differs from the one the generation was built with
    │   └── EmbedderUnavailable the generation's recorded embedder backend cannot run here
    ├── GateRefused            the eval gate refused a candidate
    └── QueryError             a malformed query (maps to HTTP 4xx)
"""

from __future__ import annotations

import re
from typing import Any


class BinderyError(Exception):
    """Base class of every error Bindery raises on purpose."""

    reason = "error"


class ConfigError(BinderyError):
    reason = "config"


class UsageError(ConfigError):
    """A mistake in the command line (`--source nope`, `--force` without `--reason`): exit 2 like
    a configuration mistake, with `"reason": "usage"` (docs/json-contract.md)."""

    reason = "usage"


class UnknownGeneration(UsageError):
    """A generation asked for by an id or name that no generation has (`--generation 99`): the
    caller's mistake, as an unknown `--source` is."""


class SourceError(BinderyError):
    """`transient`: the failure may be the source's, not the item's (a 5xx after the retries, a
    read that timed out): one is the item's dead letter, a run of them the source's failure."""

    reason = "source"

    def __init__(self, *args: Any, transient: bool = False) -> None:
        super().__init__(*args)
        self.transient = transient


class SourceUnavailable(SourceError):
    """Not one item but the whole source failed (endpoint unreachable, credentials rejected,
    bucket gone, or several items in a row failing with transient errors): the sync stops that
    source and fails with the reason, as a failed listing does, instead of dead-lettering every
    item it then tries and reporting success."""


class UnreadableAcl(SourceError):
    """A local source's `.bindery-acl` files that could not be read. The listing fails (an ACL
    file read as nothing must never mean the folder above decides), and the documents they
    govern are withheld from everyone until they can be read: the files under `folders` (paths
    relative to the root, `""`: all of them) and those whose ACL came from one of `origins` (a
    link elsewhere to a file they govern). Their old, possibly wider ACL must not outlive the
    file that changed it."""

    def __init__(self, *args: Any, folders: tuple[str, ...] = ("",), origins: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        self.folders = folders
        self.origins = origins


class UnsafeDeleteError(SourceError):
    reason = "unsafe-delete"


# What an interrupt is called once a C library that runs Python callbacks (MuPDF) has turned it
# into an error of its own: Ctrl-C's KeyboardInterrupt, Dagster's cancel/terminate.
_INTERRUPT_NAMES = ("KeyboardInterrupt", "DagsterExecutionInterruptedError")


def raise_if_interrupt(e: Exception) -> None:
    """Re-raise as KeyboardInterrupt an error that is an interrupt in disguise, so a parser's
    `except Exception` never records a run being stopped as the document's failure (an OCR
    cancelled from the UI was dead-lettered as `needs-ocr` for good, and the run went on)."""
    if any(name in f"{type(e).__name__}: {e}" for name in _INTERRUPT_NAMES):
        raise KeyboardInterrupt(f"interrupted inside a library: {e}") from e


class ParseError(BinderyError):
    reason = "parse-failed"


class EncryptedDocument(ParseError):
    reason = "encrypted"


class CorruptDocument(ParseError):
    reason = "corrupt"


class EmptyDocument(ParseError):
    reason = "empty"


class NeedsOCR(ParseError):
    reason = "needs-ocr"


class UnsupportedFormat(ParseError):
    reason = "unsupported-format"


class FormatMismatch(ParseError):
    reason = "format-mismatch"


class TooLarge(ParseError):
    reason = "too-large"


class ParseTimeout(ParseError):
    """A parse that ran past `stages.parse.max_parse_seconds` (`assets.parse_watch.time_limit`)."""

    reason = "parse-timeout"


def size_text(n_bytes: float, limit: float | None = None) -> str:
    """A size in a too-large message: megabytes, or bytes where the limit (`limit`, else the size
    itself) is below a tenth of one (`max_file_mb: 0.035` read "the 0.0 MB limit"); a size and
    its limit are told in one unit."""
    return f"{n_bytes / 1e6:.1f} MB" if (n_bytes if limit is None else limit) >= 100_000 else f"{int(n_bytes):,} bytes"


class StoreError(BinderyError):
    reason = "store"


class IndexError_(BinderyError):  # noqa: N801 - avoid shadowing the builtin IndexError
    reason = "index"


class IndexUnreadable(IndexError_):
    """An embedded index's files cannot be opened (damaged, truncated): `bindery verify --repair`
    rebuilds it from the store. Not a lock, an outage or a failed write: those stay IndexError_."""


class BindingError(BinderyError):
    reason = "binding"


class EmbedderMismatch(BindingError):
    reason = "embedder-mismatch"


class EmbedderUnavailable(BindingError):
    reason = "embedder-unavailable"


class GateRefused(BinderyError):
    reason = "gate-refused"

    def __init__(self, message: str, report: dict[str, Any] | None = None):
        super().__init__(message)
        self.report = report or {}


class QueryError(BinderyError):
    reason = "bad-query"


_URL_PASSWORD = re.compile(r":[^:/@\s]+@")  # user:PASSWORD@host, with or without a well-formed scheme


def without_secrets(text: str) -> str:
    """`text` with every URL password (scheme://user:PASSWORD@host) replaced by ***: an error
    message that names a URL lands in terminals, CI logs and `--json` output."""
    return _URL_PASSWORD.sub(":***@", text)


_FULL_ERRNOS = (28, 122)  # ENOSPC, EDQUOT
_FULL_TEXT = re.compile(r"database or disk is full|no space left on device|disk quota exceeded", re.IGNORECASE)


def out_of_space(e: BaseException, folder: str | None = None) -> str | None:
    """The one-line reason when `e` (or what caused it) is a full disk, else None. SQLite often
    says only "disk I/O error" when its write hits a full disk: that counts when `folder` (the
    data_dir) has next to nothing free. A full disk printed several screens of SQL from the
    event log and ended in "internal error: OperationalError ... disk I/O error", never saying
    "full" (a robustness pass)."""
    chain: list[BaseException] = []
    seen: BaseException | None = e
    while seen is not None and len(chain) < 32:  # a cause chain is short; never follow one forever
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    full = any((isinstance(x, OSError) and x.errno in _FULL_ERRNOS) or _FULL_TEXT.search(str(x)) for x in chain)
    if not full and not (folder and any("disk i/o error" in str(x).lower() for x in chain) and _nearly_full(folder)):
        return None
    where = f" (data_dir {folder})" if folder else ""
    return (f"no space left on the device{where}: free some space and run again; what was already stored "
            "and indexed is kept, and the next run resumes from it")


def _nearly_full(folder: str) -> bool:
    import shutil

    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return False
    return usage.free < min(64 * 2**20, usage.total // 100)
