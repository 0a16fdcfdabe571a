"""Include/exclude globs have real `.gitignore` semantics (issue 11, item 7).

The oracle is git itself: `git check-ignore` over the same patterns and paths must agree with
`PathFilter` on every path, negations and folder patterns included. Fast: one `git` call per
pattern set.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from connectors.config import SourceConfig
from connectors.errors import ConfigError
from connectors.sources import LocalFolderSource, PathFilter

PATHS = [
    "a.md", "a.mdx", "a.txt", "keep.md", "x/keep.md", "x/a.md", "x/y/a.md", "docs", "docs/a", "docs/x/y.txt",
    "x/docs/a", "docsx/a", "drafts.md", "drafts/a.md", "x/drafts/b/c.txt", "mydrafts/a", "build/a.o",
    "x/y/build/a.o", "build/x/a.o", "a/b.txt", "a/x/y/b.txt", "b.txt", "ab.txt", "file1.txt", "file12.txt",
    "file.txt", "c.txt", "x/a", "x/a/b", "report (1)+.pdf", "notes/#1.md", "z/ignored/keep/me.md",
    "keep.txt", "drafts/keep.txt", "x/drafts/keep.txt", "docs/x/keep.md", "a.md/b.txt",
]

PATTERN_SETS = [
    ["*.md"], ["/*.md"], ["docs/**"], ["drafts/"], ["**/build/*.o"], ["a/**/b.txt"], ["file?.txt"],
    ["[ab]*.txt"], ["[!ab]*.txt"], ["x/*"], ["report (1)+.pdf"],
    ["*.md", "!keep.md"],  # negation re-includes, at any depth
    ["*.md", "!/keep.md"],  # an anchored negation only at the root
    ["x/", "!x/keep.md"],  # git cannot re-include below an excluded folder
    ["x/*", "!x/keep.md"],  # ... but a file whose folder is not excluded comes back
    ["**/ignored/**", "!**/keep/**"],
    ["# a comment", "*.txt", "", "\\#1.md"],  # comments, blank lines, an escaped '#'
    # an operator pass: pathspec's GitIgnoreSpec ranked `!keep.txt` (the file) above the later
    # `drafts/` (its folder) and kept drafts/keep.txt; git leaves it out
    ["*.txt", "!keep.txt", "drafts/"],
    ["*.txt", "!drafts/", "x/"],  # a negated folder does not take back files a pattern names
    ["docs/**", "!docs/a"],  # `docs/**` names what is below docs, not docs itself
    ["*.txt", "!drafts"],
]


def git_ignored(tmp: Path, patterns: list[str], paths: list[str]) -> set[str]:
    """What git itself matches: `git check-ignore --no-index` with the patterns as .gitignore."""
    repo = tmp / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("\n".join(patterns) + "\n")
    res = subprocess.run(["git", "-C", str(repo), "check-ignore", "--no-index", "--stdin"],
                         input="\n".join(paths) + "\n", capture_output=True, text=True)
    assert res.returncode in (0, 1), res.stderr
    return set(res.stdout.split("\n")) - {""}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the oracle and is not installed")
@pytest.mark.parametrize("patterns", PATTERN_SETS, ids=[" ".join(p) for p in PATTERN_SETS])
def test_exclude_agrees_with_git(tmp_path: Path, patterns: list[str]) -> None:
    # blank lines and comments are .gitignore syntax for git; in a configuration they are refused
    kept = {p for p in PATHS if PathFilter(["**/*"], [p for p in patterns if p.strip() and p[0] != "#"])(p)}
    by_git = git_ignored(tmp_path, patterns, PATHS)
    assert set(PATHS) - kept == by_git


# lines a random list draws from: negations of files and folders, anchored, `**`, folder-only
POOL = ["*.md", "!keep.md", "drafts/", "!drafts/", "x/", "!x/keep.md", "docs/**", "!docs/a", "*.txt", "!keep.txt",
        "x/*", "!x/a/", "**/ignored/**", "!**/keep/**", "/*.md", "docs", "!docs/x/", "a/**/b.txt", "!*.txt",
        "x/*/", "!x/a", "build/", "!b.txt", "**/keep"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the oracle and is not installed")
def test_random_pattern_lists_agree_with_git(tmp_path: Path) -> None:
    rng = random.Random(7)
    for _ in range(40):
        patterns = rng.sample(POOL, rng.randint(2, 5))
        kept = {p for p in PATHS if PathFilter(["**/*"], patterns)(p)}
        assert set(PATHS) - kept == git_ignored(tmp_path, patterns, PATHS), patterns


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the oracle and is not installed")
@pytest.mark.parametrize("patterns", PATTERN_SETS[:12], ids=[" ".join(p) for p in PATTERN_SETS[:12]])
def test_include_agrees_with_git(tmp_path: Path, patterns: list[str]) -> None:
    taken = {p for p in PATHS if PathFilter(patterns)(p)}
    assert taken == git_ignored(tmp_path, patterns, PATHS)


def test_negation_is_not_taken_literally() -> None:
    f = PathFilter(["**/*"], ["*.md", "!keep.md"])
    assert not f("a.md") and f("keep.md") and f("sub/keep.md") and f("a.txt")
    assert PathFilter(["**/*"], ["!keep.md"])("!keep.md")  # '!' negates; it is not part of a file name


def test_exclude_wins_and_empty_include_means_all() -> None:
    f = PathFilter(["**/*.md"], ["drafts/"])
    assert f("a.md") and f("x/b.md") and not f("drafts/c.md") and not f("a.txt")
    assert PathFilter([], ["*.tmp"])("anything/at/all.pdf")


# "[z-a]" failed as an internal error (a regex error); the rest compiled to nothing and silently
# matched nothing: a comment, the root alone, an unclosed class
@pytest.mark.parametrize("bad", ["  ", "!", "a\\", "[z-a].md", "# drafts", "/", "[abc"])
def test_bad_patterns_are_config_errors_naming_the_key(bad: str) -> None:
    from connectors.config import config_from_dict

    with pytest.raises(ConfigError, match=r"sources\.0\.exclude"):
        config_from_dict({"sources": [{"name": "d", "root": "/tmp", "exclude": [bad]}]})
    with pytest.raises(ConfigError, match=r"sources\.0\.include"):
        config_from_dict({"sources": [{"name": "d", "root": "/tmp", "include": [bad]}]})


def test_local_source_lists_through_the_filter(tmp_path: Path) -> None:
    for rel in ("a.md", "keep.md", "sub/keep.md", "sub/b.md", "c.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    src = LocalFolderSource(SourceConfig(name="d", root=str(tmp_path), exclude=["*.md", "!keep.md"]))
    assert sorted(e.external_id for e in src.list()) == ["c.txt", "keep.md", "sub/keep.md"]
