"""What documentation sites are written in: Sphinx's reST and MkDocs' Markdown extensions.

Found by measuring Bindery on Sphinx's own reST sources and on Python-Markdown's and
pymdown-extensions' MkDocs pages (a helper pass over corpora it had never seen): Sphinx's roles
reference vanished, directives under a definition were prose, admonition bodies were code, and
markers, fences and attribute lists were indexed as words."""

from __future__ import annotations

import pytest

from assets.parsing import parse_document
from connectors.documents import Block
from tests.timeouts import alarm


def _blocks(text: str, name: str) -> list[Block]:
    return parse_document(text.encode(), name).blocks


def _texts(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks)


# ---------------------------------------------------------------- reStructuredText (Sphinx)

SPHINX_DOMAINS = """Settings
========

.. confval:: modindex_common_prefix

   A list of prefixes that are ignored for sorting the Python module index.

.. rst:directive:: .. toctree::

   This directive inserts a "TOC tree" at the current location.

.. rst:role:: ref

   To support cross-referencing to arbitrary locations in any document.

.. event:: env-purge-doc (app, env, docname)

   Emitted when all traces of a source file should be cleaned from the environment.

.. role:: red
"""


def test_sphinx_object_descriptions_of_the_rst_domain_configuration_and_events_head_their_text() -> None:
    """`rst:role` was read as docutils' own `role` directive and dropped with its body (the
    whole roles reference); `confval` and `event` bodies were nameless paragraphs."""
    blocks = _blocks(SPHINX_DOMAINS, "settings.rst")
    heads = [b.text for b in blocks if b.kind == "heading" and b.meta.get("signature")]
    assert heads == ["modindex_common_prefix", "toctree", "ref", "env-purge-doc (app, env, docname)"]
    assert "cross-referencing to arbitrary locations" in _texts(blocks)
    assert "red" not in heads  # docutils' `.. role::` still defines markup, no text


DEFINITIONS = """Colours
=======

``TableRowColorEven``
    Sets the background color for even rows in tables.

    .. versionadded:: 5.3.0

    .. note::

       Only with the colorrows style.

    .. code-block:: python

       latex_elements = {'sphinxsetup': 'TableRowColorEven=red'}

``TableMergeColor``
    Sets the color of merged cells.
"""


def test_directives_under_a_definition_are_read_as_directives_not_prose() -> None:
    """Indented directives (under a definition list's term, in a block quote or a glossary)
    were prose (".. versionadded:: 5.3.0"), a note's body was code and a code block was text."""
    blocks = _blocks(DEFINITIONS, "colours.rst")
    text = _texts(blocks)
    assert ".." not in text and "versionadded" not in text
    assert "New in version 5.3.0." in text and "Note: Only with the colorrows style." in text
    code = [b for b in blocks if b.kind == "code"]
    assert [c.text for c in code] == ["latex_elements = {'sphinxsetup': 'TableRowColorEven=red'}"]
    assert [b.text for b in blocks if b.meta.get("term")] == ["TableRowColorEven", "TableMergeColor"]


# ---------------------------------------------------------------- Markdown (MkDocs, Python-Markdown)

MKDOCS_PAGE = """title: Attribute Lists Extension

[:octicons-file-code-24:][_attr]{: .source-link }

# Attribute Lists {#attr-lists}

!!! seealso "See Also"
    The attribute list syntax is also used by blocks.

!!! note

    This admonition body is indented prose, not code.

??? tip "Click me"
    Collapsible details body.

=== "Tab 1"

    Markdown **content** in a tab.

/// admonition | Careful
    type: warning

Words inside a block.
///

/// html | div.result
Rendered example.
///

```text
!!! note
    inside a fence: kept as written
```

Files go to node_metadata{.h, .cc}; `"{:.2f}".format(x)` and `#!py3 True` stay readable.
"""


