"""A documentation build's own files are told by their path (`assets.parsing.site_files`)."""

from __future__ import annotations

import pytest

from assets.parse_stage import file_format, is_navigation
from assets.parsing import parse_document
from assets.parsing.site_files import site_file_role


@pytest.mark.parametrize(("path", "role"), [
    ("html/_sources/faq/general.rst.txt", "source-copy"),
    ("_sources/index.txt", "source-copy"),  # Sphinx before 1.5
    ("html/_sources/guide.md.txt", "source-copy"),
    ("html/searchindex.js", "search-index"),
    ("site/search/search_index.json", "search-index"),
    ("api/member-search-index.js", "search-index"),
    ("html/objects.inv", "inventory"),
    ("site/sitemap.xml.gz", "sitemap"),
    ("html/_static/css/theme.css", "theme-asset"),
    ("html/_static/fonts/Lato.woff2", "theme-asset"),
    ("html/_static/glossary.json", "theme-asset"),
    ("api/html/jquery.js", "web-asset"),  # Doxygen's, beside its pages
    ("api/html/doxygen.css", "web-asset"),
    ("api/html/search/all_0.js", "web-asset"),
    ("html/_static/jquery.js.gz", "theme-asset"),  # compressed, as Debian ships some
    ("html/_sources/faq.rst.txt.gz", "source-copy"),
])
def test_a_builds_own_files_have_a_role(path: str, role: str) -> None:
    assert site_file_role(path) == role


@pytest.mark.parametrize("path", [
    "notes/general.rst.txt",  # a source of one's own, not a build's copy
    "html/_sources.txt",  # a file named so, not in the folder
    "html/_static/cheatsheet.pdf",  # a download put beside the theme: a document
    "html/_static/notes.txt",
    "search/index.json",
    "html/search_index.json",  # MkDocs' is in search/
    "html/faq/general.html",
    "src/app.json",
    "docs/notes.txt.gz",
    "notes/site.css.txt",
])
def test_pages_and_other_files_have_none(path: str) -> None:
    assert site_file_role(path) is None


def test_a_site_file_is_not_read_and_keyed_apart() -> None:
    data = b"Options\n=======\n\nThe outfile option names the output file.\n"
    copy = parse_document(data, "html/_sources/options.rst.txt")
    assert copy.blocks == [] and copy.metadata == {"site_file": "source-copy"} and is_navigation(copy)
    assert is_navigation(parse_document(b"\x00\x01 not even text", "html/objects.inv"))
    page = parse_document(data, "notes/options.rst.txt")
    assert page.blocks and not is_navigation(page)
    # the same bytes under both paths must not share a cached parse
    assert file_format("html/_sources/options.rst.txt") != file_format("notes/options.rst.txt") == "txt"


@pytest.mark.parametrize("path", ["notes/..gz", "..xz", "html/_static/..bz2"])
def test_a_name_that_is_only_a_compression_suffix_has_no_role(path: str) -> None:
    # an S3 key "notes/..gz" (no listing hides it) raised ValueError here, out of the parse
    # key (`file_format`), and failed the whole source's sync with no dead letter
    assert site_file_role(path) is None
    assert file_format(path) in ("gz", "xz", "bz2")
