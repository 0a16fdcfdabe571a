"""Perl's POD (.pod): perlfaq questions, perlvar/perlfunc entries, formatting codes, contents lists."""

from __future__ import annotations

import time

import pytest

from assets.parsing import parse_document
from assets.parsing.pod import pod_inline
from assets.parsing.sniff import detect_format, looks_like_pod
from connectors.documents import ParseResult
from connectors.errors import EmptyDocument, FormatMismatch

# perlfaq4 as Debian's perl-doc ships it: NAME line, questions with index lines under them,
# code, a numbered list, a `=for comment` and an HTML-only region.
PERLFAQ = """=head1 NAME

perlfaq4 - Data Manipulation

=head1 DESCRIPTION

This section of the FAQ answers questions related to manipulating
numbers, dates, strings, arrays, hashes, and miscellaneous data issues.

=head1 Data: Dates

=head2 How do I find yesterday's date?
X<date> X<yesterday> X<DateTime> X<Date::Calc> X<Time::Local>
X<daylight saving time> X<day> X<Today_and_Now> X<localtime>

(contributed by brian d foy)

To do it correctly, you can use one of the C<Date> modules since they
work with calendars instead of times. The L<DateTime> module makes it
simple, and give you the same time of day, only the day before:

    use DateTime;

    my $yesterday = DateTime->now->subtract( days => 1 );

    print "Yesterday was $yesterday\\n";

=for comment
Nobody reads this but the maintainers.

=head2 How do I reverse a string?

Use C<reverse()> in scalar context, as documented in
L<perlfunc/reverse>. See also L<the FAQ|perlfaq6/"Greedy"> and
L<https://perldoc.perl.org/>.

=begin html

<p>Only <b>HTML</b> readers see this.</p>

=end html

=begin text

Only text readers see this.

=end text

=over 4

=item 1.

Split it into characters.

=item 2.

Join them back in the other order.

=back

=cut

print "this is Perl code after the POD, not documentation\\n";

=head1 AUTHOR

Tom Christiansen
"""

# perlvar: term entries, several names over one description, a nested bullet list
PERLVAR = """=encoding utf8

=head1 NAME

perlvar - Perl predefined variables

=head1 SPECIAL VARIABLES

=over 8

=item $ARG

=item $_
X<$_> X<$ARG>

The default input and pattern-searching space.  The following pairs are
equivalent:

    while (<>) {...}    # equivalent only in while!
    while (defined($_ = <>)) {...}

Here are the places where Perl will assume C<$_> even if you don't use it:

=over 3

=item *

The following functions use C<$_> as a default argument.

=item * The pattern matching operations C<m//>, C<s///> and C<tr///>.

=back

=item $0
X<$0> X<$PROGRAM_NAME>

Contains the name of the program being executed.

=item open FILEHANDLE,EXPR

Opens the file whose filename is given by EXPR.

=item -e

Run the code given as S<C<-e 'code'>>: caf\u00e9.

=back
"""

# perlfaq.pod's table of contents: hundreds of questions as `=item *` bullets under the sections
CONTENTS = "=head1 NAME\n\nperlfaq - Frequently asked questions about Perl\n\n=head1 THE QUESTIONS\n\n" + "".join(
    f"=head2 L<perlfaq{n}>: Section {n}\n\nThis section answers questions.\n\n=over 4\n\n"
    + "".join(f"=item *\n\nHow do I do thing {n}.{k}?\n\n" for k in range(40))
    + "=back\n\n"
    for n in range(1, 10)
)


def _blocks(r: ParseResult) -> list[tuple[str, str]]:
    return [(b.kind, b.text) for b in r.blocks]


