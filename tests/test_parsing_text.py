"""Plain-text documents: FAQ entries, contents lists, titles, outline headings, Vim help, and the
sniffing that decides a text is plain at all. The shapes are those of real files (procmail's,
screen's, Midnight Commander's and the sed FAQ, GNU NEWS, Vim's help) that a pass over unseen
documentation found read wrong."""

from __future__ import annotations

from assets.parsing import parse_document
from assets.parsing.sniff import detect_format
from assets.parsing.text import text_blocks
from connectors.config.models import ParseConfig

CFG = ParseConfig()


def _heads(name: str, text: str) -> list[tuple[int, str]]:
    r = parse_document(text.encode(), name, CFG)
    return [(b.level, b.text) for b in r.blocks if b.kind == "heading"]


def _body_under(name: str, text: str, heading: str) -> list[str]:
    """The texts of the blocks between a heading and the next heading."""
    blocks = parse_document(text.encode(), name, CFG).blocks
    start = next(i for i, b in enumerate(blocks) if b.kind == "heading" and b.text == heading)
    out = []
    for b in blocks[start + 1:]:
        if b.kind == "heading":
            break
        out.append(b.text)
    return out


NUMBERED_FAQ = """\
------------------------------------------------------------------------------
---------------------- Frequently Asked Questions ----------------------------
------------------------------------------------------------------------------

1. How do I go about setting up a mailinglist or a mail-archive server?

\tLook in the SmartList directory, start reading the INTRO file.

2. I installed procmail (i.e. typed 'make install'), but how am I supposed to
   use it?  When I type procmail on the command line it simply does nothing.

\tThere exists an excellent newbie FAQ about mailfilters.

3. The compiler seems to issue warnings about "loop not entered at top",
   is that a problem?

\tNo, no problem at all, it just means I wrote the code.

4. The leading From_ line on all my arriving mail shows the wrong time.

\tThis is a known bug in sendmail-5.65c+IDA.

5. Is procmail Y2K safe?

\tYes.
"""


def test_numbered_questions_are_headings_over_their_answers() -> None:
    """A numbered question, wrapped or not, heads its answer; in a FAQ (three numbered questions)
    a numbered entry that states its problem, or asks and runs on, does too, and a dashed banner
    is the title without its dashes."""
    r = parse_document(NUMBERED_FAQ.encode(), "procmail-FAQ", CFG)
    heads = [(b.level, b.text) for b in r.blocks if b.kind == "heading"]
    assert heads == [
        (1, "Frequently Asked Questions"),
        (1, "1. How do I go about setting up a mailinglist or a mail-archive server?"),
        (1, "2. I installed procmail (i.e. typed 'make install'), but how am I supposed to use it? "
            "When I type procmail on the command line it simply does nothing."),
        (1, '3. The compiler seems to issue warnings about "loop not entered at top", is that a problem?'),
        (1, "4. The leading From_ line on all my arriving mail shows the wrong time."),
        (1, "5. Is procmail Y2K safe?"),
    ]
    assert r.title == "Frequently Asked Questions"
    assert _body_under("procmail-FAQ", NUMBERED_FAQ, heads[2][1]) == [
        "There exists an excellent newbie FAQ about mailfilters."]


def test_a_numbered_list_stays_a_list() -> None:
    text = "Steps\n\n1. Install the package.\n2. Run make.\n3. Start the daemon.\n\nThen it runs.\n"
    blocks = parse_document(text.encode(), "notes.txt", CFG).blocks
    assert [b.kind for b in blocks].count("list_item") == 3
    assert [b.text for b in blocks if b.kind == "heading"] == ["Steps"]
    assert [b.text for b in blocks if b.kind == "list_item"] == ["1. Install the package.", "2. Run make.",
                                                                  "3. Start the daemon."]


def test_an_item_wrapped_under_its_text_is_one_item_and_keeps_its_number() -> None:
    """slrn's FAQ: "There are two ways:" then "1. When slrn prompts ..." on two lines and "2. Edit
    the header ..." on three. The first became an item without its "1.", the second (its lines
    outnumbering its items) a paragraph with its "2.": the way it was answered named neither."""
    text = ("There are two ways:\n\n  1. When slrn prompts for a newsgroup, simply specify a\n"
            "     comma-separated list of newsgroups.\n\n  2. Edit the Newsgroups header line when\n"
            "     editing the message. Again, the list must be comma\n     separated with no whitespace.\n\n"
            "  - a bullet keeps no marker\n")
    blocks = parse_document(text.encode(), "faq.txt", CFG).blocks
    assert [(b.kind, b.text) for b in blocks] == [
        ("paragraph", "There are two ways:"),
        ("list_item", "1. When slrn prompts for a newsgroup, simply specify a comma-separated list of newsgroups."),
        ("list_item", "2. Edit the Newsgroups header line when editing the message. Again, the list must be comma "
                      "separated with no whitespace."),
        ("list_item", "a bullet keeps no marker"),
    ]


