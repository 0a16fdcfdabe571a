"""Every configuration and usage mistake an operator makes ends in exit 2 and one line that
names the key or argument and what is wrong — never a traceback (issue 11, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from connectors.config import config_from_dict, load_config
from connectors.errors import ConfigError
from orchestration.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse exits on usage errors
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def assert_one_line(code: int, text: str, *named: str) -> None:
    assert code == 2, text
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    for n in named:
        assert n in lines[0], (n, lines[0])


@pytest.fixture
def base(tmp_path: Path) -> dict[str, Any]:
    """A configuration whose data_dir does not exist yet (`synced_base`: one a sync made)."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("# A\n\nhello\n")
    return {"data_dir": str(tmp_path / "data"), "sources": [{"name": "docs", "root": str(tmp_path / "corpus")}]}


@pytest.fixture
def synced_base(base: dict[str, Any]) -> dict[str, Any]:
    """`base` with its data_dir made, as a first sync leaves it: the mistakes tried on it are
    others than a data_dir that holds nothing."""
    Path(base["data_dir"]).mkdir()
    return base


def write(tmp_path: Path, cfg: dict[str, Any]) -> str:
    p = tmp_path / "bindery.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return str(p)


# (what the operator got wrong, how to get it wrong, command, words the one line must contain)
MISTAKES: list[tuple[str, dict[str, Any], list[str], tuple[str, ...]]] = [
    ("missing root", {"sources": [{"name": "docs", "root": "/nonexistent/bindery-root"}]}, ["sync"],
     ("sources.0.root", "does not exist")),
    ("root is a file", {"sources": [{"name": "docs", "root": "/etc/hostname"}]}, ["sync"],
     ("sources.0.root", "is a file")),
    ("unsupported database", {"backends": {"database_url": "mysql://u@h/db"}}, ["status"],
     ("backends.database_url", "unsupported database 'mysql'")),
    ("unknown driver", {"backends": {"database_url": "postgresql+nosuchdriver://u@h/db"}}, ["status"],
     ("backends.database_url", "nosuchdriver")),
    ("infinite max_file_mb", {"sources": [{"name": "docs", "root": "/tmp", "max_file_mb": float("inf")}]},
     ["status"], ("sources.0.max_file_mb", "finite")),
    ("s3 endpoint not a URL", {"sources": [{"name": "a", "kind": "s3", "bucket": "b", "endpoint_url": "not a url"}]},
     ["plan"], ("sources.0.endpoint_url", "http://")),
    ("s3 region malformed", {"sources": [{"name": "a", "kind": "s3", "bucket": "b", "region": "bad region!"}]},
     ["sync"], ("sources.0.region", "bad region!")),
    ("s3 bucket with a prefix", {"sources": [{"name": "a", "kind": "s3", "bucket": "kbase/docs"}]},
     ["plan"], ("sources.0.bucket", "prefix")),
    # a setting of the other kind synced another place than meant (a new-user review's find)
    ("s3 settings under a local source", {"sources": [{"name": "a", "bucket": "b", "root": "/tmp"}]},
     ["plan"], ("sources.0", "bucket", "kind: s3")),
    ("a root under an s3 source", {"sources": [{"name": "a", "kind": "s3", "bucket": "b", "root": "/tmp"}]},
     ["plan"], ("sources.0", "root", "kind: local")),
    ("dagster on postgres without one", {"orchestration": {"storage": "postgres"}}, ["plan"],
     ("orchestration.storage", "postgres needs")),
    ("malformed postgres_url", {"orchestration": {"postgres_url": "notaurl"}}, ["status"],
     ("orchestration.postgres_url", "not a database URL")),
    # Dagster loads a launcher only when its daemon dequeues a run: each queued run failed (a scale-out pass)
    ("k8s launcher not installed", {"orchestration": {"run_launcher": "k8s"}}, ["plan"],
     ("orchestration.run_launcher", "dagster-k8s package")),
    ("celery-k8s launcher not installed", {"orchestration": {"run_launcher": "celery-k8s"}}, ["sync", "--submit"],
     ("orchestration.run_launcher", "dagster-celery-k8s package")),
    ("bad cron", {"automation": {"reconcile_cron": "every night"}}, ["status"],
     ("automation.reconcile_cron", "every night")),
    ("cron out of range", {"automation": {"reconcile_cron": "61 3 * * *"}}, ["status"],
     ("automation.reconcile_cron",)),
    ("negative ocr_dpi", {"stages": {"parse": {"ocr_dpi": -300}}}, ["status"], ("stages.parse.ocr_dpi", "-300")),
    ("negative concurrency", {"stages": {"context": {"concurrency": -1}}}, ["status"],
     ("stages.context.concurrency",)),
    ("negative max_prefix_tokens", {"stages": {"context": {"max_prefix_tokens": -5}}}, ["status"],
     ("stages.context.max_prefix_tokens",)),
    ("overlap >= max", {"stages": {"chunk": {"max_tokens": 100, "overlap_tokens": 100}}}, ["status"],
     ("stages.chunk", "overlap_tokens", "max_tokens")),
    ("k above candidates", {"query": {"k": 80, "candidates": 50}}, ["status"], ("query", "candidates")),
    ("negative score floor", {"query": {"score_floor": -0.5}}, ["status"], ("query.score_floor",)),
    ("qdrant server without url", {"backends": {"vector": "qdrant-server"}}, ["status"], ("qdrant_url",)),
    ("unknown gate metric", {"gate": {"metric": "recall@7"}}, ["status"], ("gate.metric", "recall@7")),
    # a size is no secret: a misspelt `max_tokens` shows its value
    ("unknown key", {"stages": {"chunk": {"max_token": 100}}}, ["status"],
     ("stages.chunk.max_token", "got 100", "did you mean 'max_tokens'?")),
    ("unknown key in a source", {"sources": [{"name": "docs", "root": "/tmp", "exlude": ["x"]}]}, ["status"],
     ("sources.0.exlude", "did you mean 'exclude'?")),
    ("true for a number", {"query": {"k": True}}, ["plan"], ("query.k", "not true/false")),
    # ... while a token pasted under a misplaced key stays hidden
    ("a token under an unknown key", {"sources": [{"name": "docs", "root": "/tmp", "hf_token": "hf_S3CR3T"}]},
     ["plan"], ("sources.0.hf_token", "got ***")),
    ("off for a number", {"sources": [{"name": "docs", "root": "/tmp", "max_file_mb": False}]}, ["plan"],
     ("sources.0.max_file_mb", "not true/false")),
    ("wrong type", {"query": {"k": "ten"}}, ["status"], ("query.k",)),
    ("duplicate sources", {"sources": [{"name": "a", "root": "/tmp"}, {"name": "a", "root": "/tmp"}]},
     ["status"], ("sources.0.name and sources.1.name", "used more than once")),
    ("s3 without bucket", {"sources": [{"name": "b", "kind": "s3"}]}, ["status"], ("'b'", "bucket")),
    ("unknown source", {}, ["sync", "--source", "nope"], ("--source", "unknown source 'nope'")),
    # found by the operator audit (issue 11): each was exit 1, or a late failure, or several lines
    ("query unknown source", {}, ["query", "x", "--source", "nope"], ("--source", "unknown source 'nope'")),
    ("plan reindex --source", {}, ["plan", "reindex", "--source", "docs"], ("--source", "plan sync")),
    # options that meant nothing beside the others and were silently ignored (a later audit)
    ("dlq list --doc unknown", {}, ["dlq", "--doc", "a.md"], ("--doc a.md", "no dead letter")),
    # a name with a newline (which a file name may hold) split the one line in two (an operator pass)
    ("dlq --doc with a newline", {}, ["dlq", "--doc", "bad\nname.md"], ("--doc bad\\nname.md", "no dead letter")),
    ("dlq list --all", {}, ["dlq", "list", "--all"], ("--all", "dlq retry")),
    ("plan reindex --allow-mass-delete", {}, ["plan", "reindex", "--allow-mass-delete"],
     ("--allow-mass-delete", "plan sync")),
    ("promote --reason without --force", {}, ["promote", "--reason", "why"], ("--reason", "--force")),
    ("gate.k below the metric's cutoff", {"gate": {"k": 5}}, ["status"], ("gate.k", "'recall@10'")),
    ("tune.budget", {"tune": {"budget": "soon"}}, ["tune"], ("tune.budget", "'soon'")),
    # the tune section is checked by every command: `bindery plan` is how an operator checks a file
    ("tune.budget, any command", {"tune": {"budget": "10x"}}, ["status"], ("tune.budget", "'10x'")),
    ("tune.space unknown key", {"tune": {"space": {"query.nope": [1]}}}, ["tune"], ("tune.space.query.nope",)),
    ("tune.space unknown key, plan", {"tune": {"space": {"query.nope": [1]}}}, ["plan"], ("tune.space.query.nope",)),
    ("tune.space key tune cannot try", {"tune": {"space": {"stages.parse.ocr": [False]}}}, ["tune"],
     ("tune.space.stages.parse.ocr", "stages.chunk")),
    ("tune.space bad ingestion value", {"tune": {"space": {"stages.chunk.max_tokens": [200, 4]}}}, ["tune"],
     ("tune.space.stages.chunk.max_tokens", "4")),
    ("tune.space bad value", {"tune": {"space": {"query.dense_weight": [1.0, -1]}}}, ["tune"],
     ("tune.space.query.dense_weight", "-1")),
    ("tune.space empty list", {"tune": {"space": {"query.rrf_k": []}}}, ["tune"], ("tune.space.query.rrf_k",)),
    ("promote: gate.queries missing", {"gate": {"queries": "/nonexistent/eval.jsonl"}}, ["promote"],
     ("gate.queries", "cannot read")),
    ("eval: gate.queries missing", {"gate": {"queries": "/nonexistent/eval.jsonl"}}, ["eval"],
     ("gate.queries", "cannot read")),
    ("tune: gate.queries missing", {"gate": {"queries": "/nonexistent/eval.jsonl"}}, ["tune"],
     ("gate.queries", "cannot read")),
    # found by a second new-user audit: a misspelt model passed the plan, then dead-lettered every document
    ("embedding model not here (plan)", {"stages": {"embed": {"model": "nonexistent-model"}}}, ["plan"],
     ("stages.embed.model", "'nonexistent-model' not found")),
    ("embedding model not here (sync)", {"stages": {"embed": {"model": "nonexistent-model"}}}, ["sync"],
     ("stages.embed.model", "'nonexistent-model' not found")),
    ("chunk tokenizer not here", {"stages": {"chunk": {"tokenizer": "/nonexistent/tok"}}}, ["reindex"],
     ("stages.chunk.tokenizer", "not found")),
    # a third audit: a gate that could never refuse, a data dir that silently became the config's folder,
    # and a glob whose regex failed as an internal error
    ("gate tolerance of 1", {"gate": {"tolerance": 1}}, ["status"], ("gate.tolerance",)),
    ("empty data_dir", {"data_dir": ""}, ["status"], ("data_dir", "empty")),
    ("bad glob range", {"sources": [{"name": "docs", "root": "/tmp", "include": ["[z-a].md"]}]}, ["plan"],
     ("sources.0.include", "[z-a].md")),
    # a robustness pass: the OS refuses a NUL in a path, an internal error at run time (status exited 0)
    ("NUL in a root", {"sources": [{"name": "docs", "root": "/tmp/a\x00b"}]}, ["sync"], ("sources.0.root", "NUL")),
    ("NUL in data_dir", {"data_dir": "/tmp/x\x00y"}, ["status"], ("data_dir", "NUL")),
    # an operator pass (2026-12-06): thresholds out of range failed every document at run time,
    # NaN turned a check off, and gate.k above the query limit failed only at eval time
    ("quality share above 1", {"sources": [{"name": "docs", "root": "/tmp", "quality": {"min_word_share": 7}}]},
     ["plan"], ("sources.0.quality.min_word_share",)),
    ("quality share NaN", {"sources": [{"name": "docs", "root": "/tmp", "quality": {"min_alnum_share": float("nan")}}]},
     ["plan"], ("sources.0.quality.min_alnum_share",)),
    ("negative chars per page", {"sources": [{"name": "docs", "root": "/tmp",
                                              "quality": {"min_chars_per_page": -3}}]},
     ["plan"], ("sources.0.quality.min_chars_per_page",)),
    ("infinite weight", {"query": {"dense_weight": float("inf")}}, ["status"], ("query.dense_weight",)),
    ("gate.k above the query limit", {"gate": {"k": 5000}}, ["eval"], ("gate.k", "200")),
    ("negative parse time limit", {"stages": {"parse": {"max_parse_seconds": -1}}}, ["plan"],
     ("stages.parse.max_parse_seconds",)),
    # "effectively unlimited" overflowed the timer and dead-lettered every document (a review)
    ("huge parse time limit", {"stages": {"parse": {"max_parse_seconds": 1e10}}}, ["plan"],
     ("stages.parse.max_parse_seconds", "604800")),
    # a PostgreSQL operator pass: Dagster's alembic_version went into the store's schema and every
    # command then failed ("Can't locate revision"); a missing bucket was named unlike the rest
    ("dagster in the store's schema", {"backends": {"database_url": "postgresql+psycopg://u@db.invalid/b"},
                                       "orchestration": {"postgres_schema": "public"}}, ["status"],
     ("orchestration.postgres_schema", "'public'")),
    ("s3 source without a bucket", {"sources": [{"name": "a", "kind": "s3"}]}, ["plan"], ("sources.0.bucket",)),
    ("orchestration on mysql", {"orchestration": {"storage": "postgres", "postgres_url": "mysql://a@b/c"}},
     ["status"], ("orchestration.postgres_url", "not a PostgreSQL URL")),
    # a review: a data_dir under a root is skipped by the listing, but the root itself was walked
    ("root is the data_dir", {"data_dir": "/tmp/bindery-root-is-data", "sources": [
        {"name": "docs", "root": "/tmp/bindery-root-is-data"}]}, ["plan"], ("sources.0.root", "is the data_dir")),
    # an operator pass (2026-12-07): a name longer than the file system allows was an internal
    # error (exit 1, the whole path printed), and `$HOME` made a folder of that name
    ("data_dir name too long", {"data_dir": "/tmp/" + "b" * 300 + "/d"}, ["plan"], ("data_dir", "too long", "…")),
    ("root name too long", {"sources": [{"name": "docs", "root": "/tmp/" + "b" * 300}]}, ["sync"],
     ("sources.0.root", "too long")),
    ("unset variable in a root", {"sources": [{"name": "docs", "root": "${BINDERY_NO_SUCH_VAR}/docs"}]}, ["plan"],
     ("sources.0.root", "${BINDERY_NO_SUCH_VAR} is not set")),
    ("unset variable in data_dir", {"data_dir": "$BINDERY_NO_SUCH_VAR/data"}, ["status"],
     ("data_dir", "$BINDERY_NO_SUCH_VAR is not set")),
    # a field Bindery fills from where it read the file was accepted and silently replaced
    ("config_path in the file", {"config_path": "/elsewhere/bindery.yaml"}, ["status"],
     ("config_path", "not a setting")),
]


