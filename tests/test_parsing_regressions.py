"""Regressions found on real documents, each reproduced with a generated fixture."""

from __future__ import annotations

from assets.parsing import parse_document
from connectors.config import ParseConfig

SPHINX_PAGE = """<html><body><div class="related" role="navigation">prev | next</div>
<div class="document"><div class="body" role="main">
<section id="faq"><h1>Design FAQ<a class="headerlink" href="#faq" title="Permalink">¶</a></h1>
<section id="q1"><h2><a class="toc-backref" href="#id3" role="doc-backlink">Why is the sky blue?</a>\
<a class="headerlink" href="#q1" title="Permalink">¶</a></h2>
<p>Rayleigh scattering favours short wavelengths, so the scattered daylight looks blue.</p></section>
</section></div></div><div class="sphinxsidebar">Table of contents</div></body></html>"""


def test_sphinx_headings_wrapped_in_toc_backref_links_survive() -> None:
    r = parse_document(SPHINX_PAGE.encode(), "faq.html", ParseConfig())
    heads = [(b.level, b.text) for b in r.blocks if b.kind == "heading"]
    assert heads == [(1, "Design FAQ"), (2, "Why is the sky blue?")]
    text = " ".join(b.text for b in r.blocks)
    assert "¶" not in text and "Table of contents" not in text and "prev | next" not in text


def test_a_debian_changelog_is_text_not_markdown_titled_by_its_trailing_comment() -> None:
    """An operator pass: every changelog.Debian.gz was read as Markdown for the "# Older
    entries have been removed" line Debian appends, which became its title (ten files of a
    corpus shared it, and `evalset draft` asked it as a question)."""
    import gzip

    text = (
        "zstd (1.5.4+dfsg2-5) unstable; urgency=medium\n\n"
        "  * Fix the build with the new compiler.\n\n"
        " -- Jane Doe <jane@example.org>  Mon, 06 Mar 2023 10:00:00 +0100\n\n"
        "# Older entries have been removed from this changelog.\n"
        "# To read the complete changelog use `apt changelog zstd`.\n"
    )
    r = parse_document(gzip.compress(text.encode()), "changelog.Debian.gz", ParseConfig())
    assert r.format == "text" and r.title != "Older entries have been removed from this changelog."
    # an extensionless file of Markdown is still read as Markdown
    readme = parse_document(b"# Bindery\n\nBatch ingestion.\n\n## Install\n\nRun make.\n", "README", ParseConfig())
    assert readme.format == "markdown" and readme.title == "Bindery"