def test_a_perlfaq_reads_as_questions_over_their_answers() -> None:
    r = parse_document(PERLFAQ.encode(), "perlfaq4.pod")
    assert r.format == "pod"
    assert r.title == "perlfaq4 - Data Manipulation"
    blocks = _blocks(r)
    assert blocks[:2] == [("heading", "NAME"), ("paragraph", "perlfaq4 - Data Manipulation")]
    headings = [(b.level, b.text) for b in r.blocks if b.kind == "heading"]
    assert headings == [(1, "NAME"), (1, "DESCRIPTION"), (1, "Data: Dates"), (2, "How do I find yesterday's date?"),
                        (2, "How do I reverse a string?"), (1, "AUTHOR")]
    i = blocks.index(("heading", "How do I find yesterday's date?"))
    assert blocks[i + 1] == ("paragraph", "(contributed by brian d foy)")
    assert blocks[i + 2][1].startswith("To do it correctly, you can use one of the Date modules since they work")
    assert "The DateTime module makes it simple" in blocks[i + 2][1]
    assert blocks[i + 3] == ("code", 'use DateTime;\n\nmy $yesterday = DateTime->now->subtract( days => 1 );\n\n'
                                     'print "Yesterday was $yesterday\\n";')
    assert ("paragraph", 'Use reverse() in scalar context, as documented in "reverse" in perlfunc. '
                         "See also the FAQ and https://perldoc.perl.org/.") in blocks
    assert ("paragraph", "Only text readers see this.") in blocks
    assert [(b.text, b.meta) for b in r.blocks if b.kind == "list_item"] == [
        ("Split it into characters.", {"depth": 0, "ordered": True}),
        ("Join them back in the other order.", {"depth": 0, "ordered": True})]
    assert ("paragraph", "Tom Christiansen") in blocks
    text = "\n".join(t for _, t in blocks)
    for gone in ("X<", "C<", "L<", "=head", "=item", "=cut", "maintainers", "HTML", "Perl code after", "<p>"):
        assert gone not in text


def test_perlvar_entries_are_terms_over_their_descriptions() -> None:
    r = parse_document(PERLVAR.encode(), "perlvar.pod")
    assert r.title == "perlvar - Perl predefined variables" and r.metadata["encoding"] == "utf8"
    blocks = _blocks(r)
    i = blocks.index(("paragraph", "$ARG\n$_"))  # the names of one variable make one term
    assert r.blocks[i].meta == {"term": True}
    assert blocks[i + 1] == ("paragraph", "The default input and pattern-searching space. The following pairs are "
                                          "equivalent:")
    assert blocks[i + 2][0] == "code" and blocks[i + 2][1].startswith("while (<>) {...}    # equivalent")
    assert blocks[i + 3] == ("paragraph", "Here are the places where Perl will assume $_ even if you don't use it:")
    items = [(b.text, b.meta) for b in r.blocks if b.kind == "list_item"]
    assert items == [("The following functions use $_ as a default argument.", {"depth": 1, "ordered": False}),
                     ("The pattern matching operations m//, s/// and tr///.", {"depth": 1, "ordered": False})]
    for term, description in (("$0", "Contains the name of the program being executed."),
                              ("open FILEHANDLE,EXPR", "Opens the file whose filename is given by EXPR."),
                              ("-e", "Run the code given as -e 'code': café.")):
        j = blocks.index(("paragraph", term))
        assert r.blocks[j].meta == {"term": True} and blocks[j + 1] == ("paragraph", description)
    assert not any(b.kind == "heading" and b.text.startswith(("$", "open", "-")) for b in r.blocks)


def test_a_contents_list_of_questions_is_a_list_not_headings() -> None:
    r = parse_document(CONTENTS.encode(), "perlfaq.pod")
    headings = [b.text for b in r.blocks if b.kind == "heading"]
    assert headings == ["NAME", "THE QUESTIONS", *(f"perlfaq{n}: Section {n}" for n in range(1, 10))]
    items = [b for b in r.blocks if b.kind == "list_item"]
    assert len(items) == 360 and items[0].text == "How do I do thing 1.0?"


@pytest.mark.parametrize(("pod", "text"), [
    ("B<bold> I<italic> C<code> F</etc/passwd> S<no break>", "bold italic code /etc/passwd no break"),
    ("E<lt>E<gt> E<sol> E<verbar> E<quot>E<eacute>E<0x263A>E<0351>E<233>", "<> / | \"\u00e9\u263a\u00e9\u00e9"),
    # "C<<E..." (no space after "<<") is C< over "<E..."
    ("C<< $a <=> $b >> and C<<< <<HERE >>> and C<<E<lt>>>", "$a <=> $b and <<HERE and <<>"),
    ("C<$a < $b> B<I<nested> C<E<gt>>>", "$a < $b nested >"),
    ("L<perlfunc>, L<Text|perlfunc/open>, L<perlop/\"Quote\">, L</\"Section\">, L<\"Other\">",
     'perlfunc, Text, "Quote" in perlop, "Section", Other'),
    ("L<C<open>|perlfunc/open> L<https://www.perl.org/> L<B<x>E<verbar>y|z>", "open https://www.perl.org/ x|y"),
    ("index X<index entry>Z<>words", "index words"),
    ("unclosed C<code runs on", "unclosed code runs on"),
    ("2 < 3 and A<B and E<nonsense> and E<99999999>", "2 < 3 and B and  and "),
])
def test_formatting_codes_are_resolved(pod: str, text: str) -> None:
    assert pod_inline(pod) == text