@pytest.mark.parametrize(("what", "change", "argv", "named"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_config_mistake_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           synced_base: dict[str, Any], what: str, change: dict[str, Any],
                                           argv: list[str], named: tuple[str, ...]) -> None:
    code, text = run_cli(capsys, "--config", write(tmp_path, {**synced_base, **change}), *argv)
    assert_one_line(code, text, *named)


def test_an_ocr_language_tesseract_lacks_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator pass: `ocr_language: klingon` passed plan and sync (exit 0) and every scanned
    PDF became a needs-ocr dead letter. Without Tesseract's data at all, OCR is unavailable as
    documented, and nothing is refused."""
    import assets.parsing.ocr as ocr

    cfg = write(tmp_path, {**base, "stages": {"parse": {"ocr_language": "klingon"}}})
    monkeypatch.setattr(ocr, "installed_languages", lambda: ["eng", "osd"])
    code, text = run_cli(capsys, "--config", cfg, "plan")
    assert_one_line(code, text, "stages.parse.ocr_language", "'klingon'", "installed: eng, osd")
    split = write(tmp_path, {**base, "stages": {"parse": {"ocr_language": "eng+klingon"}}})
    monkeypatch.setattr(ocr, "installed_languages", lambda: ["eng", "klingon"])  # found, but not together
    code, text = run_cli(capsys, "--config", split, "plan")
    assert_one_line(code, text, "stages.parse.ocr_language", "different tessdata folders", "TESSDATA_PREFIX")
    monkeypatch.setattr(ocr, "installed_languages", lambda: [])
    assert run_cli(capsys, "--config", cfg, "plan")[0] == 0


def test_anthropic_contextualiser_without_its_key_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cfg = write(tmp_path, {**base, "stages": {"context": {"provider": "anthropic"}}})
    for command in ("plan", "sync"):
        code, text = run_cli(capsys, "--config", cfg, command)
        assert_one_line(code, text, "stages.context.provider", "ANTHROPIC_API_KEY")
    assert not (tmp_path / "data" / "bindery.db").exists()  # nothing was parsed or stored


def test_config_file_errors_say_configuration_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   base: dict[str, Any]) -> None:
    code, text = run_cli(capsys, "--config", write(tmp_path, {**base, "query": {"k": "ten"}}), "status")
    assert code == 2 and "invalid configuration: query.k" in text and "configuration error" not in text


def test_data_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any]) -> None:
    (tmp_path / "afile").write_text("x")
    code, text = run_cli(capsys, "--config", write(tmp_path, {**base, "data_dir": str(tmp_path / "afile")}), "status")
    assert_one_line(code, text, "data_dir", "is a file")


def test_config_path_too_long(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run_cli(capsys, "--config", str(tmp_path / ("c" * 300 + ".yaml")), "plan")
    assert_one_line(code, text, "configuration file", "too long")


def test_variables_in_paths_are_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINDERY_TEST_HOME", str(tmp_path))
    cfg = config_from_dict({"data_dir": "${BINDERY_TEST_HOME}/data",
                            "sources": [{"name": "docs", "root": "$BINDERY_TEST_HOME/corpus"}]}, tmp_path)
    assert cfg.sources[0].root == str(tmp_path / "corpus") and cfg.data_dir == str(tmp_path / "data")


def test_config_path_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line(*run_cli(capsys, "--config", str(tmp_path), "status"), str(tmp_path), "is a folder")


def test_config_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "bindery.yaml"
    p.write_bytes("data_dir: /tmp/caf\xe9\n".encode("latin-1"))
    assert_one_line(*run_cli(capsys, "--config", str(p), "status"), "bindery.yaml", "not UTF-8")


def test_config_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() == 0:  # root reads any mode; /proc/self/mem is a file that refuses reads from 0
        path = "/proc/self/mem"
    else:
        p = tmp_path / "bindery.yaml"
        p.write_text("data_dir: x\n")
        p.chmod(0)
        path = str(p)
    assert_one_line(*run_cli(capsys, "--config", path, "status"), path, "cannot be read")


def test_config_missing_and_bad_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line(*run_cli(capsys, "--config", str(tmp_path / "nope.yaml"), "status"), "not found")
    p = tmp_path / "bindery.yaml"
    p.write_text("data_dir: [\nsources: {\n")
    assert_one_line(*run_cli(capsys, "--config", str(p), "status"), "bindery.yaml:", "not valid YAML")


@pytest.mark.parametrize("text, key", [
    ("sources:\n- {name: a, root: .}\nsources:\n- {name: b, root: .}\n", "'sources'"),  # a source vanished
    ("data_dir: one\nsources: []\ndata_dir: two\n", "'data_dir'"),  # another, empty instance
    ("sources:\n- name: a\n  root: .\n  exclude: ['*.log']\n  exclude: ['*.tmp']\n", "'exclude'"),  # nested
])
def test_config_key_written_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str) -> None:
    """YAML loaders keep the last of two equal keys; the configuration refuses them instead."""
    p = tmp_path / "bindery.yaml"
    p.write_text(text)
    assert_one_line(*run_cli(capsys, "--config", str(p), "status"), key, "written twice")


def test_config_odd_yaml_is_still_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unhashable key stays YAML's own one-line error (it was an internal TypeError, exit 1)."""
    p = tmp_path / "bindery.yaml"
    p.write_text("? [a]\n: 1\n")
    assert_one_line(*run_cli(capsys, "--config", str(p), "status"), "not valid YAML", "unhashable")


def _alias_bomb(depth: int) -> str:
    """Anchors of ten aliases of the anchor before: 10**depth values in a few hundred bytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\nsources: []\n"


@pytest.mark.parametrize("text, named", [
    (_alias_bomb(6), ("expand to more than",)),  # 10**6 values (nine levels: minutes and gigabytes)
    ("sources:\n- {name: a, root: ., include: &i [*i]}\n", ("alias is used inside its own anchor",)),
    ("x: &x {y: *x}\nsources: []\n", ("alias is used inside its own anchor",)),  # was a RecursionError
    ("x: " + "[" * 3000 + "]" * 3000 + "\nsources: []\n", ("nests too deep",)),  # PyYAML's own recursion
])
def test_config_alias_bombs_and_cycles_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    text: str, named: tuple[str, ...]) -> None:
    """Aliases that expand past any configuration, or refer to themselves, are refused at once."""
    p = tmp_path / "bindery.yaml"
    p.write_text(text)
    assert_one_line(*run_cli(capsys, "--config", str(p), "status"), "bindery.yaml", *named)


def test_config_shared_aliases_still_load(tmp_path: Path) -> None:
    """An anchor used in many places is counted once per use, not refused for being shared."""
    p = tmp_path / "bindery.yaml"
    p.write_text("sources:\n" + "".join(f"- {{name: s{i}, root: ., include: *inc}}\n" if i else
                                         "- {name: s0, root: ., include: &inc ['*.md', '*.txt']}\n"
                                         for i in range(50)))
    assert [s.include for s in load_config(p).sources] == [["*.md", "*.txt"]] * 50


def test_config_merge_chains_are_not_duplicates(tmp_path: Path) -> None:
    """A merge of a mapping that itself merged and overrode a key: no key is written twice (a
    check after construction saw the flattened anchor's keys twice)."""
    p = tmp_path / "bindery.yaml"
    p.write_text("sources:\n- name: a\n  root: .\n  include: &inc ['*.md']\n"
                 "  exclude: &ex ['x']\n- &b\n  <<: {name: b, root: ., include: *inc}\n  name: b2\n"
                 "- <<: *b\n  name: c\n")
    assert [s.name for s in load_config(p).sources] == ["a", "b2", "c"]


def test_config_merge_keys_still_override(tmp_path: Path) -> None:
    """A YAML merge (`<<: *base`) may be overridden by the mapping's own keys: not a key written twice."""
    p = tmp_path / "bindery.yaml"
    p.write_text("sources:\n- &base {name: a, root: ., include: ['*.md']}\n"
                 "- <<: *base\n  name: b\n  include: ['*.txt']\n")
    assert [s.include for s in load_config(p).sources] == [["*.md"], ["*.txt"]]


@pytest.mark.parametrize(("argv", "named"), [
    (["query", "x", "--generation", "abc"], ("no generation abc",)),  # a name, as status shows them
    (["query", "x", "--generation", "g1 2"], ("--generation", "'g1 2'")),
    (["query", "x", "--generation", "99"], ("no generation 99",)),  # an id no generation has
    (["eval", "--generation", "-1"], ("--generation",)),
    (["query", "x", "-k", "0"], ("-k", "1 or more")),
    (["query", "x", "-k", "many"], ("-k", "'many'")),
    (["promote", "--candidate", "x"], ("--candidate",)),
    (["serve", "--port", "70000"], ("--port", "70000")),
    (["frobnicate"], ("frobnicate",)),
    ([], ("COMMAND",)),
    (["status", "--no-such-flag"], ("bindery status:", "--no-such-flag", "bindery status --help")),
    (["query", "x", "--bogus"], ("bindery query:", "--bogus")),  # the command is blamed, not bindery
    (["--bogus", "status"], ("bindery:", "--bogus", "`bindery --help`")),
    (["dlq", "retry"], ("--doc", "--all")),
    (["promote", "--force"], ("--reason",)),
    (["eval"], ("--queries", "gate.queries")),
    (["eval", "--queries", "missing.jsonl"], ("--queries", "missing.jsonl")),
    (["tune", "--queries", "missing.jsonl"], ("--queries", "missing.jsonl")),
    (["runs", "--status", "bogus"], ("--status", "'bogus'")),
    (["tune", "--budget", "soon"], ("--budget", "'soon'")),
    (["evalset", "draft", "--out", "."], ("--out", "is a folder")),
    (["evalset", "draft", "--out", "-"], ("--out -", "give its path")),
    (["evalset", "draft", "--out", "typo/sub/d.jsonl"], ("--out", "folder typo does not exist")),
    (["evalset", "draft", "--out", "/etc/passwd/d.jsonl"], ("--out", "/etc/passwd is a file, not a folder")),
    (["dlq", "retry", "--all", "--doc", "a.md"], ("--doc", "--all")),  # one was silently ignored
    (["evalset", "draft", "--out", "d.jsonl", "--principal", " "], ("--principal", "not empty")),
    (["dlq", "retry", "--doc", "nope.md"], ("--doc nope.md", "no dead letter")),
    (["query", ""], ("query is empty",)),
    (["query", "x", "--principal", ""], ("--principal", "not empty")),  # as evalset draft's
    (["query", "\u200b\u00ad\x01"], ("query is empty", "invisible")),  # answered with dense-only noise
    (["query", "x", "-k", "500"], ("-k", "200", "500")),
    # beyond the databases' integers: an OverflowError, "internal error", exit 1
    (["query", "x", "--generation", "99999999999999999999"], ("--generation",)),
    (["promote", "--candidate", "99999999999999999999"], ("--candidate", "at most")),
    (["runs", "--limit", "99999999999999999999"], ("--limit", "at most")),
])
def test_usage_mistake_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          synced_base: dict[str, Any],
                                          argv: list[str], named: tuple[str, ...]) -> None:
    code, text = run_cli(capsys, "--config", write(tmp_path, synced_base), *argv)
    assert_one_line(code, text, *named)


def test_bad_budget_option_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            base: dict[str, Any]) -> None:
    """`--budget 0` is the command line's mistake: no "configuration error:", reason "usage"."""
    import json

    code = main(["--config", write(tmp_path, base), "--json", "tune", "--budget", "0"])
    out, err = capsys.readouterr()
    assert code == 2 and json.loads(out)["reason"] == "usage"
    assert "configuration error" not in err and "--budget" in err


