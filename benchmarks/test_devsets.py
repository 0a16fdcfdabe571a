"""Fast checks of the dev eval sets and the naive baseline's pure parts (no model, no corpus).

    .venv/bin/pytest -q benchmarks/test_devsets.py

Outside the default ``tests/`` path on purpose: they guard benchmark tooling, not the product.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.corpora.evalset_tools import opening_words, write_checked
from benchmarks.corpora.gen_mail_ham import own_words
from benchmarks.naive import bm25_rankings, chunk_words, page_text, rrf
from evals.evalset import load_eval_set

EVALSETS = Path(__file__).parent / "evalsets"
SETS = sorted(EVALSETS.glob("*.jsonl"))
SIZES = {"mail_ham": (500, 800), "mail_ham_pasted": (500, 800),  # one question per usable reply, 650
         "mail_ham_quoted": (500, 800), "docbook_faq": (40, 80),  # two real FAQs: 52 questions
         "info_manuals": (60, 140)}  # at most 14 index entries from each of 8 manuals


def test_every_set_is_present() -> None:
    names = {p.stem for p in SETS}
    assert {"python_faq", "redis_commands", "debian_faq", "flex_manual", "git_commands", "git_asciidoc",
            "pdf_docs", "mail_ham", "man_pages", "docbook_faq", "info_manuals", "glib_api", "sphinx_rst",
            "mkdocs_md", "mail_lkml", "mail_lkml_pasted", "mail_lkml_quoted", "text_docs", "pdf_tables",
            "notebooks", "perl_pod", "pg_sql"} <= names


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_set_loads_and_is_labelled(path: Path) -> None:
    cases = load_eval_set(path)
    low, high = SIZES.get(path.stem, (100, 400))
    assert low <= len(cases) <= high
    assert all(c.gold for c in cases)
    assert len({c.query.lower() for c in cases}) >= 0.9 * len(cases)  # few duplicate questions


def test_chunk_words_fixed_size_without_overlap() -> None:
    text = " ".join(f"w{i}" for i in range(1203))
    chunks = chunk_words(text, 500)
    assert [len(c.split()) for c in chunks] == [500, 500, 203]
    assert " ".join(chunks) == text


def test_rrf_sums_reciprocal_ranks() -> None:
    # doc 2: 1/62 + 1/61; doc 3: 1/63 + 1/62; doc 1, first in one list only: 1/61.
    assert rrf([[1, 2, 3], [2, 3]]) == [2, 3, 1]
    assert rrf([[1, 2, 3], [2, 3]], depth=1) == [2]


def test_bm25_prefers_the_rare_term_and_lowercases() -> None:
    texts = ["the cat sat on the mat", "the dog sat", "Zebra crossing rules for the dog"]
    assert bm25_rankings(texts, ["zebra dog"])[0][0] == 2
    assert bm25_rankings(texts, ["CAT"])[0][0] == 0


def test_page_text_reads_inside_a_compressed_file(tmp_path: Path) -> None:
    import gzip

    page = tmp_path / "ls.1.gz"
    page.write_bytes(gzip.compress(b".TH LS 1\n.SH NAME\nls \\- list directory contents\n"))
    assert page_text(page) == ".TH LS 1\n.SH NAME\nls \\- list directory contents\n"  # the roff, as it is


def test_page_text_html_and_email(tmp_path: Path) -> None:
    html = tmp_path / "a.html"
    html.write_text("<html><head><style>p{x:1}</style></head>"
                    "<body><nav>Home</nav><p>Hello <b>world</b></p></body></html>")
    assert page_text(html).split() == ["Home", "Hello", "world"]
    mail = tmp_path / "m.eml"
    mail.write_text("From: a@b\nSubject: s\nContent-Type: text/plain\n\nbody line\n> quoted\n")
    assert page_text(mail).split() == ["body", "line", ">", "quoted"]


def test_write_checked_refuses_a_snippet_not_in_the_document(tmp_path: Path) -> None:
    (tmp_path / "d.md").write_text("Alpha beta gamma delta epsilon.")
    case = {"id": "x", "query": "q", "gold": [{"doc": "d.md", "text": "beta gamma"}],
            "category": "c", "exclude_docs": []}
    out = tmp_path / "ok.jsonl"
    write_checked([case], tmp_path, out)
    assert json.loads(out.read_text())["gold"][0]["text"] == "beta gamma"
    bad = {**case, "gold": [{"doc": "d.md", "text": "gamma beta"}]}
    with pytest.raises(SystemExit):
        write_checked([bad], tmp_path, tmp_path / "bad.jsonl")
    missing = {**case, "gold": [{"doc": "nope.md", "text": None}]}
    with pytest.raises(SystemExit):
        write_checked([missing], tmp_path, tmp_path / "missing.jsonl")
    assert not (tmp_path / "bad.jsonl").exists()


def test_opening_words_normalises() -> None:
    assert opening_words("The “quick”, brown-fox jumps!", 3) == "the quick brown"


def test_mail_questions_use_only_the_replys_own_words() -> None:
    body = ("Hi all,\nOn Thu, 22 Aug 2002, Tim wrote:\n> the quoted parent text here\n"
            "--] more quoted words from FoRK\n"
            "I tried the new package and the daemon still crashes on start.\n"
            "Any idea why that happens here?\nCheers,\nGreg\n-- \nsignature line words here\n"
            "_______________________________________________\nlist footer unsubscribe words\n")
    q = own_words(body)
    assert q == ("I tried the new package and the daemon still crashes on start. "
                 "Any idea why that happens here?")
    assert "quoted" not in q and "wrote" not in q and "footer" not in q and "signature" not in q


def test_mail_questions_exclude_the_reply_and_point_at_another_message() -> None:
    cases = load_eval_set(EVALSETS / "mail_ham.jsonl")
    for c in cases:
        assert c.exclude_docs and c.gold[0].doc not in c.exclude_docs
        assert not c.query.lstrip().startswith(">")
