"""A guard for markup that libxml2 would take quadratic time over: one element with thousands
of attributes.

libxml2 (under lxml, for HTML, XML and the XML parts of OOXML, ODF and EPUB packages) checks each
attribute of an element against the ones before it, so one start tag with n attributes costs n²:
an 870 KB XML file of one element with 80,000 attributes held a sync for 53 s, and a 10 MB one
would hold it for hours (an attacker pass). The time goes in one native call, which the parse
time limit (`assets.parse_watch.time_limit`, a signal handled between Python bytecodes) cannot
stop. Real documents stay far below the limit (a few dozen attributes on an SVG path or a
Word run), so such a tag is refused before lxml sees it: a `corrupt` dead letter saying why.
"""

from __future__ import annotations

import re

from connectors.errors import CorruptDocument

__all__ = ["MAX_ATTRIBUTES", "refuse_attribute_flood"]

MAX_ATTRIBUTES = 512  # per element; an 8,000-attribute tag already takes lxml's HTML parser 0.1 s

# a start tag's name, then MAX_ATTRIBUTES attributes (name, optional value), each matched
# atomically so a failed attempt never backtracks into the attributes before it: linear in the
# input (30 ms for 15 MB of HTML)
_ATTRIBUTE = r"""(?>\s+[^\s=<>/]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*))?)"""
_TAG = r"<[A-Za-z_][^\s<>/]*" + _ATTRIBUTE + f"{{{MAX_ATTRIBUTES}}}"
_FLOOD_STR = re.compile(_TAG)
_FLOOD_BYTES = re.compile(_TAG.encode())


def refuse_attribute_flood(markup: str | bytes, what: str) -> None:
    """CorruptDocument when an element of `markup` has more than MAX_ATTRIBUTES attributes."""
    found = (_FLOOD_STR.search(markup) if isinstance(markup, str) else _FLOOD_BYTES.search(markup))
    if found is not None:
        raise CorruptDocument(
            f"{what} has an element with more than {MAX_ATTRIBUTES:,} attributes: refused, since parsing "
            "it takes time that grows with the square of their number (no document needs so many)")