def test_json_error_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any]) -> None:
    import json

    cfg = write(tmp_path, {**base, "stages": {"context": {"concurrency": 0}}})
    code = main(["--config", cfg, "status", "--json"])
    out = capsys.readouterr().out
    assert code == 2 and "stages.context.concurrency" in json.loads(out)["error"]


def _subprocess(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "orchestration.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.mark.slow  # two CLI subprocesses, each importing Dagster
def test_internal_error_is_one_line_without_debug_and_a_traceback_with_it(tmp_path: Path,
                                                                          base: dict[str, Any]) -> None:
    """A store whose schema says current but whose tables are not (hand-edited) is nothing the CLI
    anticipates: still one line (exit 1) that points at --debug, and --debug shows the traceback."""
    import sqlite3

    from connectors.store.store import HEAD_REVISION

    data = tmp_path / "data"
    data.mkdir()
    db = sqlite3.connect(data / "bindery.db")
    db.execute("create table alembic_version (version_num varchar(32) not null primary key)")
    db.execute("insert into alembic_version values (?)", (HEAD_REVISION,))
    db.commit()
    db.close()
    cfg = write(tmp_path, base)
    plain = _subprocess("--config", cfg, "status", cwd=tmp_path)
    assert plain.returncode == 1
    assert "Traceback" not in plain.stderr + plain.stdout
    lines = (plain.stdout + plain.stderr).strip().splitlines()
    assert len(lines) == 1 and "--debug" in lines[0], lines
    debug = _subprocess("--config", cfg, "status", "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_a_data_dir_bindery_creates_is_owner_only(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 base: dict[str, Any]) -> None:
    """The store and the indexes hold every source's text: a data_dir Bindery creates is 0700
    (it was 0755, so any local user read a private folder's text in bindery.db); one that exists
    keeps the permissions its owner gave it."""
    cfg = write(tmp_path, {**base, "data_dir": str(tmp_path / "new" / "data")})
    assert run_cli(capsys, "--config", cfg, "sync")[0] == 0  # the command that makes it
    assert (tmp_path / "new" / "data").stat().st_mode & 0o777 == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o750)
    shared.chmod(0o750)
    assert run_cli(capsys, "--config", write(tmp_path, {**base, "data_dir": str(shared)}), "dlq")[0] == 0
    assert shared.stat().st_mode & 0o777 == 0o750


@pytest.mark.parametrize("argv", [["dlq"], ["dlq", "retry", "--all"], ["verify"], ["gc"], ["query", "x"], ["eval"],
                                  ["promote"], ["rollback"], ["discard"], ["runs"], ["runs", "--cancel", "abc"],
                                  ["evalset", "draft", "--out", "typo/d.jsonl"]])
def test_a_command_that_reads_a_missing_data_dir_names_it_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any], argv: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator pass: on a mistyped data_dir these made the folder and an empty store, then
    answered "no dead letters" or "no generations to verify", exit 0."""
    missing = tmp_path / "typo" / "data"
    (tmp_path / "eval.jsonl").write_text('{"id": "q", "query": "hello", "gold": [{"doc": "a.md"}]}\n')
    cfg = write(tmp_path, {**base, "data_dir": str(missing), "gate": {"queries": str(tmp_path / "eval.jsonl")}})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    import orchestration.instance

    monkeypatch.setattr(orchestration.instance, "_SET_HERE", None)
    code, text = run_cli(capsys, "--config", cfg, *argv)
    assert_one_line(code, text, "data_dir", str(missing), "does not exist", "nothing has been synced")
    assert not (tmp_path / "typo").exists()


def test_every_path_that_makes_a_data_dir_makes_it_owner_only(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: the Dagster home (`runs`) and the store's claim (a PostgreSQL store) made a
    missing data_dir 0755, and a later sync's indexes in it were readable by any local user."""
    import orchestration.instance
    from connectors.config import config_from_dict

    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the home under data_dir, not another test's
    monkeypatch.setattr(orchestration.instance, "_SET_HERE", None)
    from connectors.store.ownership import _claim_lock
    from orchestration.instance import dagster_home

    via_home = config_from_dict({"data_dir": str(tmp_path / "a" / "data")})
    dagster_home(via_home)
    assert (tmp_path / "a" / "data").stat().st_mode & 0o777 == 0o700
    with _claim_lock(tmp_path / "b" / "data"):
        pass
    assert (tmp_path / "b" / "data").stat().st_mode & 0o777 == 0o700


