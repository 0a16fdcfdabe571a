"""What documentation sites are written in: Sphinx's reST and MkDocs' Markdown extensions.

Found by measuring Bindery on Sphinx's own reST sources and on Python-Markdown's and
pymdown-extensions' MkDocs pages (a helper pass over corpora it had never seen): Sphinx's roles
reference vanished, directives under a definition were prose, admonition bodies were code, and
markers, fences and attribute lists were indexed as words."""

from __future__ import annotations

from assets.parsing import parse_document
from connectors.documents import Block


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
