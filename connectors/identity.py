"""Deterministic identities shared by every store: hashes, stage versions, chunk ids.

One place defines them so the document store, Qdrant and tantivy can never disagree about
what a chunk is called. Retries and re-runs recompute the same ids and overwrite; they never
duplicate.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

__all__ = ["STAGE_CODE_VERSIONS", "chunk_id", "content_hash", "doc_id", "point_id", "short_hash", "stage_version",
           "text_hash"]

# The one home of stage code versions. Bump a stage's code version when its code changes what
# it outputs: every cached output of that stage (and only that stage and what depends on it) is
# then recomputed. parse/chunk/context feed `stage_version`; embed feeds
# `connectors.embedder.embedder_id` (which leaves it out while it is "1", so ids recorded before
# it existed stay valid).
# chunk 3: side text (quoted history, signatures, list footers) left out of chunks; a short
# document kept whole; token counts stored.
# chunk 4: chunks grouped into units (small-to-big): `parent_id`, `unit_text`.
# chunk 5: a small section merges into its nearer relative in the heading tree (a function's
# "Returns" into its own function, not the next one, whose chunk lost its name from its path).
# chunk 6: a document's first heading that repeats its title roots the heading path at any level
# (a note opening with "## Setup" read "Setup > Setup"); of 1,721 dev-corpus files, 10 of Git's
# AsciiDoc fragments chunk otherwise (found by a new-user review).
# chunk 7: a chunk of several sections shows the headings of their paths below its own path (a
# release heading over a small merged section was in neither its text nor its path); of 4,573
# dev-corpus files 63 chunk otherwise (glib 16, git 20, DocBook 8, man 7, Sphinx 7, 5 others 1).
# context 2: the offline summary sentence comes from the document's own running text (no
# headings, no quoted history or other side text).
# parse 19: AsciiDoc `include::` is followed (`assets/includes.py`: a page's content hash covers
# the files it includes, so an edit of one re-parses the pages including it; only files every
# reader of the page may read); AsciiDoc table cells spanning columns or rows (`2+|`, `.2+|`, `3*|`) keep every later
# cell in its column (they shifted the rest of the table), a nested `!===` table reads as its
# cells' text, quotes keep their attribution, attribute values wrapped with ` \` are joined. Git's
# 247 AsciiDoc files parse as under 18 (they use none of these). A block fence is never a section
# title (`****` over `====` was one), a `[verse]` block keeps its line breaks. Text of scripts
# written without spaces (Chinese, Japanese, Thai) counts as words for the quality check: every
# such page was refused as low quality and never indexed.
# parse 18: AsciiDoc has a reader of its own (`.adoc`, and `.txt` files the sniffer knows for
# AsciiDoc source: Git's manual pages): sections, description lists, fences, tables and inline
# markup are read, comments and directives dropped; other .txt files parse as before.
# parse 17: a DocBook FAQ (a qandaset as DocBook XSL renders it in HTML, and `qandaentry` in
# DocBook XML) gives each question a heading over its answer, and its question list at the top is
# dropped; an HTML table holding a heading lays out a page (gtk-doc's page title) and is read as
# content. Of 8,669 real files (the 3,764 of the dev corpora and 4,905 under this machine's
# /usr/share/doc) only 45 such pages parse otherwise: 44 of docbook_faq and Valgrind's FAQ. A
# document without pages is no longer refused for repeated lines (running headers are a PDF's):
# 12 mail_ham messages (SpamAssassin's histogram reports) and four GLib API pages were dead letters.
# GNU info manuals have a reader of their own (they were plain text: node lines, menus and index
# nodes indexed, option terms taken for ALL-CAPS headings).
# parse 16: an e-mail forwarded ~150 levels deep is read, its forward listed as too deep (the
# stdlib ran out of stack writing it back out: a dead letter), one nested past the parser's depth
# is refused as corrupt (an mbox skips that message alone); Markdown whose link reference
# definitions would make the parser re-read more than 20 M lines is read as plain text; a run of k
# emphasis marks counts as the k/2 levels it opens (100,000 stars crashed the process); front
# matter that expands past 10,000 values (YAML aliases) or nests past the YAML parser is skipped
# with a warning. The 3,612 files of the dev corpora (benchmarks/corpora/fetch.sh) parse as under
# 15, and 1,578 more real Markdown, reST, text and HTML files of this machine as before.
# parse 15: text that is UTF-8 but for a few stray bytes is read as UTF-8 with those replaced (one
# Latin-1 byte sent 300 KB of Russian to cp1252 mojibake); an RTF hyperlink reads as its text
# alone (striprtf's pattern that appended the target backtracked for minutes on a few KB); a .docx
# cell merged down where no cell starts above it is read (python-docx raised); an HTML element of
# more than 200 elements is never a navigation line; a .docx cell keeps the text of a table nested
# in it (it was lost); a Markdown table padded far past what it holds is read as plain text. The
# 4,529 dev-corpus files parse as under 14.
# parse 14: HTML nested past 256 levels is read whole (libxml2's huge_tree; it stopped there and
# dropped the rest of the page unannounced), past 2,048 a dead letter; Markdown nested past 100
# levels is read as plain text (a line of 50,000 `>` crashed the Rust parser). Real pages parse as
# before: 910 HTML and Markdown files of the dev corpora gave identical blocks under 13 and 14.
# parse 13: a legacy single-byte text whose code page the detector cannot tell from cp1252 is read
# as cp1252 (French was read as cp1250: "foręt"); two PDF columns that a few regions bridge (a
# centred author block, a code line running into the gutter) are read as columns.
# parse 12: an HTML page's heading block beside its content root is kept (asciidoc's div#header:
# the <h1> and the manual page's NAME line).
# parse 8: more attribution forms ("X wrote:", "X posted:"), initials quoting ("E> ..."), labelled
# rule lines and Yahoo!/SourceForge list boilerplate as footers.
# parse 7: e-mail signatures and list footers become one block marked {"side": "footer"}.
# parse 20: a parse no longer holds a title made from its file's name (a document without a title
# of its own is named by `document_title` per document): a parse is shared by every file with the
# same bytes, and a private file's name titled a public copy of its text, searchable by its words
# (found by an adversarial review). Blocks and metadata were already independent of the name (429
# files of the dev corpora and /usr/share/doc, parsed under two names each). A tbl table of a
# manual page has a header row only where its first row is one (16 of the 28 tables of the
# man_pages corpus are lists: their first row is now a row).
# parse 21: a page of another format named .eml/.mbox (HTML saved as mail) is parsed as what it is,
# not as plain text with its tags; a file named .gz/.bz2/.xz whose bytes are not compressed is
# judged by the name under the suffix (ls.1.gz stored plain is a manual page). No file of the dev
# corpora parses otherwise; the bump re-parses and re-cuts every document at the next reindex
# (embeddings are kept: they are keyed by the text).
# parse 22: a message whose envelope "From " line sits under lines a mail client prepended (MH's
# "Replied:"/"Forwarded:" annotations) is read as e-mail, not as plain text with its headers in
# every chunk: 18 of mail_ham's 2,403 files, which had lost their subject and thread links. No
# other of 9,947 dev-corpus and /usr/share/doc files is sniffed otherwise.
# parse 23: a Debian changelog (changelog.Debian.gz: "package (version) dist; urgency=" first) is
# plain text, not Markdown titled by the "# Older entries have been removed" comment Debian
# appends (548 of this machine's; no dev-corpus file is read otherwise).
# parse 24: documentation sites' markup. reST: Sphinx's rst-domain entries (`rst:role:: ref`, read
# as docutils' `role` and dropped with their text: the whole roles reference), `confval` and
# `event` head their text as signatures; indented text (a definition's body, a block quote) is
# read as markup, so its directives are directives, not prose ("New in version 5.3", not "..
# versionadded:: 5.3"), and a definition list's term is marked {"term": True}. Markdown:
# Python-Markdown meta-data without a fence, admonitions, content tabs, pymdownx blocks,
# attribute lists and inline-highlight prefixes (`markdown_ext`). Measured on 92 reST sources of
# Sphinx's own documentation and 82 MkDocs pages; of 600 other reST files of this machine, 11
# with definition lists or indented directives parse otherwise, and none of 700 other Markdown
# files (nor the dev corpora's). Markup with an element of more than 512 attributes is refused
# (`assets.parsing.markup`).
# parse 25: Markdown reference links whose definition is elsewhere (a shared snippet) read as
# their label, not "[Critic Markup][critic-markup]"; pymdownx snippet lines (`--8<-- "file"`) are
# not text. None of 700 other Markdown files of this machine parses otherwise.
# parse 26: HTML generators (a pass over Doxygen, Javadoc and rustdoc references): an id that is
# the slug of a heading is no chrome marker (Git's manual lost "SKIP-WORKTREE BIT", "Bisect skip"
# and "Capability Advertisement" as "skip" and "ad" links; rustdoc a "Related macros" section);
# a heading's <br> parts its words; rustdoc's source links, Run buttons and toggles and every
# "Read more"/"More..." link are chrome; a redirect to a page of the same name in another folder
# is a redirect; a Doxygen page is read as its title, sections, members and code
# (`assets.parsing.doxygen`); a list item holding headings is a section (Javadoc's member lists
# lost 3,274 of 3,575 headings); C++ and Rust names count as words for the quality gate (12 % of a
# Doxygen reference was refused; PDF glyph codes and separator junk still are). Markdown whose
# inline `<?`/`<!X` openers would make the Rust parser scan more than 20 M characters is read as
# plain text; a reference link reads as its label only where its ref names the label's words; a
# reST list item's "::" example is code. Of the dev corpora only four pages of
# git_commands parse otherwise (their recovered headings), and two of 600 /usr/share/doc pages.
# parse 27: plain-text documents (a pass over FAQs, READMEs, NEWS files and Vim help of Debian's
# packages): a numbered question, a "Q:" of a Q/A FAQ and a run of one-line questions head their
# answers; a contents list makes no headings; the title is the document's opening (a banner, a
# title paragraph, `#+TITLE:`), never a heading far in; Emacs outline files' star lines are
# headings; Vim help reads its sections, examples and tags (`assets.parsing.vimhelp`); tabs are 8
# columns; a "---" under a longer line or a "Key: value" line underlines nothing (git patches'
# sign-off was a heading); a lone "# ls" line makes no Markdown and a `.txt` in reST is reST.
# Of the dev corpora 126 e-mails and 6 AsciiDoc fragments change in whitespace only (tabs) and
# two e-mails read as plain text lose their signature as a title; of 1,113 plain-text files of
# /usr/share/doc, 163 parse otherwise.
# parse 28: PDFs (a pass over 52 unseen PDFs: ReportLab, Prawn, FOP, LibreOffice, beamer, LaTeX
# package manuals): the outline (bookmarks) gives the headings their levels, and a font-size
# heading no entry names nests under the entry it follows (a word of a demo drawing, "SPUMONI",
# headed 483 of the ReportLab guide's 671 chunks); a contents entry whose leader and page number
# precede its title is one line, and demoted; a bare page number alone at the top or bottom of a
# page is dropped (booktabs' landed mid-sentence). pdf_docs 0.985 · 0.874 -> 0.985 · 0.891.
# parse 29: plain text, from a dev set of it (text_docs): the paragraph under a question is its
# answer, never a heading; a numbered list inside an answer ("1." under "2.4.") asks nothing; in
# an outline file a heading the paragraph rules find is a top one; Vim help's runs of "~" lines
# are screen output, its closing "Copyright: … vim:…" line and its banner's second author line
# are no headings; reST's `:RFC:` role reads "RFC 2396" in any case.
# parse 30: HTML documentation themes (a pass over Sphinx rtd/pallets/pydata/alabaster/furo,
# MkDocs and RDoc sites): a hidden tab panel is content, a section's own <header> heads it,
# numpydoc's classifier reads "name : type"; viewcode's "[source]", pydata's previous/next
# footer, furo's "Back to top"/"View this page" and RDoc's "click to toggle source" are chrome.
# None of the dev corpora's 689 HTML pages parses otherwise.
# parse 31: slide decks (beamer): a fill covering the page, a box one cell of which holds the
# page's text, and 4-point "columns" of rounded corners are no tables; a table continues onto
# the next page only from near its foot; a line repeated at the same place at a page's side on
# half the pages (a sidebar) is running text; a slide's bold frame title at the top is a
# heading. A lecture deck went from 33 tables (5,765 words, its sidebar in every cell) to 37
# headings and 1,694 words. No dev-corpus PDF parses otherwise.
# parse 32: a review's mends. Plain text: a setext "===" shorter than its title underlines it
# again (only a patch's "---" under a trailer does not); outside a FAQ a numbered paragraph is a
# question only when it ends asking; a numbered subsection under a question heads its part; a
# contents entry's dot leader and page number do not hide the section it names. Vim help: a
# heading keeps its tags ("… (undo-commands)"), a rule under its title heads it, a rule over
# prose makes no heading. PDF: an outline entry anchored a page early is found on the next page;
# the box, full-page-table and sidebar rules apply to slide-shaped pages only (a book's closing
# braces and one-big-cell tables were lost).
# parse 33: a plain-text document opening with a run of entries of one markup (an AsciiDoc
# fragment's "`araxis`;; Use Araxis Merge" lines) has no title line among them. Of the dev
# corpora' 4,287 non-PDF files outside text_docs and mail_lkml, three now parse otherwise than
# under parse 26 beyond whitespace: two e-mails read as plain text (their signature is no title)
# and sphinx_rst's configuration page (":PEP:`604`" reads "PEP 604").
# parse 34: a dated line or one holding an e-mail address (a byline) is no plain-text title; one
# of 1,113 /usr/share/doc text files parses otherwise, none of text_docs.
# parse 35: scanned pages (a dev set of real PDFs rasterised, pdf_scanned): an OCR'd page's lines
# are cut at the page's gutters and into runs that stay in one column (MuPDF grouped the lines of
# both columns into one block, so every sentence ran into the other column's), a line of
# punctuation alone (dust) is dropped, and headings are read from what a scan still shows: the
# first page's largest line is the title, a short line opening with a section number ("2.1
# Template Styles") a heading of its number's depth (`assets.parsing.pdf_ocr`). Pages with a text
# layer parse as before (21 PDFs identical). A generated index (Sphinx's genindex and module index,
# Texinfo's @printindex, Javadoc's index-all) is marked `index_page`: kept, never chunked, like a
# redirect (flex's concept index, added to its corpus, took index-term questions' first place:
# MRR 0.804 -> 0.697); of 997 HTML pages of the dev corpora and /usr/share/doc only the eight
# Texinfo index nodes are. 36: a documentation build's own files (Sphinx's `_sources` copies,
# search indexes, theme assets: `assets.parsing.site_files`) are told by their path and never read
# or chunked, and their role is part of their parse key; the version moves so that copies chunked
# before leave the indexes (the Python FAQ's HTML build with its copies: MRR 0.769 -> 0.990).
# 37: Jupyter notebooks (.ipynb) are read cell by cell (`assets.parsing.notebook`: Markdown cells
# as Markdown, code cells as code, outputs as side text) instead of as the text of their JSON.
# 38: a PDF table striped in alternate rows (colortbl's \rowcolors: xcolor's own tables) is one
# table: its shading bands are joined by vertical lines for `find_tables` (`pdf_tables._band_lines`);
# each shaded row was a one-row table and the unshaded rows paragraphs (pdf_tables' table-row
# questions 0.857 · 0.312 -> 1.000 · 0.538). A table row with no text is dropped. Of 20 dev
# corpus PDFs only xcolor's parse changed. 39: a notebook's Markdown cell opening with "---" is
# read as the rule and text it shows, not as front matter (its lines were lost); every nbformat 3
# worksheet is read; a notebook without cells is an empty document (68 real notebooks unchanged).
# 40: striped tables side by side are two tables (their fills shared a row, or their bands
# interleaved, and both fell apart again); a page of more than 5,000 drawings (a plot's markers)
# is not searched for tables (find_tables took 9 s on 10,000 fills, 74 s on 20,000). Of 20 dev
# corpus PDFs only xcolor's \rowcolors demo changed (rows 3-13 one table, rows 9-10 in one row).
# 41: image files (PNG, JPEG, TIFF, GIF) are read as scanned pages through OCR
# (`assets.parsing.image`); they were `unsupported-format` dead letters. No dev corpus holds one.
# 42: from hostile input: an animated GIF/PNG is its first frame (a 1,100-frame spinner was a
# too-large dead letter), an image over 32,767 pixels a side is OCR'd scaled to fit, a sideways
# phone photo upright, a PNG with a large XMP chunk read, a JPEG cut short says so, a JPEG named
# .pdf read as the image it is, NUL in text replaced (PostgreSQL refused it), a JSON integer of
# over 4,300 digits kept as digits, a page of one drawing holding over 20,000 cell edges not
# searched for tables. The 455 files of the PDF, notebook, site and text dev corpora parse as before.
# 43: plain text (and e-mail bodies) keep a numbered item's number ("1. When slrn prompts": "the
# second way" points at it), and a numbered item wrapped under its own text is one item (slrn's
# "2. Edit ..." on three lines was a paragraph); 34 of 4,573 dev-corpus files parse otherwise
# (mail_ham 21, text_docs 8, info 4, mail_lkml 1).
# 44: a PDF line the font rules take for a heading that is the header row (or a row of tall
# symbols) of a table without rules, cells apart by wide gaps over or under rows in the same
# columns, is text (`pdf_table_rows.mark_table_rows`): it opened a section for the rows below it
# (unicode-math's 154 "USV L X S P D F Macro Description" headings; headings 235 -> 68, SIunits
# 83 -> 73, 5 in the R manuals; 6 of the 20 PDFs of pdf_docs and pdf_tables parse otherwise).
# pdf_tables 0.990 · 0.852 -> 0.990 · 0.856, pdf_docs 0.985 · 0.892 unchanged.
# 45: the table-row rule of 44 knows more section numbers (old-style digits a font left in the
# private-use area or as U+FFFD, "第一章", "附录A", "Part I", "3.ii", a line number before the
# number, the number last in right-to-left script), a letter-spaced title ("摘 要"), and a
# running header in the page's top band is no row of a table under it: 74 of 100 section
# headings it lost in 726 TeX Live manuals are headings again; a contents entry with its number
# and page number set apart is a row of the contents' table, not a heading.
# 46: text that is UTF-8 but for a stray byte or two stays UTF-8 where it has twice as many valid
# accented letters as bad bytes (it needed twenty: a short French note with one Latin-1 "£" was
# read as Mac Roman); no file of the dev corpora decodes otherwise. An SVG drawing without an XML
# declaration (its root, a comment or a doctype first) is XML, read for its words, not text.
# 47: a doctype's internal subset (`<!DOCTYPE html [ ... ]>`) left "]>" as an HTML page's (an EPUB
# chapter's) first words; no dev-corpus file has one.
# 48: "On <date>, X mentioned:" (mused, said, say, write, typed, posted) is an attribution line,
# quoted history, where the line holds a digit: it opened 15 of 2,631 dev-corpus messages' own
# words (and an `evalset draft` reply question); "On the other hand, I'd say:" stays.
# 49: PDFs: a run of close lines in a heading font past 40 words, or past 20 with a word
# hyphenated across two of its lines, is a paragraph (a journal class's bold abstract was six
# headings).
# 50: PDFs: a paper's title block (authors, affiliations, dates between its title and an abstract
# heading on page 1) is text, not headings; a heading-font run that ends in a word hyphenated into
# the body line under it is that paragraph's first line. 33 of 810 TeX Live template and guide
# PDFs (first three pages) and 4 of the 20 dev PDFs change; no real heading lost. Not where prose
# stands between the title and the abstract (a memo's sections, its summary last).
STAGE_CODE_VERSIONS = {"parse": "51", "chunk": "8", "context": "2", "embed": "1"}


def short_hash(obj: Any, n: int = 10) -> str:
    data = obj if isinstance(obj, bytes) else json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()[:n]


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def stage_version(stage: str, config: dict[str, Any]) -> str:
    """`short_hash(stage config + stage code version)`, e.g. `chunk-3fa9c1d2e0`."""
    return f"{stage}-{short_hash({'config': config, 'code': STAGE_CODE_VERSIONS[stage]})}"


def doc_id(source: str, external_id: str) -> str:
    return short_hash(f"{source}\x00{external_id}", 24)


def chunk_id(doc: str, chunk_version: str, ordinal: int) -> str:
    return short_hash(f"{doc}\x00{chunk_version}\x00{ordinal}", 32)


def point_id(chunk: str) -> str:
    """Qdrant needs a UUID or an integer; derive a UUID from the chunk id, reversibly stored."""
    return str(uuid.UUID(hex=chunk[:32].ljust(32, "0")))