@pytest.mark.parametrize("pod", [
    "=head1 NAME\n\nfoo - bar\n\n=over\n\n=item *\n\nno back\n",  # =back missing
    "=back\n\n=item orphan\n\n=end\n\nText C<unclosed I<nested\n",  # stray commands, unclosed codes
    "=head1 B<" + "B<" * 5000 + "x\n\ntext",  # codes nested far past any real page
    "Text before any command.\n\n=item term\n\n=over\n\n    code\n",
    "=begin html\n\n<p>never ended\n\n=head1 Hidden\n",  # an open region hides the rest, no crash
])
def test_malformed_pod_parses_without_error(pod: str) -> None:
    try:
        r = parse_document(pod.encode(), "bad.pod")
    except EmptyDocument:
        return
    assert r.format == "pod"


def test_malformed_pod_keeps_its_text() -> None:
    r = parse_document(b"=head1 NAME\n\nfoo - bar\n\n=over\n\n=item *\n\nno back\n\n=head2 Next\n\nText", "x.pod")
    assert _blocks(r) == [("heading", "NAME"), ("paragraph", "foo - bar"), ("list_item", "no back"),
                          ("heading", "Next"), ("paragraph", "Text")]
    # a command line opens a paragraph even with no blank line above it
    r = parse_document(b"Text before any command.\n=head1 Heading\nX<idx>\n\nBody.\n", "x.pod")
    assert _blocks(r) == [("paragraph", "Text before any command."), ("heading", "Heading"), ("paragraph", "Body.")]


def test_deep_nesting_and_long_pod_parse_quickly() -> None:
    start = time.monotonic()
    pod_inline("B<" * 100_000 + "x" + ">" * 100_000)
    pod_inline("C<" * 100_000)
    pod_inline("C<< " * 50_000)
    parse_document(("=head2 Q?\nX<q>\n\nA C<b> L<c|d>.\n\n    code\n\n" * 5000).encode(), "big.pod")
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("pod", [b"", b"\n\n", b"=pod\n\n=cut\n", b"=head1\n\n=for comment\nnothing\n\n=cut\n"])
def test_empty_pod_is_an_empty_document(pod: bytes) -> None:
    with pytest.raises(EmptyDocument):
        parse_document(pod, "empty.pod")


@pytest.mark.parametrize(("name", "data", "fmt"), [
    ("perlfaq4.pod", PERLFAQ.encode(), "pod"),
    ("perlfaq4", PERLFAQ.encode(), "pod"),  # no extension: the bytes tell
    ("notes.pod", b"Plain text saved as .pod\n", "pod"),
    ("Module.pod", b"=pod\n\nText\n", "pod"),
    ("intro", b"=encoding utf8\n\n=head1 NAME\n", "pod"),
    ("list", b"=over 4\n\n=item one\n\n=back\n", "pod"),
    ("notes", b"=over here, a line\nwith no other command\n", "text"),
    ("equals", b"=== A banner ===\n\nText\n", "text"),
    ("README.md", b"=head1 NAME\n\nx\n", "markdown"),  # the name promises Markdown: it stays
])
def test_pod_is_told_from_its_name_and_its_bytes(name: str, data: bytes, fmt: str) -> None:
    assert detect_format(data, name).format == fmt


def test_pod_named_txt_is_read_as_pod_with_a_warning() -> None:
    r = parse_document(PERLFAQ.encode(), "perlfaq4.txt")
    assert r.format == "pod" and r.title == "perlfaq4 - Data Manipulation"
    assert r.warnings == ["perlfaq4.txt is named .txt but is a POD document; parsed as such"]
    assert looks_like_pod("=head2 Foo\n") and not looks_like_pod("=headline\n")


def test_binary_named_pod_is_a_mismatch() -> None:
    with pytest.raises(FormatMismatch):
        parse_document(b"\x89PNG\r\n\x1a\n" + bytes(100), "perlfunc.pod")


def test_a_bare_for_and_nested_links_read_without_failing() -> None:
    """A review: `=for` with no format name failed the whole page (ValueError), and each
    nested L<x|y> resolved its text twice, doubling the work per level (111 bytes took 16 s;
    at the 32-level cap, hours)."""
    r = parse_document(b"=head1 NAME\n\nx - y\n\n=for\n\nKept paragraph.\n", "a.pod")
    assert "Kept paragraph." in [b.text for b in r.blocks]
    deep = "L<" * 32 + "x" + "|y>" * 32
    assert pod_inline(deep) == "x"
