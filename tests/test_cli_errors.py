"""Every configuration and usage mistake an operator makes ends in exit 2 and one line that
names the key or argument and what is wrong — never a traceback (issue 11, item 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

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
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("# A\n\nhello\n")
    return {"data_dir": str(tmp_path / "data"), "sources": [{"name": "docs", "root": str(tmp_path / "corpus")}]}


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
    ("qdrant server without url", {"backends": {"vector": "qdrant-server"}}, ["status"], ("qdrant_url",)),
    ("unknown gate metric", {"gate": {"metric": "recall@7"}}, ["status"], ("gate.metric", "recall@7")),
    ("unknown key", {"stages": {"chunk": {"max_token": 100}}}, ["status"], ("stages.chunk.max_token",)),
    ("wrong type", {"query": {"k": "ten"}}, ["status"], ("query.k",)),
    ("duplicate sources", {"sources": [{"name": "a", "root": "/tmp"}, {"name": "a", "root": "/tmp"}]},
     ["status"], ("duplicate source",)),
    ("s3 without bucket", {"sources": [{"name": "b", "kind": "s3"}]}, ["status"], ("'b'", "bucket")),
    ("unknown source", {}, ["sync", "--source", "nope"], ("unknown source 'nope'",)),
]


@pytest.mark.parametrize(("what", "change", "argv", "named"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_config_mistake_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any],
                                           what: str, change: dict[str, Any], argv: list[str],
                                           named: tuple[str, ...]) -> None:
    code, text = run_cli(capsys, "--config", write(tmp_path, {**base, **change}), *argv)
    assert_one_line(code, text, *named)


def test_data_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any]) -> None:
    (tmp_path / "afile").write_text("x")
    code, text = run_cli(capsys, "--config", write(tmp_path, {**base, "data_dir": str(tmp_path / "afile")}), "status")
    assert_one_line(code, text, "data_dir", "is a file")


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


@pytest.mark.parametrize(("argv", "named"), [
    (["query", "x", "--generation", "abc"], ("--generation", "'abc'")),
    (["eval", "--generation", "-1"], ("--generation",)),
    (["query", "x", "-k", "0"], ("-k", "1 or more")),
    (["query", "x", "-k", "many"], ("-k", "'many'")),
    (["promote", "--candidate", "x"], ("--candidate",)),
    (["serve", "--port", "70000"], ("--port", "70000")),
    (["frobnicate"], ("frobnicate",)),
    ([], ("COMMAND",)),
    (["status", "--no-such-flag"], ("--no-such-flag",)),
    (["dlq", "retry"], ("--doc", "--all")),
    (["promote", "--force"], ("--reason",)),
    (["eval"], ("--queries", "gate.queries")),
])
def test_usage_mistake_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any],
                                          argv: list[str], named: tuple[str, ...]) -> None:
    code, text = run_cli(capsys, "--config", write(tmp_path, base), *argv)
    assert_one_line(code, text, *named)


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
    """A store that is not a database at all is nothing the CLI anticipates: still one line
    (exit 1) that points at --debug, and --debug shows the traceback."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "bindery.db").write_bytes(b"this is not a SQLite database" * 100)
    cfg = write(tmp_path, base)
    plain = _subprocess("--config", cfg, "status", cwd=tmp_path)
    assert plain.returncode == 1
    assert "Traceback" not in plain.stderr + plain.stdout
    lines = (plain.stdout + plain.stderr).strip().splitlines()
    assert len(lines) == 1 and "--debug" in lines[0], lines
    debug = _subprocess("--config", cfg, "status", "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr
