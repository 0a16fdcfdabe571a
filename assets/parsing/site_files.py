"""Files a documentation build writes beside its pages that are not pages.

Point a source at a built documentation site and it holds, beside the pages, what the
generator wrote for its own use: Sphinx's `_sources/` (a copy of every page's source, for the
"Show Source" link), its `searchindex.js` (every word of the site, one JavaScript line) and theme
assets under `_static/`; MkDocs' `search/search_index.json` (every page's text again) and
sitemaps; Javadoc's `*-search-index.js`; every generator's stylesheets and scripts (`.css`, `.js`:
Doxygen writes them beside its pages). Indexed, they answer every question twice: the Python
FAQ's HTML build with its `_sources` copies measured recall@10 1.000 but MRR@10 0.769 against
0.990 for the pages alone (`benchmarks.devsets_eval`, docs/retrieval.md), the reST copy first.

A site file is told by its path alone (`site_file_role`), so one file always gets the same
answer: it is listed, kept and counted (`site_files` in a sync's summary) but never parsed,
judged or chunked, like a redirect. Its role is part of its parse key (`parse_stage.file_format`),
so a page elsewhere holding the same bytes is still parsed and indexed.
"""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["site_file_role"]

# what a Sphinx theme puts under `_static/`: styles, scripts and the data they read (Python's
# glossary.json for tooltips, the OpenSearch descriptor), fonts, images. A download a project puts
# there (a PDF, a text file) is a document.
_ASSET_SUFFIXES = frozenset({
    ".css", ".js", ".mjs", ".map", ".json", ".xml", ".woff", ".woff2", ".ttf", ".eot", ".otf",
    ".svg", ".png", ".gif", ".jpg", ".jpeg", ".ico", ".webp",
})
# a page's styles and scripts, wherever a generator puts them (Doxygen beside its pages): no reader
# searches them, and indexed as text they answered for their class names (jQuery, 175 KB on one
# line, was a low-quality dead letter in every Doxygen tree)
_WEB_ASSET_SUFFIXES = frozenset({".css", ".js", ".mjs", ".cjs", ".map"})
_SEARCH_INDEXES = frozenset({"searchindex.js"})  # Sphinx's; MkDocs' and Javadoc's are matched below
_SITEMAPS = frozenset({"sitemap.xml"})  # sitemap.xml.gz too, as every compressed file
_COMPRESSED = frozenset({".gz", ".bz2", ".xz"})  # a single compressed file is read as the one inside


def site_file_role(path: str) -> str | None:
    """The role of a documentation build's own file at `path` (a source's external id):
    "source-copy", "search-index", "theme-asset", "inventory", "sitemap" or "web-asset" (a
    stylesheet or script anywhere); None for anything else, which is read as a document."""
    p = PurePosixPath(path)
    folders, name = p.parts[:-1], p.name
    if PurePosixPath(name).suffix.lower() in _COMPRESSED:  # jquery.js.gz is jquery.js
        # cut as text: `with_name` refuses the "." left of an object named "..gz" (an S3 key,
        # which no listing hides), and the ValueError failed the whole source's sync
        name = name[: -len(PurePosixPath(name).suffix)]
    lower = name.lower()
    suffix = PurePosixPath(name).suffix.lower()
    if "_sources" in folders and lower.endswith(".txt"):
        return "source-copy"  # page.rst.txt (Sphinx 1.5+), page.txt before
    if lower in _SEARCH_INDEXES or lower.endswith("-search-index.js") \
            or (lower == "search_index.json" and folders[-1:] == ("search",)):
        return "search-index"
    if lower == "objects.inv":  # Sphinx's intersphinx inventory: zlib-packed names
        return "inventory"
    if lower in _SITEMAPS:
        return "sitemap"
    if "_static" in folders and suffix in _ASSET_SUFFIXES:
        return "theme-asset"
    if suffix in _WEB_ASSET_SUFFIXES:
        return "web-asset"
    return None