def test_mkdocs_extensions_are_read_as_what_they_render() -> None:
    blocks = _blocks(MKDOCS_PAGE, "attr_list.md")
    text = _texts(blocks)
    result = parse_document(MKDOCS_PAGE.encode(), "attr_list.md")
    assert result.title == "Attribute Lists Extension"  # meta-data without a fence
    assert "title:" not in text and "octicons" not in text and "source-link" not in text
    assert [b.text for b in blocks if b.kind == "heading"] == ["Attribute Lists"]
    paragraphs = [b.text for b in blocks if b.kind == "paragraph"]
    for said in ("See Also: The attribute list syntax is also used by blocks.",
                 "Note: This admonition body is indented prose, not code.",
                 "Click me: Collapsible details body.", "Tab 1: Markdown content in a tab.",
                 "Careful: Words inside a block.", "Rendered example."):
        assert said in paragraphs
    assert "!!!" not in "\n".join(paragraphs) and "///" not in text and "type: warning" not in text
    assert [b.text for b in blocks if b.kind == "code"] == ["!!! note\n    inside a fence: kept as written"]
    assert "node_metadata{.h, .cc}" in text and '"{:.2f}".format(x)' in text and "#!py3" not in text


def test_a_page_opening_with_a_plain_sentence_keeps_it_as_text() -> None:
    """Meta-data is a run of `key: value` lines; one line counts only under a key such pages
    use, so a page that opens "Warning: ..." keeps its warning."""
    blocks = _blocks("Warning: this project is no longer maintained.\n\n# Tool\n\nWords.\n", "README.md")
    assert blocks[0].text == "Warning: this project is no longer maintained."
    two = parse_document(b"Title: Tool\nAuthor: Jane\n\n# Tool\n\nWords.\n", "tool.md")
    assert two.title == "Tool" and "Jane" not in _texts(two.blocks)


def test_a_reference_link_defined_elsewhere_reads_as_its_label_and_code_stays_code() -> None:
    """MkDocs pages keep their link definitions in a shared snippet (`--8<-- "links.md"`): the
    links stayed "[Critic Markup][critic-markup]", and every chunk's summary carried the slug."""
    page = ("# Critic\n\n--8<-- \"links.md\"\n\nSee [Critic Markup][critic-markup] for [details][].\n\n"
            "Buffers have the format `[len][name][len][name]`; index `matrix[i][j]` or `a[1][2]`.\n")
    text = _texts(_blocks(page, "critic.md"))
    assert "See Critic Markup for details." in text and "8<" not in text and "links.md" not in text
    assert "[len][name][len][name]" in text and "matrix[i][j]" in text and "a[1][2]" in text


def test_a_literal_example_after_a_list_items_double_colon_is_code_not_a_directive() -> None:
    """A review: read as markup, an example of a directive in a list item ("for example::") was
    taken for the directive and dropped with its text (Sphinx's autosummary page lost three)."""
    page = ("Title\n=====\n\n* Use the option, for example::\n\n      .. autosummary::\n"
            "         :toctree: DIRNAME\n\n         sphinx.environment.BuildEnvironment\n\n"
            "  The option also signals things.\n")
    blocks = _blocks(page, "autosummary.rst")
    assert [b.text for b in blocks if b.kind == "list_item"] == ["Use the option, for example:"]
    assert [b.text for b in blocks if b.kind == "code"] == [
        ".. autosummary::\n   :toctree: DIRNAME\n\n   sphinx.environment.BuildEnvironment"]
    assert "The option also signals things." in _texts(blocks)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("line", [
    "x ][ [" + "a" * 200_000,  # an unresolved reference link's label, never closed
    "a: b {" + " " * 200_000 + "x",  # an attribute list's blanks
    "a: " + "".join("`" * k + "x" for k in range(1, 630)),  # code spans of ever longer fences
    "p: " + "<?/" * 70_000,  # HTML processing instructions the Rust parser scans to the end for
])
def test_hostile_markdown_lines_parse_in_linear_time(line: str) -> None:
    """A review timed 80 KB of the first three at 40-50 s (the regexes of the extensions and of
    unresolved links backtracked quadratically); the last is the Rust parser's own (80 KB took
    1.8 s in one native call), now read as plain text past 500 openers."""
    with alarm(20):
        assert parse_document(line.encode(), "hostile.md").blocks


def test_api_reference_names_count_as_words_for_the_quality_gate() -> None:
    """33 of 277 pages of a real Doxygen reference were refused as garbled ("word-like token share
    < 0.4"): template classes and member lists are mostly C++ names."""
    from quality.metrics import word_share

    members = ("sigc::signal6< T_return, T_arg1, T_arg2 > emit(type_trait_take_t< T_arg1 > _A_a1) const "
               "std::vector<int> &mut impl<T> owner.contact.email ") * 5
    assert word_share(members) > 0.9
    assert word_share("x7f3_q9z l_1_i Ã©Ã¨ &&") == 0.0  # junk stays junk


# ---------------------------------------------------------------- HTML generators

