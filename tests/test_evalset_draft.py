"""`bindery evalset draft` proposes eval questions from the corpus (issue 11, item 8): offline
from titles, headings, identifiers and tables; LLM-written with the Anthropic contextualiser
(against the local stub that follows the Messages API)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from connectors.config import ContextConfig
from connectors.questions import QUESTION_INSTRUCTION, AnthropicQuestionWriter, parse_reply
from connectors.store import ChunkRecord
from evals.draft import draft_cases
from evals.evalset import load_eval_set, normalise
from tests.anthropic_stub import AnthropicStub
from tests.bindery_fixture import Deployment


def chunk(ordinal: int, heading_path: list[str], body: str, kind: str = "text") -> ChunkRecord:
    text = "\n".join([*heading_path, body])
    return ChunkRecord(chunk_id=f"c{ordinal}", doc_id="d", chunk_version="c", content_hash="h", parse_version="p",
                       ordinal=ordinal, kind=kind, display_text=text, embed_text=text, text_hash="t",
                       heading_path=heading_path)


CORPUS = {
    "robots/xr4471.md": [
        chunk(0, ["XR-4471 warehouse robot", "Battery"],
              "The XR-4471 runs for 11 hours on one charge. Charging takes 95 minutes."),
        chunk(1, ["XR-4471 warehouse robot", "Payload"], "Maximum payload is set by the max_payload_kg key."),
    ],
    "ops/errors.md": [chunk(0, ["Error codes", "ERR-0x1F"], "The drive controller lost its heartbeat.")],
    "catalog/prices.md": [chunk(0, ["Price list"],
                                "| Model | Price | Weight |\n|---|---|---|\n"
                                "| XR-5200 | 41,900 EUR | 180 kg |\n| XR-4471 | 28,500 EUR | 95 kg |", "table")],
}


def test_offline_draft_proposes_every_kind_with_valid_labels(tmp_path: Path) -> None:
    cases = draft_cases(CORPUS, max_cases=40)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for c in cases:
        by_kind.setdefault(c["category"], []).append(c)
    assert set(by_kind) == {"title", "heading", "identifier", "table"}
    assert {"XR-4471 warehouse robot", "Error codes", "Price list"} <= {c["query"] for c in by_kind["title"]}
    heading = next(c for c in by_kind["heading"] if c["gold"][0]["doc"] == "robots/xr4471.md")
    assert heading["query"] == "Battery — XR-4471 warehouse robot"
    assert heading["gold"][0]["text"] == "the xr 4471 runs for 11 hours on one charge"
    idents = {c["query"]: c["gold"][0] for c in by_kind["identifier"]}
    assert idents["ERR-0x1F"] == {"doc": "ops/errors.md", "text": "err 0x1f"}
    assert idents["max_payload_kg"]["doc"] == "robots/xr4471.md"
    assert "XR-4471" not in idents  # in two documents: not a unique lookup
    assert by_kind["table"][0]["query"] == "Price of XR-5200"
    assert by_kind["table"][0]["gold"][0]["text"] == "41 900 eur"
    # every gold snippet is really in a chunk of its document
    for c in cases:
        g = c["gold"][0]
        if g["text"]:
            assert any(g["text"] in normalise(ch.display_text) for ch in CORPUS[g["doc"]]), c
    # the file a person reviews is a valid eval set
    out = tmp_path / "draft.jsonl"
    import json

    out.write_text("".join(json.dumps(c) + "\n" for c in cases))
    assert len(load_eval_set(out)) == len(cases)
    assert len(draft_cases(CORPUS, max_cases=3)) == 3


def test_a_reply_asks_for_the_message_it_answers_and_is_excluded_itself() -> None:
    mail = {
        "mail/question.eml": [chunk(0, ["pump stalls"], "Our pump stalls every morning at seven, any idea why?")],
        "mail/answer.eml": [chunk(0, ["Re: pump stalls"],
                                  "Check the intake filter first: a clogged filter starves the pump at start-up.")],
        "mail/thanks.eml": [chunk(0, ["Re: pump stalls"], "Thanks, that was it!")],
    }
    pairs = [("mail/answer.eml", "mail/question.eml"), ("mail/thanks.eml", "mail/answer.eml"),
             ("mail/orphan.eml", "mail/gone.eml")]
    replies = [c for c in draft_cases(mail, max_cases=40, replies=pairs) if c["category"] == "reply"]
    # the reply's own words ask for its parent; a one-line thanks asks nothing; a pair whose
    # documents are not in the corpus is skipped
    assert replies == [{"id": "draft-reply-1", "category": "reply", "draft": True,
                        "query": "Check the intake filter first: a clogged filter starves the pump at start-up.",
                        "gold": [{"doc": "mail/question.eml", "text": None}], "exclude_docs": ["mail/answer.eml"]}]
    assert all(c["category"] != "reply" for c in draft_cases(mail, max_cases=40))


def test_llm_draft_against_the_anthropic_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicStub(api_key="sk-test") as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        writer = AnthropicQuestionWriter(ContextConfig(provider="anthropic", base_url=stub.base_url))
        long = {doc: [chunk(c.ordinal, c.heading_path, c.display_text + " " + "More words here. " * 6)
                      for c in cs] for doc, cs in CORPUS.items()}
        try:
            cases = draft_cases(long, max_cases=3, writer=writer)
        finally:
            writer.close()
        assert len(cases) == 3 == len(stub.message_requests)
        for case, req in zip(cases, stub.message_requests, strict=True):
            assert req.body is not None
            prompt = req.body["messages"][0]["content"]
            assert QUESTION_INSTRUCTION in prompt and req.body["model"] == "claude-haiku-4-5"
            assert case["category"] == "llm" and case["query"].startswith("This chunk is from")  # the stub's reply
            doc = case["gold"][0]["doc"]
            assert any(case["gold"][0]["text"] in normalise(c.display_text) for c in long[doc])



def test_a_table_question_needs_the_tables_header_over_its_rows() -> None:
    """With small chunks a table's header and separator made one chunk and its rows the next;
    the draft took the first data row as the header and asked "4.50 of Island" (a gate pass's
    find). A chunk with the header alone, or with rows alone, proposes nothing; one with both
    asks "Fare of Harbour"."""
    split = {"ferry.md": [chunk(0, ["Ferry timetable"], "| Route | Fare | Minutes |\n|---|---|---|", "table"),
                          chunk(1, ["Ferry timetable"], "| Harbour | 4.50 | 25 |\n| Island | 7.00 | 40 |", "table")]}
    assert [c for c in draft_cases(split, max_cases=40) if c["category"] == "table"] == []
    whole = {"ferry.md": [chunk(0, ["Ferry timetable"], "| Route | Fare | Minutes |\n|---|---|---|\n"
                                "| Harbour | 4.50 | 25 |\n| Island | 7.00 | 40 |", "table")]}
    (table,) = [c for c in draft_cases(whole, max_cases=40) if c["category"] == "table"]
    assert table["query"] == "Fare of Harbour" and table["gold"][0]["text"] == "4 50"


def test_reply_parsing() -> None:
    q = parse_reply("Question: How long does the XR-4471 run?\nAnswer: \"11 hours on one charge\"")
    assert q is not None and q.question == "How long does the XR-4471 run?" and q.answer == "11 hours on one charge"
    free = parse_reply("  How long\n does it run? ")
    assert free is not None and free.question == "How long does it run?" and free.answer is None
    assert parse_reply("   ") is None


@pytest.mark.slow
def test_cli_drafts_from_the_live_generation_and_the_draft_evaluates(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    out = tmp_path / "evals" / "draft.jsonl"
    res = dep.cli("evalset", "draft", "--out", str(out))
    assert res["provider"] == "offline" and res["cases"] == len(load_eval_set(out)) >= 10
    assert {"title", "identifier"} <= set(res["by_kind"])
    dep.cli("evalset", "draft", "--out", str(out), expect=2)  # never overwrites a reviewed file by accident
    capsys.readouterr()
    report = dep.cli("eval", "--queries", str(out))
    assert report["cases"] == res["cases"] and report["metrics"]["recall@10"] >= 0.6
    assert report["unknown_gold_docs"] == []
    # an unreviewed set is said to be one (an operator pass: the gate took it without a word)
    assert f"{res['cases']} of {res['cases']} questions are still marked \"draft\"" in capsys.readouterr().err
    reviewed = tmp_path / "evals" / "reviewed.jsonl"
    reviewed.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "draft"}) + "\n"
                                for line in out.read_text().splitlines()))
    assert dep.cli("eval", "--queries", str(reviewed))["cases"] == res["cases"]
    assert "draft" not in capsys.readouterr().err
    typo = tmp_path / "evals" / "typo.jsonl"  # a gold path that names no document: said, not silently 0
    typo.write_text(json.dumps({"id": "t1", "query": "anything", "gold": [{"doc": "docs/howto/nope.md"}]}) + "\n")
    assert dep.cli("eval", "--queries", str(typo))["unknown_gold_docs"] == ["docs/howto/nope.md"]
    # a document the store knows but the generation does not hold (a dead letter: empty) is
    # unanswerable in it too, and was not named (a gate pass's find)
    dep.write("notes/empty.md", "")
    dep.cli("sync")
    typo.write_text(json.dumps({"id": "t2", "query": "anything", "gold": [{"doc": "notes/empty.md"}]}) + "\n")
    assert dep.cli("eval", "--queries", str(typo))["unknown_gold_docs"] == ["notes/empty.md"]



@pytest.mark.slow
def test_a_path_two_sources_hold_is_drafted_with_its_source(tmp_path: Path) -> None:
    """Chunks were grouped by path alone: two sources' files at one path were drafted as one
    document, and either answered its questions (a gate pass's find). Such a path is now
    named `source:path`, and the eval holds the label to that source."""
    other = tmp_path / "vendor"
    (other / "robots").mkdir(parents=True)
    (other / "robots/xr4471.md").write_text("# Vendor sheet: ZQ-1\n\nThe ZQ-1 gripper holds 12 kilograms.\n")
    (other / "ops").mkdir()
    (other / "ops/firmware.md").write_text("")  # a dead letter, at a path the other source indexes
    dep = Deployment(tmp_path)
    dep.config["sources"].append({"name": "vendor", "kind": "local", "root": str(other)})
    dep.save()
    dep.cli("sync")
    out = tmp_path / "draft.jsonl"
    dep.cli("evalset", "draft", "--out", str(out))
    golds = {g["doc"] for line in out.read_text().splitlines() for g in json.loads(line)["gold"]}
    assert {"docs:robots/xr4471.md", "vendor:robots/xr4471.md"} <= golds and "robots/xr4471.md" not in golds
    assert dep.cli("eval", "--queries", str(out))["unknown_gold_docs"] == []
    dead = tmp_path / "dead.jsonl"  # the vendor's copy is in no generation, whatever docs' copy is
    dead.write_text(json.dumps({"id": "d1", "query": "firmware", "gold": [{"doc": "vendor:ops/firmware.md"}]}) + "\n")
    assert dep.cli("eval", "--queries", str(dead))["unknown_gold_docs"] == ["vendor:ops/firmware.md"]


def test_cli_drafts_reply_questions_from_a_mail_archive(tmp_path: Path) -> None:
    from tests.test_attribution import MAILS, THREAD

    dep = Deployment(tmp_path)
    for rel, text in {**MAILS, **THREAD}.items():
        dep.write(rel, text)
    dep.cli("sync")
    out = tmp_path / "draft.jsonl"
    dep.cli("evalset", "draft", "--out", str(out))
    replies = {c.exclude_docs[0]: c.gold[0].doc for c in load_eval_set(out) if c.category == "reply"}
    assert replies == {"mail/reply-1.eml": "mail/parent.eml", "mail/reply-2.eml": "mail/reply-1.eml"}


def test_a_heading_that_repeats_the_title_is_asked_once() -> None:
    """A page whose section heading repeats its title (a diary's "Day 1 (2 July 2024)") drafted
    "Day 1 (2 July 2024) — Day 1 (2 July 2024)"."""
    corpus = {"diary/day1.md": [chunk(0, ["Day 1 (2 July 2024)", "Day 1 (2 July 2024)"],
                                      "We reached the ridge at noon and pitched camp by the lake.")]}
    queries = [c["query"] for c in draft_cases(corpus, max_cases=10)]
    assert queries == ["Day 1 (2 July 2024)"]  # asked once (as the title question)
    # a message's subject tagged by its list, its heading the subject alone (a new user's draft)
    tagged = {"mail/klez.eml": [chunk(0, ["[IRR] Klez: The Virus That Won't Die", "Klez: The Virus That Won't Die"],
                                      "Already the most prolific virus ever, Klez continues to wreak havoc.")]}
    assert not any(" — " in c["query"] for c in draft_cases(tagged, max_cases=10))


def test_a_title_several_documents_share_is_not_asked() -> None:
    """An operator pass: ten Debian changelogs titled by the same appended comment drafted it
    as a question whose one gold document was a coin toss among them."""
    boiler = "Older entries have been removed from this changelog."
    corpus = {f"doc/p{i}/changelog": [chunk(0, [boiler], f"Release {i} fixes the build of package p{i}.")]
              for i in range(3)}
    corpus["doc/zstd/README"] = [chunk(0, ["Zstandard compression library"], "Fast lossless compression.")]
    titles = [c["query"] for c in draft_cases(corpus, max_cases=20) if c["category"] == "title"]
    assert titles == ["Zstandard compression library"]


def test_a_draft_quotes_only_what_the_named_principals_may_read_and_is_private(tmp_path: Path) -> None:
    """Found by a security re-test: the draft quoted every document whatever its ACL (a private
    reply's opening words, identifiers from an HR file) into a file anyone on the machine could
    read, and from there, as gate.queries, into reports operators see. It is written 0600 now, and
    `--principal` drafts from what those principals may read."""
    dep = Deployment(tmp_path)
    (dep.root / "hr").mkdir()
    (dep.root / "hr" / ".bindery-acl").write_text("group:hr\n")
    dep.write("hr/salaries.md", "# Salary bands\n\nThe band for SECRETTOKEN-HR engineers is confidential.\n")
    dep.cli("sync")
    everything, public = tmp_path / "all.jsonl", tmp_path / "public.jsonl"
    everything.write_text("an older draft, once world-readable\n")
    everything.chmod(0o644)
    assert dep.cli("evalset", "draft", "--out", str(everything), "--force")["principals"] is None
    assert stat.S_IMODE(everything.stat().st_mode) == 0o600
    assert "hr/salaries.md" in everything.read_text()
    assert dep.cli("evalset", "draft", "--out", str(public), "--principal", "group:eng")["principals"] == ["group:eng"]
    text = public.read_text()
    assert text and "hr/salaries.md" not in text and "SECRETTOKEN" not in text and "Salary" not in text


def test_a_draft_with_no_question_fails_and_writes_no_empty_set(tmp_path: Path) -> None:
    """An operator pass: with nothing the principal may read, `draft` wrote a 0-byte file, said
    "drafted 0 questions" and advised setting gate.queries to it, which `promote` then refused
    ("eval set has no cases"). It now fails, writes nothing and says why."""
    dep = Deployment(tmp_path)
    (dep.root / ".bindery-acl").write_text("group:hr\n")
    dep.cli("sync")
    out = tmp_path / "drafted.jsonl"
    got = dep.cli("evalset", "draft", "--out", str(out), "--principal", "group:eng", expect=1)
    assert "no question could be drafted from the 0 document(s) that 'group:eng' may read" in got["error"]
    assert not out.exists()


def test_a_draft_never_writes_through_a_device_a_pipe_or_a_link(tmp_path: Path) -> None:
    """Found by an operator pass: `--out /dev/full --force` (as root) chmodded the device 0600,
    `--out` on a FIFO hung, and on a link truncated the file it named. Each is refused before
    any drafting, and what it names is untouched."""
    import os

    dep = Deployment(tmp_path)
    dep.cli("sync")
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    target.chmod(0o644)
    (link := tmp_path / "link.jsonl").symlink_to(target)
    os.mkfifo(fifo := tmp_path / "pipe.jsonl")
    for out in (link, fifo, Path(os.devnull)):
        err = dep.cli("evalset", "draft", "--out", str(out), "--force", expect=2)
        assert "is not a regular file" in err["error"]
    assert target.read_text() == "keep me\n" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert stat.S_IMODE(os.stat(os.devnull).st_mode) == 0o666
    # a regular file --force replaces is a new private file; no temporary file is left beside it
    assert dep.cli("evalset", "draft", "--out", str(target), "--force")["cases"] >= 1
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and "keep me" not in target.read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    # a name as long as the file system allows is written (the temporary file's name is short);
    # one longer is refused before any drafting
    longest = tmp_path / ("x" * 249 + ".jsonl")
    assert dep.cli("evalset", "draft", "--out", str(longest))["cases"] >= 1 and longest.read_text()
    err = dep.cli("evalset", "draft", "--out", str(tmp_path / ("y" * 250 + ".jsonl")), expect=2)["error"]
    assert "cannot write there: File name too long" in err


def test_a_draft_leaves_out_what_an_operator_pass_found_to_be_junk() -> None:
    """A draft of 30 on git's pages and R's manuals asked "A-B-C-D-E-F" (an ASCII-art graph),
    "BSD-style", " of LOCAL" and "Table of Contents — R FAQ" (gold "1 1 legalese"), and took its
    titles from the first ten documents of the alphabet."""
    corpus = {
        "git-bisect-lk2009.md": [chunk(0, ["Fighting regressions with git bisect", "Graph"],
                                       "The history A-B-C-D-E-F shows where BSD-style and ASCII-armored help.")],
        "git-diff.md": [chunk(0, ["git-diff", "Options"], "| Name | |\n|---|---|\n| LOCAL | merged |", "table")],
        "R-FAQ.md": [chunk(0, ["R FAQ", "Table of Contents"], "1 1 Legalese\n1 2 Obtaining this document")],
        **{f"doc-{i:02d}.md": [chunk(0, [f"Guide number {i:02d}", "Setup"],
                                     f"Run the installer for release v1.{i}.0 on every node first.")]
           for i in range(30)},
    }
    cases = draft_cases(corpus, max_cases=40)
    queries = {c["query"] for c in cases}
    assert not queries & {"A-B-C-D-E-F", "BSD-style", "ASCII-armored", " of LOCAL", "Table of Contents — R FAQ"}
    assert all(c["query"] == c["query"].strip() for c in cases)
    assert any(q.startswith("v1.") for q in queries)  # codes with digits are still drafted
    titles = sorted(c["query"] for c in cases if c["category"] == "title")
    assert titles and titles != sorted(f"Guide number {i:02d}" for i in range(30))[:len(titles)]