def test_data_dir_that_cannot_be_created(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         base: dict[str, Any]) -> None:
    """/proc refuses a mkdir even to root, which access() does not tell: a one-line data_dir error."""
    cfg = write(tmp_path, {**base, "data_dir": "/proc/bindery-test/data"})
    assert_one_line(*run_cli(capsys, "--config", cfg, "status"), "data_dir", "/proc")
    # plan, which creates nothing, refuses it as the sync would (it passed, and the sync then did not)
    assert_one_line(*run_cli(capsys, "--config", cfg, "plan"), "data_dir", "/proc")
    plan_dir = tmp_path / "fresh" / "data"
    cfg = write(tmp_path, {**base, "data_dir": str(plan_dir)})
    assert run_cli(capsys, "--config", cfg, "plan")[0] == 0
    assert list(tmp_path.glob(".bindery-probe-*")) == [] and not (tmp_path / "fresh").exists()  # nothing left


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any],
                     command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import uvicorn

    def started(*args: Any, **kw: Any) -> None:
        raise AssertionError("the service was started on a port in use")

    monkeypatch.setattr(uvicorn, "run", started)  # a regression fails here instead of serving forever
    monkeypatch.setattr(subprocess, "Popen", started)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, text = run_cli(capsys, "--config", write(tmp_path, base), command, "--port", str(port))
    assert_one_line(code, text, f"--port {port}", "already in use")