QA_FAQ = """\
   screen: frequently asked questions -- known problems -- unimplemented bugs
=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-

Q:   For some unknown reason, the  fifo  in  /tmp/screens/S-myname  is
     gone,  and  i  can't  resume my screen session. Is there a way to
     recreate the fifo?

A:   Screen checks the fifo/socket  whenever  it  receives  a  SIGCHLD
     signal.  If missing, the fifo/socket is recreated then.

Q:   Screen gets the terminal size wrong and messes up.
A:   Before you start screen: Check with 'stty -a' what the terminal
     driver thinks about rows and columns.
"""


def test_q_and_a_pairs_make_each_question_a_heading_over_its_answer() -> None:
    r = parse_document(QA_FAQ.encode(), "screen-FAQ", CFG)
    assert r.title == "screen: frequently asked questions -- known problems -- unimplemented bugs"
    q1 = ("For some unknown reason, the fifo in /tmp/screens/S-myname is gone, and i can't resume "
          "my screen session. Is there a way to recreate the fifo?")
    assert _heads("screen-FAQ", QA_FAQ)[1:] == [(3, q1), (3, "Screen gets the terminal size wrong and messes up.")]
    assert _body_under("screen-FAQ", QA_FAQ, q1) == [
        "Screen checks the fifo/socket whenever it receives a SIGCHLD signal. If missing, the "
        "fifo/socket is recreated then."]
    assert _body_under("screen-FAQ", QA_FAQ, "Screen gets the terminal size wrong and messes up.") == [
        "Before you start screen: Check with 'stty -a' what the terminal driver thinks about rows and columns."]


def test_an_email_body_is_not_read_as_a_faq() -> None:
    """Only a whole plain-text document is read for FAQ entries: an e-mail's "Q:" lines are its
    writer's words."""
    blocks = text_blocks("Q: did it work?\n\nA: yes.\n\nQ: and then?\n\nA: fine.\n")
    assert not [b for b in blocks if b.kind == "heading"]


CONTENTS_FAQ = """\
Archive-Name: editor-faq/sed
Version: 015

                            THE SED FAQ

                  Frequently Asked Questions about
                       sed, the stream editor

CONTENTS

1. GENERAL INFORMATION
1.1. Introduction - How this FAQ is organized
1.2. How do I add a question/answer to the sed FAQ?

2. BASIC SED
   SUBGROUP NAME
2.1. What is sed?

2.1.1. Free versions

------------------------------

1. GENERAL INFORMATION

1.1. Introduction - How this FAQ is organized

   This FAQ is organized to answer common (and some uncommon)
   questions about sed, quickly.

1.2. How do I add a question/answer to the sed FAQ?

   Word your question briefly and send it to the maintainer.

2. BASIC SED

2.1. What is sed?

   "sed" ("stream editor") is a Unix utility.

2.1.1. Free versions

   Many versions exist.
"""


def test_a_contents_list_does_not_make_headings_twice() -> None:
    heads = _heads("sedfaq.txt", CONTENTS_FAQ)
    assert heads == [
        (1, "THE SED FAQ"), (1, "CONTENTS"),
        (1, "1. GENERAL INFORMATION"), (2, "1.1. Introduction - How this FAQ is organized"),
        (2, "1.2. How do I add a question/answer to the sed FAQ?"),
        (1, "2. BASIC SED"), (2, "2.1. What is sed?"), (3, "2.1.1. Free versions"),
    ]
    assert parse_document(CONTENTS_FAQ.encode(), "sedfaq.txt", CFG).title == "THE SED FAQ"


def test_the_title_is_the_documents_opening_not_a_heading_far_in() -> None:
    opening = "GNU Midnight Commander\nFrequently Asked Questions\n\n   The newest version is online.\n\n"
    r = parse_document((opening + "1 Getting started\n\n1.1 What is it?\n\n   A file manager.\n").encode(),
                       "mc-FAQ", CFG)
    assert r.title == "GNU Midnight Commander Frequently Asked Questions"
    prose = " ".join(["This paragraph is long running text that comes before any heading."] * 8)
    r = parse_document(f"{prose}\n\nInstallation\n\nRun the installer and wait.\n".encode(), "notes.txt", CFG)
    assert r.title is None  # the file's name stands for it, not a heading a page in


