"""The AsciiDoc patterns and limits more than one part of the reader needs: attribute entries and
references, attribute lists, block attribute lines, table fences and the mark an include line
leaves for the block reader."""

from __future__ import annotations

import re

MAX_ATTRIBUTE_CHARS = 4096  # an attribute's value is cut here: values built of values doubled each line
MAX_COLUMNS = 256  # a `cols` count beyond this is read from the rows instead (`cols="300000000*"`)
ATTRIBUTE_ENTRY = re.compile(r"^:(!?)([\w][\w-]*)(!?):(?:[ \t]+(.*))?$")
ATTRIBUTE_REF = re.compile(r"(\\?)\{([\w][\w-]*)\}")
# one entry of an attribute list: `name="a, b"`, `name=value` or a positional value
ATTRIBUTE_LIST = re.compile(r"\s*(?:([\w-]+)\s*=\s*)?(\"[^\"]*\"|'[^']*'|[^,]*)\s*(?:,|$)")
INCLUDED = "\x00include:"  # what `preprocess` leaves where an include line was
BLOCK_ATTRIBUTES = re.compile(r"^\[(.*)\][ \t]*$")
TABLE = re.compile(r"^([|,:!])={3,}[ \t]*$")