@pytest.mark.parametrize("interrupts", [1, 2])
def test_ctrl_c_stops_serve_with_one_line_and_exit_130(tmp_path: Path, base: dict[str, Any], interrupts: int) -> None:
    """Ctrl-C is how an operator stops `bindery serve`: uvicorn shuts down cleanly, then the
    command ends with one line and 130, so a supervisor can tell it from a normal exit (it was
    exit 0, with the interrupt swallowed). A second Ctrl-C during the shutdown (an impatient
    operator, `timeout` signalling the group) printed the cancelled lifespan's two tracebacks."""
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write(tmp_path, base)
    proc = subprocess.Popen([sys.executable, "-m", "orchestration.cli", "--config", config, "serve", "--port",
                             str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
                time.sleep(0.2)
        for _ in range(interrupts):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "bindery serve: stopped", err[-2000:]


def test_ctrl_c_while_the_cli_is_still_loading_is_one_line(tmp_path: Path, base: dict[str, Any]) -> None:
    """The console script (`orchestration.entry`) catches an interrupt that lands while the CLI's
    modules are still being imported; `main`'s own handling only exists once they are. It was a
    traceback from whichever module was loading. `serve` never ends by itself, so whenever the
    signal lands (importing, starting, serving) the answer is one line and 130."""
    import signal
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    script = "import sys; sys.argv[0] = 'bindery'; from orchestration.entry import main; main()"
    for delay in (0.15, 0.3):
        proc = subprocess.Popen([sys.executable, "-c", script, "--config", write(tmp_path, base), "serve",
                                 "--port", port], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in err, (delay, err[-2000:])
        assert err.strip().splitlines()[-1].startswith("bindery"), err[-2000:]


def test_reindex_promote_checks_the_eval_set_before_building(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             base: dict[str, Any]) -> None:
    from connectors.config import load_config
    from connectors.store import DocumentStore

    (tmp_path / "eval.jsonl").write_text('{"id": "a", "query": \n')
    cfg = write(tmp_path, {**base, "gate": {"queries": str(tmp_path / "eval.jsonl")}})
    assert_one_line(*run_cli(capsys, "--config", cfg, "reindex", "--promote"), "gate.queries", "eval.jsonl:1")
    store = DocumentStore(load_config(cfg).database_url)
    try:
        assert store.generations() == []  # nothing was built
    finally:
        store.dispose()


def test_usage_mistake_with_json_prints_the_error_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         base: dict[str, Any]) -> None:
    import json

    code = None
    try:
        main(["--config", write(tmp_path, base), "query", "x", "--generation", "a/b", "--json"])
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    assert code == 2
    assert json.loads(out.out) == {"error": "argument --generation: expected live, previous, candidate, a "
                                            "generation id (a number) or name, got 'a/b'", "reason": "usage"}
    assert len(out.err.strip().splitlines()) == 1


def test_run_statuses_are_dagsters() -> None:
    import dagster as dg

    from orchestration.cli_parser import RUN_STATUSES

    assert set(RUN_STATUSES) == {s.value.lower() for s in dg.DagsterRunStatus}


@pytest.mark.slow  # a CLI subprocess importing Dagster
def test_a_closed_pipe_ends_quietly(tmp_path: Path, base: dict[str, Any]) -> None:
    """`bindery status | head -1`: the reader leaves early; no "internal error: BrokenPipeError"."""
    cfg = write(tmp_path, base)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r, w = os.pipe()
    os.close(r)  # a reader that has already gone
    try:
        proc = subprocess.run([sys.executable, "-m", "orchestration.cli", "--config", cfg, "status"], stdout=w,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


# (argv, what the JSON's "reason" must be): a mistake in the command line is "usage", one in the
# configuration file "config" (docs/json-contract.md); the query's text and k are judged before the
# generation or the embedding model is loaded (there is none here: that would be exit 1)
REASONS = [
    (["promote", "--force"], "usage"),
    (["dlq", "retry"], "usage"),
    (["dlq", "retry", "--doc", "nope.md"], "usage"),
    (["sync", "--source", "nope"], "usage"),
    (["query", "x", "--source", "nope"], "usage"),
    (["plan", "reindex", "--source", "docs"], "usage"),
    (["query", ""], "usage"),
    (["query", "   "], "usage"),
    (["query", "x", "-k", "500"], "usage"),
    (["evalset", "draft", "--out", "."], "usage"),
    (["eval"], "config"),  # no --queries and no gate.queries
]


@pytest.mark.parametrize(("argv", "reason"), REASONS, ids=[" ".join(r[0]) or "-" for r in REASONS])
def test_json_reason_tells_usage_from_config(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             synced_base: dict[str, Any], argv: list[str], reason: str) -> None:
    import json

    code, text = run_cli(capsys, "--config", write(tmp_path, synced_base), "--json", *argv)
    assert code == 2, text
    assert json.loads(text.splitlines()[0])["reason"] == reason
    assert ("configuration error" in text) == (reason == "config")


def test_an_address_not_of_this_machine_names_host_not_port(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            base: dict[str, Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    def started(*args: Any, **kw: Any) -> None:
        raise AssertionError("the service was started")

    monkeypatch.setattr(uvicorn, "run", started)
    # 192.0.2.1 (TEST-NET-1, RFC 5737) is assigned to no machine: binding it fails with EADDRNOTAVAIL
    code, text = run_cli(capsys, "--config", write(tmp_path, base), "serve", "--host", "192.0.2.1", "--port", "18735")
    assert_one_line(code, text, "--host 192.0.2.1", "choose another --host")
    assert "--port" not in text


@pytest.mark.parametrize("command", ["serve", "sync", "status"])
def test_the_database_down_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  base: dict[str, Any], command: str) -> None:
    """The query service opened its store inside uvicorn's startup: a database that is down
    ended in ~90 lines of traceback and exit 3. Now one line, exit 1, as for every command;
    `sync`, which reaches the Dagster instance's tables in the same database first, said exit 2
    (a configuration mistake) for the same outage."""
    from tests.moto_server import free_port

    url = f"postgresql+psycopg://bindery@127.0.0.1:{free_port()}/nope"
    cfg = write(tmp_path, {**base, "backends": {"database_url": url}})
    args = ["--port", str(free_port())] if command == "serve" else []
    code, text = run_cli(capsys, "--config", cfg, command, *args)
    lines = [line for line in text.splitlines() if line.strip()]
    assert code == 1 and "Traceback" not in text and len(lines) == 1
    assert "cannot open the Dagster instance" in lines[0] or "cannot open document store" in lines[0]
    assert "Connection refused" in lines[0]


@pytest.mark.parametrize("command", ["status", "plan", "sync", "dlq"])
def test_a_corrupt_store_is_one_line_naming_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      base: dict[str, Any], command: str) -> None:
    """A database file that is not one (overwritten, truncated) is the store's failure, reason
    `store`, not an "internal error" that reads as a bug."""
    cfg = write(tmp_path, base)
    data = Path(base["data_dir"])
    data.mkdir(parents=True)
    (data / "bindery.db").write_bytes(bytes(range(256)) * 32)
    code, text = run_cli(capsys, "--config", cfg, "--json", command)
    assert code == 1 and "Traceback" not in text and "internal error" not in text
    assert '"reason": "store"' in text and "file is not a database" in text


def test_a_damaged_dagster_database_is_one_line_naming_it_and_moving_it_aside_recovers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any]) -> None:
    """An operator pass: a damaged history/runs.db was `internal error: DatabaseError ... PRAGMA
    main.table_info`, naming no file and no way out."""
    cfg = write(tmp_path, base)
    assert run_cli(capsys, "--config", cfg, "sync")[0] == 0
    runs_db = Path(base["data_dir"]) / "dagster_home" / "history" / "runs.db"
    runs_db.write_bytes(b"not a database" * 100)
    for command in ("runs", "sync"):
        code, text = run_cli(capsys, "--config", cfg, "--json", command)
        assert code == 1 and "Traceback" not in text and "internal error" not in text
        assert '"reason": "store"' in text and "history/runs.db" in text and "move it aside" in text
    runs_db.rename(runs_db.with_suffix(".damaged"))
    assert run_cli(capsys, "--config", cfg, "sync")[0] == 0  # the run history starts anew
    index_db = runs_db.parent / "runs" / "index.db"  # opened lazily, at a run's first event (a review)
    index_db.write_bytes(b"not a database" * 100)
    code, text = run_cli(capsys, "--config", cfg, "--json", "sync")
    assert code == 1 and "internal error" not in text and "history/runs/" in text
    index_db.rename(index_db.with_suffix(".damaged"))
    assert run_cli(capsys, "--config", cfg, "sync")[0] == 0


@pytest.mark.parametrize("url", ["postgres://app:S3CRETPW@db.example/app", "notaurl:S3CRETPW@x",
                                 "mysql://app:S3CRETPW@db.example/app"])
def test_a_database_url_in_an_error_hides_its_password(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       base: dict[str, Any], url: str) -> None:
    """`backends.database_url: postgres://app:PW@...` (the scheme many hosts hand out) was refused
    with the whole URL echoed, password included, on stderr and in `--json`."""
    cfg = write(tmp_path, {**base, "backends": {"database_url": url}})
    for args in (["status"], ["--json", "status"]):
        code, text = run_cli(capsys, "--config", cfg, *args)
        assert code == 2 and "backends.database_url" in text and "S3CRETPW" not in text, text
    code, text = run_cli(capsys, "--config", write(tmp_path, {**base, "password": "hunter2"}), "status")
    assert code == 2 and "password" in text and "hunter2" not in text


def test_a_raw_api_key_pasted_as_its_hash_is_not_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         base: dict[str, Any]) -> None:
    """`hash: bk_...` (the key itself where its hash belongs) was refused with the key quoted on
    stderr, into CI output and service logs."""
    auth = {"api_keys": [{"hash": "bk_MyRealKeyPastedHere", "principals": ["alice"]}]}
    cfg = write(tmp_path, {**base, "query": {"auth": auth}})
    code, text = run_cli(capsys, "--config", cfg, "status")
    assert code == 2 and "query.auth.api_keys.0.hash" in text and "MyRealKey" not in text, text


