"""Generate ``benchmarks/evalsets/perl_pod.jsonl`` from Perl 5.36's POD documentation.

    python -m benchmarks.corpora.gen_perl_pod [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/perl_pod/*.pod``, laid out by ``fetch.sh``) is 58 pages of Perl's user
manual as Debian's ``perl-doc`` installs them: POD sources (``=head2``, ``=item``, ``=over``,
formatting codes ``C<...>``, ``L<...>``, ``X<...>``), read as-is. Two kinds of question, both
derived mechanically (first made outside the repository, for a pass on unseen corpora):

- ``faq-how`` / ``faq-what`` / ``faq-why`` / ``faq-yes-no`` / ``faq-other`` (100, by the form of
  the question): every ``=head2`` question of ``perlfaq1``-``perlfaq9``, its formatting codes
  removed and rewritten the way a user types it (`paraphrase`: "How do I X?" becomes "perl X",
  "how to X in perl" or "X" by a hash of the question; "What's the difference between A and B"
  "A vs B"; "Why X" "X - why?"; "Is there a X" "looking for X"; "Can I X" "is it possible to
  X"; then one word swapped for a synonym). Gold = the perlfaq file + the first
  `SNIPPET_WORDS` normalised words of the answer's first prose paragraph (not a verbatim code
  block, not a command line; ``X<>`` index codes removed), and only where those words read the
  same with the formatting codes resolved (`rendered`).
  Entries whose snippet has fewer words, or occurs twice in the file, are left out; 100 of the
  rest are drawn by the SHA-1 of the question (the lowest hashes), listed in id order.
- ``variable`` (40): the entries of ``perlvar.pod`` (``=item $NAME`` groups, ``=item`` lines that
  share one description taken as one entry), in file order: query = "which perl variable" + the
  first `VARIABLE_WORDS` content words of the description's first sentence (at least three);
  gold = ``perlvar.pod`` + the description's first `SNIPPET_WORDS` normalised words, when they
  occur once in the file and read the same rendered. Names starting with ``*`` (filehandle globs) are left out.

Nothing is excluded: the questions are not in the corpus verbatim (perlfaq.pod, the FAQ's
table of contents, holds the original headings, as a site's index page does). A question asked
twice with two golds is dropped (none now). ``L<text|target>`` is read as its target (the part
after the ``|``), as the questions were first made.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from assets.parsing.pod import pod_inline
from benchmarks.corpora.evalset_tools import Case, generate
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "perl_pod.jsonl"
SNIPPET_WORDS = 8
FAQ_QUESTIONS = 100
VARIABLES = 40
VARIABLE_WORDS = 5

POD_CODE = re.compile(r"[A-Z]<<+\s(.*?)\s>>+|[A-Z]<([^<>]*)>")
INDEX_CODE = re.compile(r"X<[^<>]*>")
# One synonym swapped in each FAQ question: the first pair, from a place set by the question's
# hash, whose word is in it (("file", "file") swaps nothing, as first made).
SYNONYMS = [("delete", "remove"), ("remove", "get rid of"), ("find out", "figure out"), ("modify", "change"),
            ("determine", "tell"), ("print", "output"), ("file", "file"), ("get", "obtain"),
            ("string", "text string"), ("array", "list"), ("hash", "dictionary"), ("program", "script"),
            ("module", "library"), ("quickly", "fast"), ("check", "test"), ("read", "load")]
STOP = frozenset(["a", "an", "the", "of", "to", "in", "is", "are", "be", "it", "its", "this", "that", "for", "on",
                  "by", "with", "as", "or", "and", "which", "what"])
YES_NO = ("is ", "are ", "can ", "does ", "do ", "will ", "should ")


def strip_pod(text: str) -> str:
    """``text`` without POD formatting codes (nested up to four deep): ``C<x>`` is ``x``,
    ``L<text|target>`` is ``target``."""
    for _ in range(4):
        text = POD_CODE.sub(lambda m: (m.group(1) or m.group(2) or "").split("|")[-1], text)
    return text


def _paragraphs(lines: list[str]) -> Iterator[list[str]]:
    para: list[str] = []
    for line in lines:
        if line.strip() == "":
            if para:
                yield para
            para = []
        else:
            para.append(line)
    if para:
        yield para


def first_prose(lines: list[str]) -> str | None:
    """The first paragraph of ``lines`` that is prose: not indented (a verbatim block), not a
    command (``=item``), not only ``X<>`` index codes; its ``X<>`` codes removed."""
    for para in _paragraphs(lines):
        if para[0].startswith((" ", "\t", "=")):
            continue
        if not INDEX_CODE.sub("", " ".join(para)).strip():
            continue
        return " ".join(INDEX_CODE.sub("", line) for line in para)
    return None


def rendered(prose: str) -> str:
    """The first `SNIPPET_WORDS` normalised words of `prose` as a reader sees it (formatting
    codes resolved by Bindery's POD reader: `C<reverse>` reads "reverse"). An entry is drawn
    only where they equal the source's words: a snippet with the codes' letters in it ("use c
    reverse") is in no rendering of the page, and one rendered is not in the naive baseline's
    raw text, so either side would miss it for the wrong reason."""
    return " ".join(normalise(pod_inline(prose)).split()[:SNIPPET_WORDS])


def _hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


def _rewrite(question: str, style: int) -> str:
    """The question (codes removed, "?" dropped) in the form a user types it."""
    if m := re.match(r"(?i)^(how (?:do|can|could|should|would) (?:i|you|we)|how to) (.*)$", question):
        rest = m.group(2)
        perl = "perl" in rest.lower()
        return [("" if perl else "perl ") + rest, f"how to {rest}" + ("" if perl else " in perl"), rest][style]
    if m := re.match(r"(?i)^what'?s? (?:is )?the difference between (.*)$", question):
        return m.group(1).replace(" and ", " vs ", 1)
    if m := re.match(r"(?i)^why (.*)$", question):
        return m.group(1) + " - why?"
    if m := re.match(r"(?i)^(is|are) there (?:a|an|any) (.*)$", question):
        return "looking for " + m.group(2)
    if m := re.match(r"(?i)^can (?:i|you|perl) (.*)$", question):
        return "is it possible to " + m.group(1)
    return question[0].lower() + question[1:]


def paraphrase(heading: str, h: int) -> str:
    """A perlfaq ``=head2`` question as a user would type it (see the module docstring)."""
    q = strip_pod(heading).strip()
    q = q.split("?")[0] if q.count("?") > 1 else q  # the first question of "X? Y?"
    q = _rewrite(q.rstrip("?").strip(), h % 3)
    for i in range(len(SYNONYMS)):
        word, other = SYNONYMS[(h + i) % len(SYNONYMS)]
        if word != other and re.search(rf"\b{word}\b", q):
            q = re.sub(rf"\b{word}\b", other, q, count=1)
            break
    return q.strip()


def category(heading: str) -> str:
    q = strip_pod(heading).lower()
    for word in ("how", "what", "why"):
        if q.startswith(word):
            return "faq-" + word
    return "faq-yes-no" if q.startswith(YES_NO) else "faq-other"


def _read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").split("\n")


def faq_cases(root: Path) -> list[Case]:
    """`FAQ_QUESTIONS` perlfaq questions, drawn by hash, in id order."""
    drawn: list[tuple[int, Case]] = []
    for n in range(1, 10):
        name = f"perlfaq{n}.pod"
        lines = _read(root / name)
        whole = normalise("\n".join(lines))
        heads = [i for i, line in enumerate(lines) if line.startswith("=head2 ")]
        for k, i in enumerate(heads):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(("=head1", "=head2"))),
                       len(lines))
            heading = lines[i][7:].strip()
            prose = first_prose(lines[i + 1 : end])
            words = normalise(prose).split() if prose else []
            snippet = " ".join(words[:SNIPPET_WORDS])
            if not prose or len(words) < SNIPPET_WORDS or whole.count(snippet) != 1 or rendered(prose) != snippet:
                continue
            h = _hash(heading)
            drawn.append((h, {"id": f"perlfaq{n}-{k}", "query": paraphrase(heading, h),
                              "category": category(heading), "gold": [{"doc": name, "text": snippet}],
                              "exclude_docs": [], "source_heading": strip_pod(heading)}))
    drawn.sort(key=lambda hc: hc[0])
    return sorted((c for _, c in drawn[:FAQ_QUESTIONS]), key=lambda c: str(c["id"]))


def variable_cases(root: Path) -> list[Case]:
    """The first `VARIABLES` usable entries of perlvar.pod, in file order."""
    lines = _read(root / "perlvar.pod")
    whole = normalise("\n".join(lines))
    out: list[Case] = []
    i = 0
    while i < len(lines):
        if not re.match(r"^=item [\$@%]", lines[i]):
            i += 1
            continue
        names: list[str] = []
        j = i  # the entry's =item lines (and the blank and X<> lines between them)
        while j < len(lines) and (lines[j].startswith(("=item ", "X<")) or lines[j].strip() == ""):
            if lines[j].startswith("=item "):
                names.append(lines[j][6:].strip())
            j += 1
        end = next((e for e in range(j, len(lines)) if lines[e].startswith(("=item", "=head", "=back"))),
                   len(lines))
        prose = first_prose(lines[j:end])
        i = end
        if not prose or names[0].startswith("*"):
            continue
        sentence = re.split(r"(?<=[.;:])\s", strip_pod(prose))[0]
        content = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", sentence) if w.lower() not in STOP]
        content = content[:VARIABLE_WORDS]
        words = normalise(prose).split()
        snippet = " ".join(words[:SNIPPET_WORDS])
        if len(words) < SNIPPET_WORDS or len(content) < 3 or whole.count(snippet) != 1 or rendered(prose) != snippet:
            continue
        out.append({"id": f"perlvar-{len(out)}", "query": "which perl variable " + " ".join(content).lower(),
                    "category": "variable", "gold": [{"doc": "perlvar.pod", "text": snippet}],
                    "exclude_docs": [], "source_heading": " ".join(names)})
    return out[:VARIABLES]


def cases(root: Path) -> list[Case]:
    out = faq_cases(root) + variable_cases(root)
    asked = Counter(str(c["query"]).lower() for c in out)
    return [c for c in out if asked[str(c["query"]).lower()] == 1]  # unique_questions' rule, ids kept


def main() -> int:
    return generate("perl_pod", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