def test_a_line_set_in_above_the_text_is_an_example_not_a_heading() -> None:
    text = ("2.1 How do I set my From: line?\n\n  Set it in your slrnrc. It will then read:\n\n"
            "          From: Your Real Name <username@your.host.name>\n\n"
            "  Note: your system administrator may have disabled this feature for everyone.\n")
    heads = _heads("slrn-FAQ.txt", text)
    assert heads == [(2, "2.1 How do I set my From: line?")]


GNU_NEWS = """\
GNU gzip NEWS                                    -*- outline -*-

* Noteworthy changes in release 1.12 (2022-04-07) [stable]

** Changes in behavior

  'gzip -l' no longer misreports file lengths 4 GiB and larger.

** Bug fixes

  'zgrep -f -' now works again.

* Noteworthy changes in release 1.11 (2021-09-03) [stable]

** Performance improvements

  zgrep is much faster now.

Major changes in 1.2.4

* Added support for Windows NT

* Handle ENAMETOOLONG for strict Posix systems
"""


def test_an_outline_files_star_lines_are_headings_and_its_bullets_stay_items() -> None:
    r = parse_document(GNU_NEWS.encode(), "NEWS", CFG)
    heads = [(b.level, b.text) for b in r.blocks if b.kind == "heading"]
    assert heads[:6] == [
        (1, "GNU gzip NEWS"),
        (1, "Noteworthy changes in release 1.12 (2022-04-07) [stable]"),
        (2, "Changes in behavior"), (2, "Bug fixes"),
        (1, "Noteworthy changes in release 1.11 (2021-09-03) [stable]"),
        (2, "Performance improvements"),
    ]
    assert r.title == "GNU gzip NEWS"
    assert "Added support for Windows NT" not in [t for _, t in heads]
    assert "-*-" not in " ".join(b.text for b in r.blocks)


def test_tabs_are_eight_columns() -> None:
    blocks = text_blocks("Intro text here.\n\n  a\tb\n  cc\tdd\n")
    assert blocks[-1].text == "  a     b\n  cc    dd"


VIM_HELP = """\
*undo.txt*      For Vim version 9.0.  Last change: 2022 Jun 02


\t\t  VIM REFERENCE MANUAL    by Bram Moolenaar


Undo and redo\t\t\t\t\t\t*undo-redo*

The basics are explained in section |02.5| of the user manual.

==============================================================================
1. Undo and redo commands\t\t\t\t*undo-commands*

<Undo>\t\tor\t\t\t\t\t*undo* *<Undo>* *u*
u\t\t\tUndo [count] changes.

\t\t\t\t\t\t\t*:u* *:un* *:undo*
:u[ndo]\t\t\tUndo one change.

CTRL-W K

Example: >
\t:set undolevels=1000
\t:echo changenr()
<
Back to the text after the example.

Examples\tVim way\t\tVi-compatible way ~

 vim:tw=78:ts=8:noet:ft=help:norl:
"""


def test_vim_help_sections_examples_and_tags() -> None:
    r = parse_document(VIM_HELP.encode(), "undo.txt", CFG)
    assert r.title == "Undo and redo"
    got = [(b.kind, b.level, b.text) for b in r.blocks]
    assert got[0] == ("heading", 1, "Undo and redo")
    assert ("heading", 1, "1. Undo and redo commands (undo-commands)") in got  # the tag: what people search
    assert ("code", 0, ":set undolevels=1000\n:echo changenr()") in got
    assert ("heading", 3, "Examples Vim way Vi-compatible way") in got
    assert ("paragraph", 0, "CTRL-W K") in got  # an example of a key, not an ALL-CAPS heading
    text = "\n".join(b.text for b in r.blocks)
    assert ":undo" in text and "*:undo*" not in text and "|02.5|" not in text and "02.5" in text
    assert "vim:tw" not in text and "Back to the text after the example." in text


def test_sniffing_plain_text_markdown_and_rest() -> None:
    faq = "XTerm FAQ\n\n" + "Some prose about terminals.\n\n" * 20 + "# ls -l /dev/ptmx\n\nMore prose.\n"
    assert detect_format(faq.encode(), "xterm.faq").format == "text"  # a root prompt, not a heading
    assert detect_format(b"# Project\n\nSome text.\n", "README").format == "markdown"
    rest = ("==============\n Docutils FAQ\n==============\n\n.. contents::\n\nWhat is it?\n"
            "-----------\n\nSee `the spec`_.\n\n.. _the spec: https://example.org/\n")
    assert detect_format(rest.encode(), "FAQ.txt").format == "rst"
    plain = "Notes\n=====\n\nA plain text file with an underlined title.\n"
    assert detect_format(plain.encode(), "notes.txt").format == "text"


