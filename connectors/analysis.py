"""The keyword analyser shared by ingestion and the query service.

Both sides must turn text into the same identifier tokens, or an exact lookup like ``XR-4471``
silently misses. Everything here is pure (no I/O, no engine imports) so the tantivy and
Elasticsearch adapters, the query service and the tests all import the one definition.

Two jobs:

* :func:`identifiers` extracts identifier-like tokens (part numbers, versions, error codes,
  ticket ids, IP addresses, config keys, command names) for the exact-match ``ident`` field. A
  stemming analyser would split ``XR-4471`` into ``xr`` + ``4471`` and drown it in a long chunk;
  matching the whole token exactly is what makes such queries rank the right chunk first.
* :func:`sanitize_query` turns arbitrary user text into a string that tantivy's query parser
  accepts without a syntax error: users type natural language, not query syntax.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["IDENTIFIER_RE", "IDENT_BOOST", "MAX_IDENTIFIER_LEN", "OPTION_RE", "identifiers", "sanitize_query"]

#: A candidate token: ASCII alphanumeric/underscore runs joined by single inner separators
#: (``-`` ``.`` ``:`` ``/``). A separator must be followed by another run, so the full stop or
#: colon ending a sentence ("see XR-4471.") is not part of the token. The lookahead skips, inside
#: the regex engine, tokens without a digit, underscore or capital: all-lowercase words can never
#: be identifiers, and they are most of any text (this makes extraction about 10x faster).
IDENTIFIER_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?=[-.:/A-Za-z0-9_]*[0-9_A-Z])[A-Za-z0-9_]+(?:[-.:/][A-Za-z0-9_]+)*"
)

#: Longer candidates are noise (hashes, base64, minified code), not identifiers anyone types.
MAX_IDENTIFIER_LEN = 64

_SEPARATORS_RE = re.compile(r"[-_.:/]+")
_PATH_SPLIT_RE = re.compile(r"[:/]+")
_DOT_SPLIT_RE = re.compile(r"\.+")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_LETTER = re.compile(r"[A-Za-z]")
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
_ALLCAPS_RE = re.compile(r"[A-Z][A-Z0-9_]{2,}")

# Upper-case function words: headings and warnings in capitals ("NOTE", "THE") are not
# identifiers and would otherwise add noise to the exact-match field.
_CAPS_STOPWORD_TEXT = (
    "the and for not but are was were with from this that into onto over under your you our all "
    "any can may must should will note warning caution important danger tip faq yes no none"
)
_CAPS_STOPWORDS = frozenset(_CAPS_STOPWORD_TEXT.split())


def _is_identifier(token: str) -> bool:
    """True when ``token`` (a match of :data:`IDENTIFIER_RE`) looks like an identifier.

    Rules, in order: it has a digit and at least one letter or separator (``XR-4471``,
    ``v2.14.3``, ``192.168.0.1``, ``INC-2041``); or it is snake_case with at least one letter
    (``max_payload_kg``), or upper case opening or ending with one (``N_``, ``__FILE__``); or it
    is ALLCAPS of at least three characters (``HSET``, ``CONFIG_SET``) and not a common word; or
    it is camelCase (``maxPayload``).
    """
    if len(token) > MAX_IDENTIFIER_LEN:
        return False
    has_letter = _HAS_LETTER.search(token) is not None
    if _HAS_DIGIT.search(token):
        return has_letter or _SEPARATORS_RE.search(token) is not None
    if not has_letter:
        return False
    core = token.strip("_")
    if "_" in core and len(core) >= 3:
        return True
    # an upper-case name with an edge underscore is a C macro (`N_`, `__FILE__`); a lower-case one
    # is a mail's emphasis far more often (`_that_`, `__really__`), a shouted word too (`_NOT_`)
    if core != token and core.isupper() and core.lower() not in _CAPS_STOPWORDS:
        return True
    if _ALLCAPS_RE.fullmatch(token) and token.lower() not in _CAPS_STOPWORDS:
        return True
    return _CAMEL_RE.search(token) is not None


def _components(token: str) -> list[str]:
    """``token`` followed by its colon/slash parts and then their dotted parts.

    ``192.168.0.1:8080`` -> itself, ``192.168.0.1``, ``8080``, ``192``, ...; the caller keeps
    only those that are identifiers.
    """
    if "." not in token and ":" not in token and "/" not in token:
        return [token]
    out = [token]
    parts = [p for p in _PATH_SPLIT_RE.split(token) if p]
    if len(parts) > 1:
        out.extend(parts)
    for part in parts:
        dotted = [p for p in _DOT_SPLIT_RE.split(part) if p]
        if len(dotted) > 1:
            out.extend(dotted)
    return out


#: Weight of an exact identifier match relative to the BM25 text score; the one definition both
#: keyword adapters (tantivy, Elasticsearch) read, so they rank identifiers alike.
IDENT_BOOST = 2.0


#: A command-line option as a command reference writes it and a user asks for it: `--file`,
#: `--dry-run`, find's `-empty`, `-f`, `-L`. The dash opens the token (not "well-known", not the
#: `:-P` of a smiley, not `=-x` in an expression or a URL), a letter follows it (not "-5"); a word
#: after one dash or two is lower case (a mail's sign-off "--Guido" is a name); the identifier
#: keeps its dashes, so `--file` is not the word "file". A one-letter option is folded to lower
#: case like every identifier (`-l` and `-L` meet): Elasticsearch's `ident` keyword field
#: normalises case, and both keyword adapters must rank identifiers alike.
OPTION_RE = re.compile(r"(?<![\w:=?&-])(-[A-Za-z]|--?[a-z][a-z0-9_-]{0,62}[a-z0-9])(?![\w-])")

#: Typeset dashes that stand for an option's: Texinfo's indexes, word processors and PDFs print
#: `--file` as "–file" (en dash) or "—file" (em dash), groff's UTF-8 pages `-v` as "−v" (minus
#: sign), "‐v" with a hyphen character. Read as the ASCII dashes they stand for before options
#: are looked for, at ingestion and at query time alike (sed's index asks "–expression, example").
_TYPESET_DASHES = str.maketrans({"\u2013": "--", "\u2014": "--", "\u2212": "-", "\u2010": "-"})


def identifiers(text: str) -> list[str]:
    """Identifier tokens of ``text``, lowercased, each once, in first-seen order.

    For every identifier it emits the lowercased token itself and, when different, the variant
    with separators removed (``XR-4471`` -> ``xr-4471``, ``xr4471``) so a query typed either way
    matches. Colon-, slash- or dot-joined compounds also emit those of their components that are
    identifiers on their own (``config.max_payload_kg`` -> ``max_payload_kg``,
    ``192.168.0.1:8080`` -> ``192.168.0.1``), so asking for the short name still finds the
    qualified one. Command-line options (`OPTION_RE`) follow, as written, without a squashed
    form (``--dry-run`` is not ``dryrun``). Ingestion and query call this same function, hence
    any two spellings that normalise alike match exactly.
    """
    out: dict[str, None] = {}
    for token in IDENTIFIER_RE.findall(text):
        if token.isalpha() and token[1:].islower():
            continue  # a capitalised word ("Pump"): the commonest candidate, never an identifier
        for candidate in _components(token):
            if not _is_identifier(candidate):
                continue
            lowered = candidate.lower()
            out.setdefault(lowered, None)
            squashed = _SEPARATORS_RE.sub("", lowered)
            if len(squashed) >= 2 and squashed != lowered:
                out.setdefault(squashed, None)
    for option in OPTION_RE.findall(text.translate(_TYPESET_DASHES)):
        out.setdefault(option.lower(), None)
    return list(out)


# Everything that is not a letter, a digit or whitespace: this covers every character of
# tantivy's query grammar (+ - && || ! ( ) { } [ ] ^ " ' ~ * ? : \ / < > = and more). A
# whitelist is safer than escaping a blacklist that grows with each grammar release.
# Lucene's and Elasticsearch's standard tokenizer (Unicode word boundaries) make each CJK
# ideograph and each hiragana a word of its own (a katakana run stays one); tantivy's split only
# at what is not a letter or a digit, so a Chinese or Japanese clause was one token no query
# matched. Spaced out, both keyword indexes read such text alike (`space_cjk`).
_CJK_CHAR = re.compile("([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f])")


def space_cjk(text: str) -> str:
    """``text`` with each CJK ideograph and hiragana set apart by spaces (a word of its own)."""
    return _CJK_CHAR.sub(r" \1 ", text) if _CJK_CHAR.search(text) else text


_QUERY_SYNTAX_RE = re.compile(r"[^\w\s]|_")
_WHITESPACE_RE = re.compile(r"\s+")


def sanitize_query(text: str) -> str:
    """Return ``text`` as plain lowercase words that tantivy's query parser cannot reject.

    Every character other than letters, digits and whitespace becomes a space (so ``XR-4471``
    becomes ``xr 4471``, which the stemmed text field tokenises the same way at index time),
    and the result is lowercased, which turns the ``AND``/``OR``/``NOT``/``IN`` operators into
    ordinary words. The result is either ``""`` or words separated by single spaces; callers
    treat ``""`` as "nothing to search". Exact identifier matching is not lost: it runs on
    :func:`identifiers` of the raw text, not on this string.
    """
    cleaned = _QUERY_SYNTAX_RE.sub(" ", space_cjk(text)).lower()
    return _WHITESPACE_RE.sub(" ", cleaned).strip()


# Function words skipped by the proximity pairs (`proximity_pairs`): a pair with one of them
# ("of the", "how do") says nothing about the topic and matches nearly every passage.
_PROXIMITY_STOPWORD_TEXT = (
    "a about above after again against all am an and any are as at be because been before being "
    "below between both but by can could did do does doing down during each few for from further "
    "had has have having he her here hers herself him himself his how i if in into is it its itself "
    "just me more most my myself no nor not now of off on once only or other our ours ourselves out "
    "over own same she should so some such than that the their theirs them themselves then there "
    "these they this those through to too under until up very was we were what when where which "
    "while who whom why will with would you your yours yourself yourselves s t"
)
PROXIMITY_STOPWORDS = frozenset(_PROXIMITY_STOPWORD_TEXT.split())
MAX_PROXIMITY_PAIRS = 32  # a pasted message can be hundreds of words: its first pairs only


def proximity_pairs(text: str) -> list[tuple[str, str, int]]:
    """Adjacent pairs of the non-stopword words of ``text`` (after :func:`sanitize_query`), each
    with the distance between them in the query (1 = next to each other; a stopword between
    them makes it 2): ``(first, second, gap)``. Duplicates once; at most
    ``MAX_PROXIMITY_PAIRS``. A query of fewer than two such words has none."""
    kept = [(i, w) for i, w in enumerate(sanitize_query(text).split()) if w not in PROXIMITY_STOPWORDS]
    out: list[tuple[str, str, int]] = []
    seen: set[tuple[str, str, int]] = set()
    for (i, a), (j, b) in itertools.pairwise(kept):
        pair = (a, b, j - i)
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
            if len(out) == MAX_PROXIMITY_PAIRS:
                break
    return out