def _html(body: str, generator: str = "") -> bytes:
    meta = f'<meta name="generator" content="{generator}"/>' if generator else ""
    return f"<!DOCTYPE html><html><head>{meta}<title>p: X</title></head><body>{body}</body></html>".encode()


def test_a_heading_or_section_named_after_its_words_is_not_chrome() -> None:
    """rustdoc's `<h2 id="related-macros">`, a `<section id="related-work">` and asciidoc's
    `_skip_worktree_bit` were dropped as "related" and "skip" links (Git's manual lost three
    section headings); a `<br>` in a heading glued its words."""
    page = _html('<main><h1>Module fmt</h1><p>Utilities for formatting and printing strings of text.</p>'
                 '<h2 id="related-macros">Related macros</h2><p>A family of macros.</p>'
                 '<section id="related-work"><h2>Related work</h2><p>What others did.</p></section>'
                 '<div class="sect2"><h3 id="_skip_worktree_bit">Skip-worktree bit</h3><p>One bit.</p></div>'
                 '<h2>Uses of Class<br>org.example.FileUtils</h2><p>None.</p>'
                 '<div id="related">Related: a b c</div></main>')
    blocks = parse_document(page, "fmt.html").blocks
    assert [b.text for b in blocks if b.kind == "heading"] == [
        "Module fmt", "Related macros", "Related work", "Skip-worktree bit", "Uses of Class org.example.FileUtils"]
    assert "What others did." in _texts(blocks) and "Related: a b c" not in _texts(blocks)


def test_rustdoc_buttons_and_read_more_links_are_chrome_and_its_methods_are_not() -> None:
    page = _html('<main><section id="main-content"><h1>Struct String</h1><span class="out-of-band">'
                 '<span class="since">1.0.0</span> · <a class="srclink" href="#">source</a></span>'
                 '<details><summary class="hideme"><span>Expand description</span></summary>'
                 '<p>A UTF-8 encoded, growable string, long enough to be read as content.</p>'
                 '<a class="test-arrow" href="#">Run</a></details>'
                 '<section id="method.new" class="method has-srclink"><h4>pub const fn new() -> String</h4></section>'
                 '<p>Creates a new empty String. <a href="#">Read more</a></p></section></main>')
    text = _texts(parse_document(page, "struct.String.html").blocks)
    assert "pub const fn new() -> String" in text and "Creates a new empty String." in text
    for chrome in ("source", "Expand description", "Run", "Read more", "1.0.0"):
        assert chrome not in text.split("\n"), chrome
    assert "Read more" not in text


def test_a_redirect_to_a_page_of_the_same_name_in_another_folder_is_a_redirect() -> None:
    """rustdoc's re-export stubs point to a file of the same name elsewhere; only the file name was
    compared, so 38 of 41 were indexed as pages refreshing themselves."""
    stub = (b'<html><head><meta http-equiv="refresh" content="0;URL=../../../alloc/ffi/struct.CString.html">'
            b'<title>Redirection</title></head><body><p>Redirecting...</p></body></html>')
    moved = parse_document(stub, "alloc/ffi/c_str/struct.CString.html")
    assert moved.metadata["redirect"] == "../../../alloc/ffi/struct.CString.html"
    itself = stub.replace(b"../../../alloc/ffi/struct.CString.html", b"struct.CString.html#top")
    assert "redirect" not in parse_document(itself, "alloc/ffi/c_str/struct.CString.html").metadata