def test_a_patch_separator_under_a_trailer_is_no_heading() -> None:
    """git's "---" between a patch's sign-off and its diffstat made "Signed-off-by: …" a heading
    over every patch of a series (an e-mail body, read by the paragraph rules)."""
    body = ("Remove unnecessary semicolons.\n\nSigned-off-by: Joe Perches <joe@perches.com>\n---\n"
            " sound/soc/codecs/wm8350.c |    2 +-\n 1 files changed, 1 insertions(+), 1 deletions(-)\n")
    assert not [b for b in text_blocks(body) if b.kind == "heading"]
    assert [b.text for b in text_blocks("Release notes\n=============\n\nText.\n") if b.kind == "heading"] == [
        "Release notes"]


SLRN_LIKE = """\
  2.3.  How can I set the size of the article pager?

  Unless you zoom the article pager, slrn will split the screen.

  2.4.  What charset settings should I use under Windows?

  Two problems connected with character sets frequently appear:

  1. The terminal may not use the character set used in the Usenet
     articles you are trying to read.

             charset display "ibm850"

  2. Your editor may use a different character set than your terminal.

             editor_command "notepad '%s'"

  2.5.  Why does slrn not show the articles?

  It does.

  Where do I get the public domain directory library?

   Anonymous ftp to ftp://prep.ai.mit.edu/pub/gnu/dirent.tar.Z

  Why is the meta key broken in tcsh-5.20 and up?

   On some machines the tty is not set up to pass 8 bit characters.

  Why does it hang?

   It waits for input from the terminal.
"""


def test_an_answers_numbered_list_and_a_one_line_answer_are_no_headings() -> None:
    """In a FAQ numbered "2.4.", an answer's "1." and "2." items are a list, not questions that
    state their problem; the paragraph under a question is its answer even when it is one short
    line."""
    heads = [t for _, t in _heads("slrn-FAQ.txt", SLRN_LIKE)]
    assert heads == [
        "2.3. How can I set the size of the article pager?",
        "2.4. What charset settings should I use under Windows?",
        "2.5. Why does slrn not show the articles?",
        "Where do I get the public domain directory library?",
        "Why is the meta key broken in tcsh-5.20 and up?",
        "Why does it hang?",
    ]
    assert _body_under("slrn-FAQ.txt", SLRN_LIKE, "Where do I get the public domain directory library?") == [
        "Anonymous ftp to ftp://prep.ai.mit.edu/pub/gnu/dirent.tar.Z"]


def test_in_an_outline_file_an_unstarred_release_heading_is_a_top_one() -> None:
    text = GNU_NEWS.replace("Major changes in 1.2.4\n", "Major changes in Gzip 1.2.4 (1993-08-18)\n").replace(
        "* Added support for Windows NT\n",
        "* Added support for Windows NT, and the --no-name option: do not save or restore the original name\n")
    heads = _heads("NEWS", text)
    assert (1, "Major changes in Gzip 1.2.4 (1993-08-18)") in heads


def test_vim_help_screen_output_is_no_heading_and_the_closing_lines_are_text() -> None:
    text = VIM_HELP.replace("CTRL-W K\n", "../ ~\n./ ~\nMakefile ~\n").replace(
        " vim:tw=78:ts=8:noet:ft=help:norl:\n",
        "==============================================================================\n"
        "Copyright: see |manual-copyright|  vim:tw=78:ts=8:noet:ft=help:norl:\n").replace(
        "VIM REFERENCE MANUAL    by Bram Moolenaar\n",
        "VIM REFERENCE MANUAL    by Gordon Prieur\n\t\t\t\t  and Bram Moolenaar\n")
    r = parse_document(text.encode(), "undo.txt", CFG)
    heads = [b.text for b in r.blocks if b.kind == "heading"]
    assert heads == ["Undo and redo", "1. Undo and redo commands (undo-commands)", "Examples Vim way Vi-compatible way"]
    body = "\n".join(b.text for b in r.blocks)
    assert "Makefile" in body and "Copyright: see manual-copyright" in body and "vim:tw" not in body
    assert r.title == "Undo and redo"


def test_rest_pep_and_rfc_roles_keep_their_name_in_any_case() -> None:
    text = "Title\n=====\n\nSee :RFC:`2396` and :pep:`8` for the rules.\n"
    body = " ".join(b.text for b in parse_document(text.encode(), "x.rst", CFG).blocks)
    assert "RFC 2396" in body and "PEP 8" in body


