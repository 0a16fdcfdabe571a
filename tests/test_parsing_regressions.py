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