def test_a_doxygen_page_reads_as_title_sections_members_and_code() -> None:
    body = ('<div id="titlearea">libfoo 1.0</div><div class="header"><div class="summary"><a href="#a">Public '
            'Member Functions</a> | <a href="m.html">List of all members</a></div><div class="headertitle">'
            '<div class="title">foo::Bar Class Reference<div class="ingroups"><a>Signals</a></div></div></div></div>'
            '<div class="contents"><div class="dynheader">Inheritance diagram for foo::Bar:</div>'
            '<table class="memberdecls"><tr class="heading"><td colspan="2"><h2 class="groupheader">Public Member '
            'Functions</h2></td></tr><tr><td class="memItemLeft">iterator&#160;</td><td class="memItemRight">'
            '<a class="el" href="#a1">connect</a> (const slot_type &amp;slot_)</td></tr><tr><td class="mdescLeft">'
            '&#160;</td><td class="mdescRight">Add a slot to the list of slots.  <a href="#a1">More...</a></td></tr>'
            '</table><div class="textblock"><p>Bar frobs widgets for every caller that asks.</p>'
            '<div class="fragment"><div class="line">Bar b;</div><div class="line">b.connect(slot);</div>'
            '<div class="ttc" id="t1"><div class="ttdef"><b>Definition:</b> bar.h:12</div></div></div></div>'
            '<h2 class="groupheader">Member Function Documentation</h2><h2 class="memtitle"><span class="permalink">'
            '<a href="#a1">&#9670;&#160;</a></span>connect() <span class="overload">[1/2]</span></h2>'
            '<div class="memitem"><div class="memproto"><table class="memname"><tr><td class="memname">iterator '
            'foo::Bar::connect </td><td>(</td><td class="paramtype">const slot_type &amp;&#160;</td><td '
            'class="paramname"><em>slot_</em></td><td>)</td><td><span class="mlabels"><span class="mlabel">inline'
            '</span><span class="mlabel">explicit</span></span></td></tr></table></div><div class="memdoc"><p>Add '
            'a slot to the list of slots.</p></div></div></div>')
    result = parse_document(_html(body, "Doxygen 1.9.4"), "classfoo_1_1Bar.html")
    got = [(b.kind, b.level, b.text) for b in result.blocks]
    assert result.title == "foo::Bar Class Reference"
    assert got == [
        ("heading", 1, "foo::Bar Class Reference"),
        ("heading", 2, "Public Member Functions"),
        ("paragraph", 0, "iterator connect (const slot_type &slot_)"),
        ("paragraph", 0, "Add a slot to the list of slots."),
        ("paragraph", 0, "Bar frobs widgets for every caller that asks."),
        ("code", 0, "Bar b;\nb.connect(slot);"),
        ("heading", 2, "Member Function Documentation"),
        ("heading", 3, "connect()"),
        ("code", 0, "iterator foo::Bar::connect (const slot_type & slot_) inline explicit"),
        ("paragraph", 0, "Add a slot to the list of slots."),
    ]
    generic = parse_document(_html(body), "page.html")  # another generator's page: read as before
    assert any("libfoo 1.0" in b.text for b in generic.blocks)


def test_a_javadoc_class_page_keeps_its_member_headings() -> None:
    """Javadoc lays a class out as nested `ul.blockList` items, each member under its <h4>: read
    as list items, 3,274 of 3,575 headings of a real reference were lost and each member's name
    was glued to its description; the words around a nested list were glued too."""
    page = _html('<main role="main"><div class="header"><h2 class="title">Class FileUtils</h2></div>'
                 '<div class="description"><ul class="blockList"><li class="blockList"><pre>public class FileUtils'
                 '</pre><div class="block">General file utilities. Areas:<ul><li>writing to a file</li></ul>Note '
                 'that a charset should be given.</div></li></ul></div><div class="details"><ul class="blockList">'
                 '<li class="blockList"><h3>Method Detail</h3><ul class="blockList"><li class="blockList">'
                 '<h4>checksumCRC32</h4><pre class="methodSignature">public static long checksumCRC32(File file)'
                 '</pre><div class="block">Computes the checksum of a file using the CRC32 routine.</div></li></ul>'
                 '</li></ul></div></main>')
    blocks = parse_document(page, "FileUtils.html").blocks
    assert [(b.level, b.text) for b in blocks if b.kind == "heading"] == [
        (2, "Class FileUtils"), (3, "Method Detail"), (4, "checksumCRC32")]
    assert "Computes the checksum of a file using the CRC32 routine." in [b.text for b in blocks]
    assert any(b.text.startswith("General file utilities. Areas: Note that") for b in blocks)


def test_a_doxygen_page_with_nothing_but_its_title_is_that_title() -> None:
    """A class or directory Doxygen documents by name only: its (empty) contents and its title,
    which is what the page says (a dead letter as "empty" otherwise; 11 of libsigc++'s 277)."""
    body = ('<div class="header"><div class="headertitle"><div class="title">T_bound Class Reference</div></div>'
            '</div><div class="contents">\n</div>')
    got = parse_document(_html(body, "Doxygen 1.9.4"), "classT__bound.html").blocks
    assert [(b.kind, b.level, b.text) for b in got] == [("heading", 1, "T_bound Class Reference")]


# ---------------------------------------------------------------- a review of the above (real regressions)