def test_an_empty_config_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               base: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """`--config "$CFG"` with CFG unset read ./bindery.yaml instead, and could sync the wrong
    configuration."""
    write(tmp_path, base)  # a ./bindery.yaml that must not be read
    monkeypatch.chdir(tmp_path)
    code, text = run_cli(capsys, "--config", "", "status")
    assert_one_line(code, text, "--config", "empty")


def test_reindex_without_sources_makes_no_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A configuration with no sources is refused before a generation row is made: `status`
    showed a first build "building" that nothing would ever build."""
    config = write(tmp_path, {"data_dir": str(tmp_path / "data")})
    assert_one_line(*run_cli(capsys, "--config", config, "reindex"), "no sources configured")
    code, text = run_cli(capsys, "--config", config, "--json", "status")
    assert code == 0 and json.loads(text)["first_build"] is None, text


def test_status_on_a_fresh_data_dir_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`status` reads, as `plan` does: a mistyped `--config` or a first look left a data_dir and
    an empty database behind (`./.bindery` for a configuration without `data_dir`)."""
    config = write(tmp_path, {"data_dir": str(tmp_path / "data")})
    code, text = run_cli(capsys, "--config", config, "--json", "status")
    assert code == 0 and json.loads(text)["live"] is None, text
    assert not (tmp_path / "data").exists()


