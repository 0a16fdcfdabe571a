"""Eval-set loading and normalisation: the spec's normaliser, strict line-level validation."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from connectors.errors import ConfigError
from evals.evalset import DEFAULT_CATEGORY, EvalCase, Gold, load_eval_set, normalise

EVALDATA = Path(__file__).resolve().parent.parent / "benchmarks" / "evalsets"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("XR-4471", "xr 4471"),
        ("Hello,   World!!", "hello world"),
        ("\u201cSmart quotes\u201d and \u2018single\u2019", "smart quotes and single"),
        ("It\u2019s", "it s"),
        ("  --leading and trailing--  ", "leading and trailing"),
        ("line\nbreak\ttab\r\nend", "line break tab end"),
        ("<p>x&nbsp;=&nbsp;1</p>", "p x nbsp nbsp 1 p"),
        ("Caf\u00e9 na\u00efve", "caf na ve"),  # non-ASCII letters are outside [0-9a-z]
        ("\u00c0B", "b"),
        ("snake_case.name()", "snake case name"),
        ("ALL CAPS 123", "all caps 123"),
        ("", ""),
        ("?!...", ""),
    ],
)
def test_normalise(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


def test_normalise_is_idempotent_and_canonical() -> None:
    rng = random.Random(7)
    alphabet = "aZ09 -_.,\u201c\u00e9\n\t!"
    for _ in range(300):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        n = normalise(s)
        assert normalise(n) == n
        assert "  " not in n and n == n.strip()
        assert set(n) <= set("abcdefghijklmnopqrstuvwxyz0123456789 ")


@pytest.mark.parametrize(
    ("name", "count", "category"),
    [
        ("python_faq.jsonl", 172, "faq-question"),
        ("redis_commands.jsonl", 366, "summary-paraphrase"),
    ],
)
def test_real_eval_sets_load(name: str, count: int, category: str) -> None:
    cases = load_eval_set(EVALDATA / name)
    assert len(cases) == count
    assert len({c.id for c in cases}) == count
    assert {c.category for c in cases} == {category}
    for c in cases:
        assert isinstance(c, EvalCase) and c.query and c.gold
        for g in c.gold:
            assert g.text is None or g.text == normalise(g.text)


def test_redis_gold_is_doc_level() -> None:
    cases = load_eval_set(EVALDATA / "redis_commands.jsonl")
    assert all(g.text is None for c in cases for g in c.gold)
    assert cases[0].gold == (Gold(doc="commands/acl.md", text=None),)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "set.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _case(**kw: object) -> str:
    base: dict[str, object] = {
        "id": "q1",
        "query": "what is x",
        "gold": [{"doc": "a.md", "text": None}],
        "category": "c",
        "exclude_docs": [],
    }
    base.update(kw)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


def test_other_keys_are_annotations(tmp_path: Path) -> None:
    """`evalset draft` marks its cases `"draft": true`; keys that are no near miss of a known one
    are kept as a person's notes, not refused."""
    p = _write(tmp_path, [_case(draft=True, notes="checked by ana")])
    assert [c.id for c in load_eval_set(p)] == ["q1"]


def test_gold_text_renormalised_and_defaults(tmp_path: Path) -> None:
    line = json.dumps(
        {"id": 7, "query": "q", "gold": [{"doc": "d.md", "text": "Guido, Van-Rossum\u2019s!"}]}
    )
    (case,) = load_eval_set(_write(tmp_path, [line]))
    assert case.id == "7"
    assert case.gold == (Gold(doc="d.md", text="guido van rossum s"),)
    assert case.category == DEFAULT_CATEGORY
    assert case.exclude_docs == ()