def test_a_labelled_doxygen_member_is_read_once_with_its_template_line() -> None:
    """A labelled member nests its signature's table in a cell beside the labels: read cell by
    cell, every part came twice (4,938 members of four real references), and the `template<...>`
    line outside the table was lost (2,354)."""
    body = ('<div class="contents"><h2 class="memtitle">get()</h2><div class="memitem"><div class="memproto">'
            '<div class="memtemplate">template&lt;typename T &gt; </div><table class="mlabels"><tr>'
            '<td class="mlabels-left"><table class="memname"><tr><td class="memname">const T &amp; Box&lt; T &gt;::get'
            ' </td><td>(</td><td class="paramtype">int&#160;</td><td class="paramname"><em>index</em></td><td>)</td>'
            '<td> const</td></tr></table></td><td class="mlabels-right"><span class="mlabels"><span class="mlabel">'
            'inline</span><span class="mlabel">virtual</span></span></td></tr></table></div></div></div>')
    code = [b.text for b in parse_document(_html(body, "Doxygen 1.9.4"), "classBox.html").blocks if b.kind == "code"]
    assert code == ["template<typename T > const T & Box< T >::get (int index) const inline virtual"]


def test_markdown_full_of_php_examples_in_code_is_still_markdown() -> None:
    """The guard against inline `<?` openers counted code too: a PHP cookbook of 259 `<?php`
    examples was read as plain text, its headings lost."""
    recipe = "## Recipe {n}\n\nOpen a tag `<?php` inline, then:\n\n```php\n<?php echo 'hi'; ?>\n<?xml ?>\n```\n\n"
    page = "# PHP cookbook\n\n" + "".join(recipe.format(n=n) for n in range(600))
    result = parse_document(page.encode(), "cookbook.md")
    assert not result.warnings and sum(b.kind == "heading" for b in result.blocks) == 601


@pytest.mark.timeout(60)
def test_nested_elements_with_chrome_ids_are_judged_in_linear_time() -> None:
    """A review: 2,000 nested `div#nav` round one long heading took 18.6 s (240 KB), each
    element searching its whole subtree for the heading its id might be the slug of."""
    page = "<html><body><main>" + "<div id='nav'>" * 2000 + "<h2>" + "nav " * 50_000 + "</h2><p>x</p>" \
        + "</div>" * 2000 + "<p>" + "Real words of the page. " * 20 + "</p></main></body></html>"
    with alarm(20):
        parse_document(page.encode(), "nested.html")


def test_the_quality_gate_still_refuses_glyph_codes_and_separator_junk() -> None:
    """A review: with names counted as words, a PDF's unmapped glyphs ("(cid:12)") and random
    pieces joined by separators passed the 0.4 gate; words of other scripts joined by a slash
    must stay words."""
    from quality.metrics import word_share

    assert word_share(" ".join(f"(cid:{n})" for n in range(300))) < 0.1
    assert word_share("x7q/zk3&ab k9@pp.q2 zz:1r/4k ab.x9/7f") < 0.4
    assert word_share("и/или Zürich/Genève naïve_bayes mañana.com I/O") == 1.0


def test_read_more_in_a_sentence_widgets_code_and_self_refresh_read_as_before() -> None:
    """A review's other cases: "read more" that is a sentence's words, a widget whose heading says
    its id's word and more, a log line and inline code that look like reference links, and a
    page refreshing itself by an absolute path."""
    prose = _html('<main><h1>Upgrade guide</h1><p>Before you upgrade, <a href="n.html">read more</a> about the '
                  'breaking changes.</p><div id="related"><h3>Related posts</h3><p>Other post</p></div>'
                  '<div id="newsletter"><h3>Newsletter</h3><p>Sign up</p></div></main>')
    text = _texts(parse_document(prose, "upgrade.html").blocks)
    assert "Before you upgrade, read more about the breaking changes." in text
    assert "Other post" not in text and "Sign up" not in text
    md = "# Logs\n\nWrite `[Google][google]` for a link.\n\n[WARN][auth] token expired.\n"
    text = _texts(parse_document(md.encode(), "logs.md").blocks)
    assert "[Google][google]" in text and "[WARN][auth] token expired." in text
    page = (b'<html><head><title>Status</title><meta http-equiv="refresh" content="1; url=/site/status.html">'
            b'</head><body><h1>Build status</h1><p>All 12 pipelines are green.</p></body></html>')
    assert "redirect" not in parse_document(page, "site/status.html").metadata
