"""The roff language under manual pages: escapes, strings, request lines, arguments, comments
and continuation lines (`assets/parsing/man.py` reads the man and mdoc macros on top of it).

Only what a page's *text* needs is interpreted: fonts, sizes, motions and registers print
nothing; named glyphs and strings print their characters; a conditional's condition is decided
for nroff (a terminal), the output a reader of `man` sees.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from connectors.errors import TooLarge

__all__ = ["REQUEST", "Roff", "args", "condition", "logical_lines"]

_GLYPHS = {
    "em": "—", "en": "–", "hy": "-", "mi": "-", "bu": "•", "aq": "'", "dq": '"', "lq": "“", "rq": "”",
    "oq": "‘", "cq": "’", "Fo": "«", "Fc": "»", "co": "©", "rg": "®", "tm": "™", "de": "°", "mu": "×",
    "di": "÷", "+-": "±", "<=": "≤", ">=": "≥", "!=": "≠", "==": "≡", "->": "→", "<-": "←", "<>": "↔",
    "ti": "~", "ha": "^", "rs": "\\", "sl": "/", "ba": "|", "or": "|", "ga": "`", "aa": "´", "sc": "§",
    "ps": "¶", "dg": "†", "dd": "‡", "fm": "′", "ua": "↑", "da": "↓", "12": "½", "14": "¼", "34": "¾",
    "ss": "ß", "ct": "¢", "Po": "£", "Eu": "€", "eu": "€", "Ye": "¥", "at": "@", "sh": "#", "Do": "$",
    "pc": "·", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "la": "⟨", "ra": "⟩", "ul": "_", "ru": "_",
    "bv": "|", "sq": "□", "OK": "✓", "if": "∞", "*a": "α", "*b": "β", "*m": "μ", "*p": "π", "*W": "Ω",
    "'e": "é", "`e": "è", "'a": "á", "`a": "à", ":a": "ä", ":o": "ö", ":u": "ü", "'E": "É", ",c": "ç",
    "~n": "ñ", "ff": "ff", "fi": "fi", "fl": "fl", "Fi": "ffi", "Fl": "ffl", "**": "*", "pl": "+",
    "eq": "=", "ci": "○", "sd": "″", "oa": "å", "oA": "Å", ":A": "Ä", ":O": "Ö", ":U": "Ü", ":e": "ë",
    ":i": "ï", "^a": "â", "^e": "ê", "^i": "î", "^o": "ô", "^u": "û", "'i": "í", "'o": "ó", "'u": "ú",
    "`o": "ò", "~a": "ã", "~o": "õ", "/o": "ø", "/O": "Ø", ",C": "Ç", "AE": "Æ", "ae": "æ", "*S": "Σ",
    "*D": "Δ", "*G": "Γ", "*L": "Λ", "*P": "Π", "*F": "Φ", "*Y": "Ψ", "*g": "γ", "*d": "δ", "*e": "ε",
    "*l": "λ", "*s": "σ", "*t": "τ", "*f": "φ", "*w": "ω", "*r": "ρ", "*h": "θ", "*q": "ψ", "*c": "ξ",
    "sr": "√", "pt": "∝", "is": "∫", "mo": "∈", "no": "¬", "an": "‐", "ho": "˛", "a-": "¯", "a.": "˙",
}
# Strings every page may use: groff's man/mdoc predefine some, pod2man defines the rest under
# troff-only conditions this reader does not run.
_STRINGS = {
    "R": "®", "Tm": "™", "lq": "“", "rq": "”", "S": "", "HF": "", "C+": "C++", 'L"': "“", 'R"': "”",
    "C`": "'", "C'": "'", "--": "—", "PI": "π", "Aq": "'", "Lq": "“", "Rq": "”", "Ba": "|",
}
_ONE_CHAR = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "0": " ", "~": " ", "'": "'", "`": "`",
             ".": ".", "t": "\t", "E": "\\"}
_ESCAPE = re.compile(
    r"""\\(?:
        (?P<font>f(?:\[[^\]\n]{0,64}\]|\(..|.))
      | (?P<size>s(?:[+-]?\d|\(\d\d|[+-]?\[\d{0,8}\]|'[^'\n]{0,32}'))
      | \((?P<glyph2>..)
      | \[(?P<glyph>[^\]\n]{0,64})\]
      | \*(?:\((?P<str2>..)|\[(?P<strn>[^\]\n]{0,64})\]|(?P<str1>.))
      | (?P<reg>n[+-]?(?:\(..|\[[^\]\n]{0,64}\]|.))
      | N'(?P<num>\d{1,7})'
      | (?P<delim>[hvwlLoXbDRZSxH]'[^'\n]{0,256}')
      | (?P<twochar>[kzYgMmV](?:\(..|\[[^\]\n]{0,64}\]|.))
      | (?P<one>.)
    )""",
    re.X,
)
REQUEST = re.compile(r"^[.'][ \t]*([^\s\\]*)[ \t]*(.*)$")
_COMMENT_LINE = re.compile(r"^(?:[.']\s*)?\\\"")  # a line that is only a comment
_COMMENT = re.compile(r'(?<!\\)((?:\\\\)*)\\"')  # \" not itself escaped, to the line's end


class Roff:
    """One document's string table (`.ds`, seeded with the usual predefined strings) and the
    resolution of escapes in its text."""

    # characters that `\*` string references may add to one document: a 10 KB string named
    # thousands of times made 100 MB of text from a 40 KB page
    EXPANSION_BUDGET = 2_000_000

    def __init__(self) -> None:
        self.strings: dict[str, str] = dict(_STRINGS)
        self.expanded = 0

    def text(self, s: str) -> str:
        """A line's text with its escapes resolved."""
        if "\\" not in s:
            return s
        return _ESCAPE.sub(self._escape, s)

    def _escape(self, m: re.Match[str]) -> str:
        g = m.group
        if g("glyph2") is not None:
            return _GLYPHS.get(g("glyph2"), "")
        if g("glyph") is not None:
            name = g("glyph")
            if re.fullmatch(r"u[0-9A-Fa-f]{4,6}(?:_[0-9A-Fa-f]{4,6})*", name):
                return "".join(_char(int(p, 16)) for p in name[1:].split("_"))
            return _GLYPHS.get(name, "")
        string = g("str2") or g("strn") or g("str1")
        if string is not None:
            value = self.strings.get(string, "")
            self.expanded += len(value)
            if self.expanded > self.EXPANSION_BUDGET:
                raise TooLarge(f"string references expand past {self.EXPANSION_BUDGET:,} characters")
            return self.text(value) if "\\*" not in value else ""  # no recursion through strings
        if g("num") is not None:
            return _char(int(g("num")))
        one = g("one")
        if one is not None:
            return _ONE_CHAR.get(one, "")
        return ""  # fonts, sizes, registers, motions, device controls



def _char(code: int) -> str:
    """A code point as text; nothing for NUL, surrogates (no index can store them) and
    numbers past Unicode."""
    return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code <= 0xDFFF else ""


def args(rest: str) -> list[str]:
    """A request's arguments: blank-separated, "double quoted" ones kept whole ("" is a quote)."""
    out: list[str] = []
    i, n = 0, len(rest)
    while i < n:
        while i < n and rest[i] in " \t":
            i += 1
        if i >= n:
            break
        if rest[i] == '"':
            j, buf = i + 1, []
            while j < n:
                if rest[j] == '"':
                    if j + 1 < n and rest[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(rest[j])
                j += 1
            out.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and rest[j] not in " \t":
                j += 2 if rest[j] == "\\" else 1
            out.append(rest[i:j])
            i = j
    return out


def logical_lines(text: str) -> Iterator[str]:
    """Lines with escaped newlines joined and comments removed (`\\"` to the line's end; a
    line that is only a comment disappears, as groff drops it)."""
    parts: list[str] = []  # a line continued with a trailing backslash, piece by piece
    for raw in text.split("\n"):
        if raw.endswith("\\") and not raw.endswith("\\\\"):
            parts.append(raw[:-1])
            continue
        line = "".join(parts) + raw if parts else raw
        parts = []
        if _COMMENT_LINE.match(line):
            continue
        cut = _COMMENT.search(line)
        if cut:
            line = line[: cut.start()] + cut.group(1)
            if not line.strip():
                continue
        if "\\#" in line:  # groff's comment that also eats the newline
            line = line.split("\\#", 1)[0]
        yield line
    if parts:
        yield "".join(parts)


def condition(cond: str) -> bool | None:
    """The value of an `.if` condition this reader can decide: nroff (`n`) is true, troff
    (`t`), `e`/`o` page parity and their negations; anything else (registers, string
    comparisons) is unknown."""
    neg = cond.startswith("!")
    c = cond[1:] if neg else cond
    value = {"n": True, "t": False, "e": False, "o": True}.get(c)
    if value is None:
        return None
    return not value if neg else value
