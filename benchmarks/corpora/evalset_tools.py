"""Shared helpers of the eval-set generators in this folder: snippets, validation, writing.

Every generator builds a list of cases (the `evals.evalset` line format) from a corpus laid out
by ``fetch.sh``, then calls `write_checked`, which refuses to write a set in which

- a gold document or an excluded document is not a file under the source root;
- a gold snippet does not occur in the document's normalised whole-page text (the text
  ``benchmarks.naive.page_text`` extracts: what any pipeline starts from);
- two cases share an id, or the file does not load with `evals.evalset.load_eval_set`.

``python -m benchmarks.corpora.evalset_tools [CORPORA]`` runs the same checks on every committed
set in ``benchmarks/evalsets`` against the corpora laid out by ``fetch.sh``.

It also reports (never refuses) snippets that Bindery's own parser does not reproduce, so a gold
label that no chunk of the product could ever contain is visible rather than silently unreachable.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.naive import page_text
from evals.evalset import load_eval_set, normalise

__all__ = ["CORPUS_OF", "Case", "bindery_text", "generate", "opening_words", "unique_questions", "write_checked"]

Case = dict[str, Any]
# sets that ask other questions of another set's corpus (they have no folder of their own)
CORPUS_OF = {"mail_ham_pasted": "mail_ham", "mail_ham_quoted": "mail_ham",
             "mail_lkml_pasted": "mail_lkml", "mail_lkml_quoted": "mail_lkml"}
SNIPPET_WORDS = 10


def corpora_dir() -> Path:
    """Where `fetch.sh` laid the corpora out: the generators' first argument, else its default."""
    return Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / ".cache" / "bench-corpora"


def opening_words(text: str, n: int = SNIPPET_WORDS) -> str:
    """The first ``n`` words of ``text`` after normalisation (the gold snippet form)."""
    return " ".join(normalise(text).split()[:n])


def bindery_text(path: Path) -> str | None:
    """Bindery's parsed text of a file (all blocks, blank-line separated), or None if it fails."""
    from assets.parsing import parse_document

    try:
        result = parse_document(path.read_bytes(), path.name)
    except Exception as exc:  # reported by the caller; a failed parse is a finding, not a crash
        print(f"  bindery cannot parse {path.name}: {exc}", file=sys.stderr)
        return None
    return "\n\n".join(b.text for b in result.blocks)


def _problems(cases: Sequence[Case], root: Path) -> tuple[list[str], list[str]]:
    """Hard problems (refuse the set) and soft ones (snippets Bindery's parser loses)."""
    hard: list[str] = []
    soft: list[str] = []
    naive: dict[str, str] = {}
    parsed: dict[str, str | None] = {}
    dup = [i for i, n in Counter(c["id"] for c in cases).items() if n > 1]
    hard += [f"duplicate id {i}" for i in dup]
    for case in cases:
        for doc in [g["doc"] for g in case["gold"]] + list(case.get("exclude_docs", [])):
            if not (root / doc).is_file():
                hard.append(f"{case['id']}: no file {doc}")
        for g in case["gold"]:
            if g["text"] is None or not (root / g["doc"]).is_file():
                continue
            if g["doc"] not in naive:
                naive[g["doc"]] = normalise(page_text(root / g["doc"]))
                parsed_text = bindery_text(root / g["doc"])
                parsed[g["doc"]] = None if parsed_text is None else normalise(parsed_text)
            snippet = normalise(g["text"])
            if snippet not in naive[g["doc"]]:
                hard.append(f"{case['id']}: snippet {snippet!r} not in {g['doc']}")
            elif parsed[g["doc"]] is not None and snippet not in (parsed[g["doc"]] or ""):
                soft.append(f"{case['id']}: snippet {snippet!r} not in Bindery's parse of {g['doc']}")
    return hard, soft


def unique_questions(cases: Sequence[Case], prefix: str) -> list[Case]:
    """`cases` without the questions asked twice (one wording, two gold answers: neither can be
    judged), numbered `prefix-0`, `prefix-1`, ... in order."""
    counts = Counter(c["query"].lower() for c in cases)
    kept = [c for c in cases if counts[c["query"].lower()] == 1]
    return [{**c, "id": f"{prefix}-{i}"} for i, c in enumerate(kept)]


def generate(name: str, make: Callable[[Path], Sequence[Case]], out: Path) -> int:
    """A generator's whole run: the cases `make` draws from the corpus `name` (under
    `corpora_dir()`), checked against it and written to `out`; the exit status."""
    root = corpora_dir() / name
    write_checked(make(root), root, out)
    return 0


def write_checked(cases: Sequence[Case], root: Path, out: Path) -> None:
    """Validate ``cases`` against the corpus at ``root`` and write them as JSONL to ``out``."""
    hard, soft = _problems(cases, root)
    for line in soft:
        print(f"  note: {line}", file=sys.stderr)
    if hard:
        for line in hard[:30]:
            print(f"  error: {line}", file=sys.stderr)
        raise SystemExit(f"{out.name}: {len(hard)} problems; nothing written")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    loaded = load_eval_set(out)
    cats = Counter(c.category for c in loaded)
    print(f"{out}: {len(loaded)} cases, {len({g.doc for c in loaded for g in c.gold})} gold docs, "
          f"{len(soft)} snippets not in Bindery's parse; categories {dict(sorted(cats.items()))}")


def main(argv: Sequence[str] | None = None) -> int:
    """Check every committed set against its corpus; exit 1 if any has a hard problem."""
    args = list(sys.argv[1:] if argv is None else argv)
    corpora = Path(args[0]) if args else Path.home() / ".cache" / "bench-corpora"
    failed = 0
    for path in sorted((Path(__file__).resolve().parent.parent / "evalsets").glob("*.jsonl")):
        cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        hard, soft = _problems(cases, corpora / CORPUS_OF.get(path.stem, path.stem))
        failed += bool(hard)
        print(f"{path.stem}: {len(cases)} cases, {len(hard)} problems, "
              f"{len(soft)} snippets not in Bindery's parse" + "".join(f"\n  {h}" for h in hard[:10]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