def test_a_numbered_item_that_asks_in_passing_is_no_heading_and_a_subsection_is_no_answer() -> None:
    """Outside a FAQ "2. Does it pass make distcheck? Fix it if not." is a checklist item; a
    numbered subsection right under a question heads its own part (the sed FAQ's 2.2.1); a
    contents entry with a dot leader names the section it lists; a setext "===" under a longer
    title underlines it."""
    checklist = ("Release checklist\n=================\n\n1. Run the tests.\n2. Does it pass make distcheck? "
                 "Fix it if not.\n3. Tag the release.\n\nInstallation\n===\n\nRun make install.\n")
    assert [t for _, t in _heads("notes.txt", checklist)] == ["Release checklist", "Installation"]
    faq = ("2.2. What versions are there?\n\n2.2.1. Free versions\n\n   GNU sed.\n\n"
           "2.3. Where can I learn sed?\n\n   Books.\n\n2.4. Is it free?\n\n   Yes.\n")
    assert (3, "2.2.1. Free versions") in _heads("sedfaq.txt", faq)
    manual = ("Foo manual\n\nContents\n\n1. Introduction ........ 1\n2. Usage ........ 3\n\n"
              "1. Introduction\n\nFoo does things for you, and it does them well.\n\n"
              "2. Usage\n\nRun foo with a file name.\n")
    assert [t for _, t in _heads("foo.txt", manual)] == ["Foo manual", "Contents", "1. Introduction", "2. Usage"]


def test_vim_help_a_rule_under_a_title_heads_it_and_a_rule_over_prose_makes_no_heading() -> None:
    text = ("*ft_sql.txt*   For Vim version 9.0.\n\nSQL files\n\n"
            "1. Navigation                                   *sql-navigation*\n"
            "---------------------------------------------------------------\n"
            "Most relational databases support a set of statements, indices,\n"
            "and procedures that the plugin can move between.\n\n"
            "==============================================================================\n"
            "The plugin defines no mapping of its own, so nothing here is a title.\n\n"
            " vim:tw=78:ts=8:ft=help:norl:\n")
    r = parse_document(text.encode(), "ft_sql.txt", CFG)
    assert [(b.level, b.text) for b in r.blocks if b.kind == "heading"] == [
        (1, "SQL files"), (2, "1. Navigation (sql-navigation)")]
    assert any(b.text.startswith("Most relational databases support") for b in r.blocks)


def test_a_run_of_entries_of_one_markup_opens_with_no_title() -> None:
    text = ("`araxis`;;\tUse Araxis Merge (requires a graphical session)\n"
            "`bc`;;\tUse Beyond Compare (requires a graphical session)\n"
            "`kdiff3`;;\tUse KDiff3 (requires a graphical session)\n"
            "`vimdiff`;;\tUse Vim with a custom layout, opened in a terminal of its own\n")
    r = parse_document(text.encode(), "mergetools-merge.txt", CFG)
    assert r.title is None and not [b for b in r.blocks if b.kind == "heading"]


def test_a_byline_is_no_title() -> None:
    text = ("25/10/95 Peter Orbaek <poe@daimi.aau.dk>\n\n"
            "Using a comms program to initialize the modem\n"
            "=============================================\n\nRun the program first.\n")
    assert parse_document(text.encode(), "modems.txt", CFG).title == "Using a comms program to initialize the modem"


def test_lines_of_code_or_of_a_drawn_table_are_no_headings() -> None:
    """An unseen-corpus pass (Perl's FAQ read as plain text): "BEGIN {" and "END {" were
    ALL-CAPS headings, and 15 chunks of unrelated questions sat under "BEGIN {"; a table row
    "| z/OS | OS/400 |" was a heading too. A real ALL-CAPS title still is one."""
    text = ("INSTALLATION\n\nRun the installer once per machine and answer its questions.\n\n"
            "    BEGIN {\n        unshift @INC, '/opt/lib';\n    }\n\n"
            "The block above runs before the rest of the program is compiled, so the path is in place.\n\n"
            "END {\n\nclose STDOUT or die;\n\n| z/OS | OS/400 |\n\nBoth systems are EBCDIC platforms.\n")
    heads = [b.text for b in text_blocks(text) if b.kind == "heading"]
    assert heads == ["INSTALLATION"]
    # an underlined title is a heading whatever its characters (a review of the rule)
    marked = text_blocks("Template {placeholders}\n=======================\n\nEach one is filled in at run time.\n")
    assert (marked[0].kind, marked[0].text) == ("heading", "Template {placeholders}")
