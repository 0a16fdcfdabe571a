"""What a query's text must be, in one place: the query service refuses anything else, and an
eval set is checked against the same rules when it is loaded (a case the service would refuse
failed the gate's run halfway, with no line number)."""

from __future__ import annotations

import unicodedata

from connectors.errors import QueryError

__all__ = ["MAX_QUERY_CHARS", "check_text", "query_problem"]

MAX_QUERY_CHARS = 4000


def check_text(value: str) -> str:
    """`value` itself when it is valid Unicode text; QueryError otherwise (a lone surrogate,
    e.g. from a JSON ``"\\ud800"`` escape, which no index can match and tantivy rejects)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError(f"{value.encode('utf-8', 'backslashreplace').decode()[:80]!r} is not valid Unicode "
                         "text (it contains a lone surrogate)") from None
    return value


def query_problem(query: str) -> str | None:
    """Why the query service would refuse `query` (stripped), or None when it would take it."""
    try:
        q = check_text((query or "").strip())
    except QueryError as e:
        return str(e)
    if not q:
        return "query is empty"
    # controls, format characters (zero-width space, soft hyphen) and separators; not private-use
    # or unassigned code points, which may be what a newer font draws (an emoji Python predates)
    if all(unicodedata.category(ch) in ("Cc", "Cf") or unicodedata.category(ch)[0] == "Z" for ch in q):
        return "query is empty: it holds only invisible or control characters"
    if len(q) > MAX_QUERY_CHARS:
        return f"query is {len(q)} characters; the limit is {MAX_QUERY_CHARS}"
    return None