def test_blank_lines_skipped_and_line_numbers_kept(tmp_path: Path) -> None:
    p = _write(tmp_path, [_case(id="a"), "", "   ", _case(id="b", query="")])
    with pytest.raises(ConfigError, match=r"set\.jsonl:4: 'query'"):
        load_eval_set(p)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "q1", "query": ', "bad JSON"),
        ("[1, 2]", "must be a JSON object"),
        (_case(id=...), "missing 'id'"),
        (_case(id=True), "'id' must be"),
        (_case(query=...), "missing 'query'"),
        (_case(query="   "), "'query' must be a non-empty string"),
        (_case(query=3), "'query' must be a non-empty string"),
        (_case(gold=[]), "'gold' must be a non-empty list"),
        (_case(gold=...), "'gold' must be a non-empty list"),
        (_case(gold={"doc": "a.md"}), "'gold' must be a non-empty list"),
        (_case(gold=["a.md"]), r"gold\[0\] must be an object"),
        (_case(gold=[{"text": "x"}]), r"gold\[0\] has no 'doc'"),
        (_case(gold=[{"doc": ""}]), r"gold\[0\]\.doc must be a non-empty string"),
        (_case(gold=[{"doc": "a.md", "text": 5}]), r"gold\[0\]\.text must be a string or null"),
        (_case(gold=[{"doc": "a.md", "text": "?!"}]), "empty after normalisation"),
        (
            _case(gold=[{"doc": "a.md", "text": "X-1"}, {"doc": "a.md", "text": "x 1"}]),
            "same doc and text twice",
        ),
        (_case(category=""), "'category' must be a non-empty string"),
        (_case(exclude_docs="b.md"), "'exclude_docs' must be a list"),
        (_case(exclude_docs=[1]), "'exclude_docs' entry must be"),
        (_case(exclude_docs=["a.md"]), "also in 'exclude_docs'"),
        (_case(exlude_docs=["b.md"]), r"unknown key 'exlude_docs' \(did you mean 'exclude_docs'\?\)"),
        (_case(categroy="c"), r"did you mean 'category'"),
        (_case(gold=[{"doc": "a.md", "txt": "x"}]), r"gold\[0\]: unknown key 'txt' \(did you mean 'text'\?\)"),
        # what the query service refuses failed the gate's run halfway, naming no line, and the
        # refused promotion then printed an earlier verdict as its report (a gate pass's find)
        (_case(query="tea " * 1001), "'query': query is 4003 characters; the limit is 4000"),
        (_case(query="tea \ud800"), "'query': .*lone surrogate"),
        ("[" * 100_000 + "]" * 100_000, "bad JSON: nested too deeply"),
    ],
)
def test_invalid_line_names_file_line_and_problem(tmp_path: Path, line: str, problem: str) -> None:
    p = _write(tmp_path, [_case(id="ok"), line])
    with pytest.raises(ConfigError, match=rf"set\.jsonl:2: .*{problem}"):
        load_eval_set(p)


def test_annotations_that_extend_a_key_are_not_typos(tmp_path: Path) -> None:
    """`qid`, `ids`, `category_id`, a gold's `docs`: annotations a team adds, not slips."""
    p = _write(tmp_path, [_case(id="q1", qid=7, ids=[1], category_id=3, notes="n", exclude_docs_ids=[],
                                gold=[{"doc": "a.md", "docs": ["a.md"], "texts": [], "doi": "10.1/x"}])])
    assert [c.id for c in load_eval_set(p)] == ["q1"]


@pytest.mark.parametrize(("key", "meant"), [("categories", "category"), ("categorys", "category"),
                                            ("querys", "query"), ("Id", "id"), ("dco", "doc")])
def test_slips_on_a_key_are_typos(tmp_path: Path, key: str, meant: str) -> None:
    line = _case(**{key: "x"}) if meant != "doc" else _case(gold=[{"doc": "a.md", key: "x"}])
    with pytest.raises(ConfigError, match=f"unknown key '{key}' \\(did you mean '{meant}'"):
        load_eval_set(_write(tmp_path, [line]))


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    p = _write(tmp_path, [_case(id="q1"), _case(id="q2"), _case(id="q1", query="other")])
    with pytest.raises(ConfigError, match=r"set\.jsonl:3: duplicate id 'q1' .*line 1"):
        load_eval_set(p)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no cases"):
        load_eval_set(_write(tmp_path, ["", ""]))
    with pytest.raises(ConfigError, match="cannot read"):
        load_eval_set(tmp_path / "absent.jsonl")