def test_status_says_what_would_stop_a_sync_and_still_answers(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`status` said "none yet: run `bindery sync`" and exited 0 on a configuration that sync
    refuses (a new user's pass): it still answers (an unmounted folder is when the state is worth
    seeing), and names what a sync would stop at."""
    config = write(tmp_path, {"data_dir": str(tmp_path / "data"),
                              "sources": [{"name": "docs", "root": str(tmp_path / "nope")}]})
    code, text = run_cli(capsys, "--config", config, "--json", "status")
    assert code == 0 and json.loads(text)["sync_blockers"] == [
        f"sources.0.root (source 'docs'): folder {tmp_path / 'nope'} does not exist"], text
    code, text = run_cli(capsys, "--config", config, "status")
    assert code == 0 and "run `bindery sync`" not in text and "a sync would stop now: sources.0.root" in text
    (tmp_path / "other").mkdir()
    empty = write(tmp_path / "other", {"data_dir": str(tmp_path / "data"), "sources": []})
    code, text = run_cli(capsys, "--config", empty, "status")
    assert code == 0 and "a sync would stop now: no sources configured" in text
    (tmp_path / "nope").mkdir()
    code, text = run_cli(capsys, "--config", config, "--json", "status")
    assert code == 0 and json.loads(text)["sync_blockers"] == []
    assert not (tmp_path / "data").exists()


def test_a_full_disk_is_one_line_saying_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           base: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """It ended in "internal error: OperationalError ... disk I/O error", never saying "full"
    (a robustness pass). SQLite's own wording, ENOSPC under another error, and a bare I/O error
    on a data_dir with nothing free are all a full disk; an I/O error elsewhere is not."""
    import shutil
    import sqlite3

    from connectors.errors import out_of_space
    from orchestration import cli

    cfg = write(tmp_path, base)

    def full(*_: Any) -> Any:
        try:
            raise OSError(28, "No space left on device")
        except OSError as e:
            raise sqlite3.OperationalError("disk I/O error") from e

    monkeypatch.setitem(cli.COMMANDS, "status", full)
    code, text = run_cli(capsys, "--config", cfg, "status")
    assert code == 1 and text.count("\n") <= 1 and "internal error" not in text
    assert "no space left on the device (data_dir" in text and "kept" in text
    assert out_of_space(sqlite3.OperationalError("database or disk is full")) is not None
    io = sqlite3.OperationalError("disk I/O error")
    assert out_of_space(io, str(tmp_path)) is None  # this disk has room: an I/O error is not a full disk
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: shutil._ntuple_diskusage(10**9, 10**9 - 4096, 4096))
    assert out_of_space(io, str(tmp_path)) is not None


def test_a_run_refused_for_its_root_leaves_no_data_dir_and_json_says_what_stderr_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any]) -> None:
    """A new-user pass: `sync` refused for a missing root still created an empty data_dir (plan
    and status did not), and its JSON error lost the "configuration error:" stderr opened with."""
    cfg = write(tmp_path, {**base, "sources": [{"name": "docs", "root": str(tmp_path / "nope")}]})
    code, text = run_cli(capsys, "--config", cfg, "--json", "sync")
    assert code == 2 and not Path(base["data_dir"]).exists()
    assert '"error": "configuration error: sources.0.root' in text


@pytest.mark.parametrize(("change", "argv", "named"), [
    ({"gate": {"metric": "recall@11"}}, ["sync"], "gate.metric"),
    ({"automation": {"reconcile_cron": "bad cron"}}, ["sync"], "automation.reconcile_cron"),
    ({"stages": {"embed": {"model": "all-MiniLM-L6-v3"}}}, ["sync"], "stages.embed.model"),
    ({"sources": []}, ["sync"], "no sources configured"),
])
def test_a_run_refused_for_any_configuration_mistake_leaves_no_data_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any],
        change: dict[str, Any], argv: list[str], named: str) -> None:
    """An operator pass: only a missing root was checked before data_dir was made; a sync refused
    for a misspelt model, gate metric or cron (or with no sources: a whole Dagster home) left a
    data_dir behind at the mistyped path."""
    cfg = write(tmp_path, {**base, **change})
    assert_one_line(*run_cli(capsys, "--config", cfg, *argv), named)
    assert not Path(base["data_dir"]).exists()


@pytest.mark.parametrize(("raw", "expected"), [
    ({"stages": None}, "stages: Input should be a mapping of settings (got nothing: the key has nothing under it)"),
    ({"stages": {"chunk": "big"}}, "stages.chunk: Input should be a mapping of settings (got 'big')"),
    ({"sources": {"docs": {"root": "/srv"}}}, "sources: Input should be a valid list (got a mapping"),
])
def test_a_section_of_the_wrong_shape_is_named_in_the_files_words(raw: dict[str, Any], expected: str) -> None:
    """An operator pass: `stages:` with its settings commented out said "Input should be a valid
    dictionary or instance of StageConfigs", a class of the code, and a mapping written where a
    list goes did not say what it got."""
    with pytest.raises(ConfigError) as e:
        config_from_dict(raw)
    assert expected in str(e.value) and "instance of" not in str(e.value)


def test_values_whose_infinity_means_something_still_load() -> None:
    """Floats are finite everywhere a weight or a share is meant (NaN and inf passed silently), but
    `retention.rollback_window_hours: .inf` keeps every generation from expiring by age, as
    before (a review)."""
    import math

    from connectors.config import config_from_dict

    assert math.isinf(config_from_dict({"retention": {"rollback_window_hours": float("inf")}})
                      .retention.rollback_window_hours)


def test_an_interrupted_run_under_json_prints_an_object(tmp_path: Path, base: dict[str, Any],
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An operator pass: `bindery --json sync | jq` read nothing after Ctrl-C (exit 130), where
    every other end prints an object; it now names what the run had stored."""
    import orchestration.cli as cli_module
    from assets import progress

    def interrupted(_a: Any) -> int:
        progress.reset_stored_counts()
        with progress.StageProgress("parse", "docs", "documents") as prog:
            prog.advance(3)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "_dispatch", interrupted)
    assert main(["--config", write(tmp_path, base), "sync", "--json"]) == 130
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert got["reason"] == "interrupted" and got["stored"] == {"parse": 3}
    assert "stored before stopping: parse 3" in got["error"]
    assert [line for line in err.splitlines() if "interrupted" in line] == [f"bindery sync: {got['error']}"]


@pytest.mark.parametrize("name", ["bad\nname.pdf", "tab\there.pdf", "esc\x1b]0;title\x07.pdf"])
def test_dlq_doc_takes_the_name_as_dlq_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  base: dict[str, Any], name: str) -> None:
    """`bindery dlq` shows a file name's control characters escaped (`bad\\nname.pdf`), and its
    refusal of an unknown --doc says to name it "as `bindery dlq` lists it": that form works
    (it was refused, leaving only the doc id or shell quoting of the raw bytes)."""
    from connectors.store.ownership import open_store

    cfg = write(tmp_path, base)
    store = open_store(load_config(cfg))
    store.add_dead_letter(doc_id="d1", source="docs", external_id=name, stage="parse", reason="empty",
                          error="the file is empty")
    store.dispose()
    listed = run_cli(capsys, "--config", cfg, "dlq")[1]
    shown = name.encode("unicode_escape").decode("ascii")
    assert shown in listed
    for doc in (shown, f"docs:{shown}", name):
        code, text = run_cli(capsys, "--config", cfg, "dlq", "--doc", doc)
        assert code == 0, text
        assert f"docs:{shown}" in text and "the file is empty" in text
