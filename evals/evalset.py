"""Eval sets: JSONL files of labelled queries, validated once on load.

One case per line::

    {"id": "q1", "query": "...", "gold": [{"doc": "faq/design.html", "text": "snippet" | null}],
     "category": "faq-question", "exclude_docs": ["faq/old.html"]}

Labels name a document by its external id (path relative to its source root) plus an optional
normalised snippet, so they survive re-chunking; chunk ids would not. A malformed file is a
configuration error: `load_eval_set` refuses it with the file, the line and the problem, because
a gate judged on a half-read eval set would be worse than no gate.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from connectors.errors import ConfigError
from connectors.query_limits import query_problem

__all__ = [
    "DEFAULT_CATEGORY",
    "EvalCase",
    "Gold",
    "InvalidCaseError",
    "load_eval_set",
    "normalise",
    "parse_case",
]

DEFAULT_CATEGORY = "uncategorised"

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lowercase, fold every run of characters outside ``[0-9a-z]`` to one space, strip.

    This is the one normalisation both labels and retrieved chunk texts go through, so a label
    matches regardless of punctuation, quotes, markup residue or line breaks. Non-ASCII letters
    are outside ``[0-9a-z]`` and become spaces too (by design: the spec is ASCII-only). The
    function is idempotent: ``normalise(normalise(t)) == normalise(t)``.
    """
    return _NON_ALNUM.sub(" ", text.lower()).strip()


@dataclass(frozen=True)
class Gold:
    """One relevant item: a document (external id) and, optionally, a normalised snippet that
    a retrieved chunk of that document must contain. ``text=None`` means any chunk of the
    document is relevant."""

    doc: str
    text: str | None = None
    # the source, when the label named it (``source:path``, `resolve_source_prefixes`): then only
    # that source's document answers, not another source's file at the same path
    source: str | None = None

    def satisfied_by(self, doc: str, normalised_text: str, source: str | None = None) -> bool:
        """True iff a hit from ``doc`` (of ``source``, when the search says) whose normalised
        text is ``normalised_text`` satisfies this gold item."""
        return (doc == self.doc and (self.source is None or source is None or source == self.source)
                and (self.text is None or self.text in normalised_text))


@dataclass(frozen=True)
class EvalCase:
    """One labelled query. ``gold`` and ``exclude_docs`` are tuples so cases are immutable and
    hashable; iterate them like lists."""

    id: str
    query: str
    gold: tuple[Gold, ...]
    category: str = DEFAULT_CATEGORY
    exclude_docs: tuple[str, ...] = ()
    draft: bool = False  # `"draft": true`, as `evalset draft` wrote it: no person has reviewed it yet


class InvalidCaseError(ValueError):
    """One case line is malformed; `load_eval_set` turns it into a located `ConfigError`."""