def test_utf8_bom_tolerated(tmp_path: Path) -> None:
    p = tmp_path / "bom.jsonl"
    p.write_bytes("\ufeff".encode() + _case().encode() + b"\n")
    assert [c.id for c in load_eval_set(p)] == ["q1"]


def test_a_line_separator_inside_a_string_is_not_the_end_of_a_record(tmp_path: Path) -> None:
    """JSONL records end at a newline; `str.splitlines()` also broke a line at a raw U+2028,
    U+0085 or form feed inside a string (json.dumps with ensure_ascii=False writes them as
    they are): the file was refused as bad JSON and the line numbers after it were off."""
    queries = ["knot\u2028loop", "next\u0085line", "page\x0cbreak"]
    p = _write(tmp_path, [json.dumps({"id": f"q{i}", "query": q, "gold": [{"doc": "a.md"}]}, ensure_ascii=False)
                          for i, q in enumerate(queries)] + ['{"id": "bad"'])
    with pytest.raises(ConfigError, match=r"set\.jsonl:4: bad JSON"):
        load_eval_set(p)
    p.write_text(p.read_text(encoding="utf-8").rsplit("\n", 2)[0] + "\n", encoding="utf-8")
    assert [c.query for c in load_eval_set(p)] == queries
    for ending in ("\r\n", "\r"):  # Windows' and old Macs' line ends still end records
        p.write_bytes(p.read_text(encoding="utf-8").replace("\r\n", "\n").replace("\r", "\n")
                      .replace("\n", ending).encode())
        assert [c.query for c in load_eval_set(p)] == queries


def test_a_gold_path_typed_composed_names_a_file_stored_decomposed() -> None:
    """A file named "café-menü.md" on a file system that stores names decomposed (NFD) was never
    found by an eval set that typed the name composed (NFC), nor by a `filters.docs` so typed."""
    import unicodedata

    from evals.evalset import resolve_source_prefixes
    from query_service.retrieval import make_filters

    stored = unicodedata.normalize("NFD", "menus/café-menü.md")
    typed = unicodedata.normalize("NFC", stored)
    assert stored != typed
    old = unicodedata.normalize("NFD", "menus/ancien-café.md")
    case = EvalCase(id="q", query="menu", gold=(Gold(doc=typed, text=None),),
                    exclude_docs=(f"docs:{unicodedata.normalize('NFC', old)}",))
    (resolved,) = resolve_source_prefixes([case], [("docs", stored), ("docs", old)])
    assert resolved.gold[0].doc == stored and resolved.exclude_docs == (old,)
    f = make_filters("*", docs=[typed], exclude_docs=[typed])
    assert f.docs is not None and stored in f.docs and typed in f.docs and stored in f.exclude_docs


def test_a_gold_document_excluded_under_its_source_prefix_is_refused() -> None:
    """A tune pass: gold "redis/set.md" with `exclude_docs` "docs:redis/set.md" (or the mirror)
    name one document; the case scored 0 in silence where the same name written alike is refused."""
    from evals.evalset import resolve_source_prefixes

    docs = [("docs", "redis/set.md"), ("docs", "redis/get.md")]
    for gold, excluded in (("redis/set.md", "docs:redis/set.md"), ("docs:redis/set.md", "redis/set.md")):
        case = EvalCase(id="c7", query="add to a set", gold=(Gold(doc=gold, text=None),), exclude_docs=(excluded,))
        with pytest.raises(ConfigError, match=r"clash.jsonl: case 'c7': gold doc\(s\) \['redis/set.md'\] are also"):
            resolve_source_prefixes([case], docs, "clash.jsonl")
    fine = EvalCase(id="c8", query="get", gold=(Gold(doc="docs:redis/get.md", text=None),),
                    exclude_docs=("redis/set.md",))
    assert resolve_source_prefixes([fine], docs)[0].exclude_docs == ("redis/set.md",)