def _nonempty_str(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidCaseError(f"{what} must be a non-empty string, got {value!r}")
    return value


CASE_KEYS = ("id", "query", "gold", "category", "exclude_docs")
GOLD_KEYS = ("doc", "text")


def _misspelt(key: str, known: str) -> bool:
    """`key` reads as a slip of the keyboard on `known`. A key that adds a word to a known one
    is an annotation (`category_id`, `gold_ids`), and so are a short key's plural and other
    short words (`docs`, `ids`, `qid`, `doi`); a short key is a slip when it differs only in
    case, a letter left out or two letters swapped (`Id`, `txt`, `txet`), a long one when it is
    close enough (`exlude_docs`, `categroy`, `categories`)."""
    if key == known or key.startswith(known + "_") or key.endswith("_" + known):
        return False
    if len(known) >= 5:
        return difflib.SequenceMatcher(None, key.lower(), known).ratio() >= 0.75
    if key.lower() == known:
        return True
    if len(key) == len(known) - 1 >= 3:  # a letter left out
        return any(known[:i] + known[i + 1:] == key for i in range(len(known)))
    diff = [i for i, (a, b) in enumerate(zip(key, known, strict=False)) if a != b]
    return (len(key) == len(known) and len(diff) == 2 and diff[1] == diff[0] + 1  # two swapped
            and key[diff[0]] == known[diff[1]] and key[diff[1]] == known[diff[0]])


def _no_misspelt_keys(obj: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    """Other keys are annotations (`evalset draft` marks its cases `"draft": true`), but one that
    is a near miss of a known key is a typo whose meaning would be silently lost: an
    `exlude_docs` would leave the documents it names in the results."""
    for key in obj:
        if key not in known and (near := [k for k in known if _misspelt(str(key), k)]):
            raise InvalidCaseError(f"{where}unknown key {key!r} (did you mean {near[0]!r}?)")


def _parse_gold(raw: Any, index: int) -> Gold:
    where = f"gold[{index}]"
    if not isinstance(raw, dict):
        raise InvalidCaseError(f"{where} must be an object with 'doc' and 'text', got {raw!r}")
    _no_misspelt_keys(raw, GOLD_KEYS, f"{where}: ")
    if "doc" not in raw:
        raise InvalidCaseError(f"{where} has no 'doc'")
    doc = _nonempty_str(raw["doc"], f"{where}.doc")
    text = raw.get("text")
    if text is None:
        return Gold(doc=doc, text=None)
    if not isinstance(text, str):
        raise InvalidCaseError(f"{where}.text must be a string or null, got {text!r}")
    norm = normalise(text)
    if not norm:
        # An empty snippet would be contained in every chunk; say null if that is meant.
        raise InvalidCaseError(f"{where}.text {text!r} is empty after normalisation (use null)")
    return Gold(doc=doc, text=norm)


def parse_case(obj: Any) -> EvalCase:
    """Validate one decoded JSON line and build an `EvalCase`.

    Raises `InvalidCaseError` with the problem (without the location; `load_eval_set` adds it).
    """
    if not isinstance(obj, dict):
        raise InvalidCaseError(f"a case must be a JSON object, got {type(obj).__name__}")
    _no_misspelt_keys(obj, CASE_KEYS, "")
    if "id" not in obj:
        raise InvalidCaseError("missing 'id'")
    case_id = obj["id"]
    if isinstance(case_id, bool) or not isinstance(case_id, str | int):
        raise InvalidCaseError(f"'id' must be a string or an integer, got {case_id!r}")
    case_id = _nonempty_str(str(case_id), "'id'")
    if "query" not in obj:
        raise InvalidCaseError("missing 'query'")
    query = _nonempty_str(obj["query"], "'query'")
    if (bad := query_problem(query)) is not None:  # the query service would refuse it mid-gate
        raise InvalidCaseError(f"'query': {bad}")

    gold_raw = obj.get("gold")
    if not isinstance(gold_raw, list) or not gold_raw:
        raise InvalidCaseError(f"'gold' must be a non-empty list, got {gold_raw!r}")
    gold = tuple(_parse_gold(g, i) for i, g in enumerate(gold_raw))
    if len(set(gold)) != len(gold):
        raise InvalidCaseError("'gold' lists the same doc and text twice")

    category = obj.get("category")
    category = DEFAULT_CATEGORY if category is None else _nonempty_str(category, "'category'")

    excl_raw = obj.get("exclude_docs") or []
    if not isinstance(excl_raw, list):
        raise InvalidCaseError(f"'exclude_docs' must be a list of doc ids, got {excl_raw!r}")
    exclude = tuple(_nonempty_str(d, "'exclude_docs' entry") for d in excl_raw)
    clash = sorted({g.doc for g in gold} & set(exclude))
    if clash:
        raise InvalidCaseError(
            f"gold doc(s) {clash} are also in 'exclude_docs'; they could never match"
        )
    return EvalCase(id=case_id, query=query, gold=gold, category=category, exclude_docs=exclude,
                    draft=obj.get("draft") is True)


def load_eval_set(path: str | Path) -> list[EvalCase]:
    """Read and validate a JSONL eval set; blank lines are skipped.

    Raises `ConfigError` naming ``file:line`` and the problem for unreadable files, bad JSON,
    a missing id or query, empty gold, a malformed gold entry or exclude list, a duplicate id,
    or a file with no cases at all.
    """
    p = Path(path)
    try:
        # records end at a line break ("\n", "\r\n" or an old Mac's "\r", which JSON forbids raw
        # inside a string): splitlines() also broke a line at a raw U+2028, U+0085 or form feed
        # inside a string, which `json.dumps(..., ensure_ascii=False)` writes as they are
        lines = p.read_text(encoding="utf-8-sig").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read eval set: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: eval set is not UTF-8: {exc}") from exc

    cases: list[EvalCase] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}:{lineno}: bad JSON: {exc.msg} (column {exc.colno})") from exc
        except RecursionError:
            raise ConfigError(f"{p}:{lineno}: bad JSON: nested too deeply") from None
        try:
            case = parse_case(obj)
        except InvalidCaseError as exc:
            raise ConfigError(f"{p}:{lineno}: {exc}") from exc
        if case.id in first_line:
            raise ConfigError(
                f"{p}:{lineno}: duplicate id {case.id!r} (first used on line {first_line[case.id]})"
            )
        first_line[case.id] = lineno
        cases.append(case)
    if not cases:
        raise ConfigError(f"{p}: eval set has no cases")
    return cases


def resolve_source_prefixes(cases: Iterable[EvalCase], documents: Iterable[tuple[str, str]],
                            path: str | Path | None = None) -> list[EvalCase]:
    """Cases whose gold and excluded documents written as `bindery query` prints a hit,
    ``source:path``, name the document ``path`` of that source.

    `documents` are (source, external id) pairs of the store. A name that is itself a document's
    id stays as it is (a path may contain ':'); one that is neither is left for the eval's
    "not in the corpus" warning. A gold document that its case also excludes, written once with
    its source and once without, is refused as `parse_case` refuses one written alike (a
    ConfigError naming `path` and the case): its question could never score."""
    docs = list(documents)
    ids: dict[str, tuple[str | None, str]] = {ext: (None, ext) for _, ext in docs}
    prefixed = {f"{src}:{ext}": (src, ext) for src, ext in docs}
    # a file name stored decomposed (NFD, as macOS writes "café") and typed composed (NFC, as
    # editors and browsers write it) is the same document
    composed = {unicodedata.normalize("NFC", k): v for k, v in (*ids.items(), *prefixed.items())}

    def resolve(name: str) -> tuple[str | None, str]:
        """(the source the name gives, or None; the external id)."""
        if name in ids:
            return ids[name]
        return prefixed.get(name) or composed.get(unicodedata.normalize("NFC", name), (None, name))

    def gold(g: Gold) -> Gold:
        source, doc = resolve(g.doc)
        return replace(g, doc=doc, source=source)

    resolved = [replace(c, gold=tuple(gold(g) for g in c.gold),
                        exclude_docs=tuple(resolve(d)[1] for d in c.exclude_docs)) for c in cases]
    for c in resolved:
        if clash := sorted({g.doc for g in c.gold} & set(c.exclude_docs)):
            raise ConfigError(f"{path or 'eval set'}: case {c.id!r}: gold doc(s) {clash} are also in 'exclude_docs' "
                              "(one written as source:path, one without: the same document); they could never match")
    return resolved

