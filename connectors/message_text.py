"""What in a message's text is the writer's own words, and what is side text: quoted history,
attribution lines ("On ... wrote:"), signatures and mailing-list footers.

Both sides of the index use it: the e-mail parser (`assets.parsing.email`) marks side text as
blocks that are shown but not indexed, and the query service strips the same noise from a query
that is a pasted message (keeping the words it quotes: in a query they name the answered
message). It lives here, below both layers, for that reason. What an attribution
line says (who wrote the quoted message, and when) is read in `connectors.mail_attribution`.
"""

from __future__ import annotations

import re

__all__ = ["is_attribution", "split_quoted", "split_side", "strip_message_noise"]

# verbs that end an attribution line, in two sets: `_WROTE`'s on any "On ..." line, the others only
# where the line holds a digit (`is_attribution`); `connectors.mail_attribution` reads both
WROTE_VERBS = "wrote|schrieb|a écrit|escribió|ha scritto|schreef"
OTHER_VERBS = "said|says|say|write|writes|mentioned|mused|posted|typed"
_WROTE = rf"(?:{WROTE_VERBS})\s*:\s*$"
_ATTRIBUTION_START = re.compile(r"^\s*(?:On|Am|Le|El|Il|Op)\s", re.IGNORECASE)
_ATTRIBUTION = re.compile(r"^\s*(?:On|Am|Le|El|Il|Op)\s.*" + _WROTE, re.IGNORECASE)
_WROTE_END = re.compile(_WROTE, re.IGNORECASE)
# "Tim Peters wrote:", "At 1:16 AM -0400 on 10/3/02, Gary Murphy wrote:", "Martin A posted:"
_SAYS = re.compile(r"^\s*\S.{0,160}\b(?:wrote|writes|posted|said|schrieb|a écrit|escribió)\s*:\s*$", re.I)
# "On Thu, Aug 22, 2002 at 05:13:01PM +0100, Fergal Moran mentioned:", "On Fri, 13 Sep 2002 the
# voices made X write:": other verbs, taken only where the line holds a digit (a date, a time),
# so that "On the other hand, I'd say:" stays the writer's own words (`is_attribution`)
_OTHER_VERB_END = re.compile(rf"\b(?:{OTHER_VERBS})\s*:\s*$", re.I)
_OTHER_VERB_MAX = 200  # characters: an attribution line is short


def is_attribution(line: str) -> bool:
    """Whether `line` introduces quoted history: "On <date>, X wrote:", "X wrote:", and "On
    <date>, X mentioned:" with another verb of saying where the line holds a digit."""
    if _ATTRIBUTION.match(line) or _SAYS.match(line):
        return True
    return (len(line) <= _OTHER_VERB_MAX and bool(_ATTRIBUTION_START.match(line))
            and any(c.isdigit() for c in line) and bool(_OTHER_VERB_END.search(line)))


# Initials quoting ("E> ...", "GLM> ...", as some mail readers of the time wrote them)
_INITIALS_QUOTE = re.compile(r"^\s*[A-Z]{1,5}>")
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(?:Original Message|Forwarded message)\s*-{2,}\s*$", re.I)
_OUTLOOK_HEADER = re.compile(r"^\s*(?:From|Von|De):\s", re.IGNORECASE)
# The header lines of a forwarded or Outlook-quoted message, its Subject excepted
_HISTORY_HEADER = re.compile(r"^\s*(?:From|Sent|To|Cc|Date|Von|Gesendet|An|De|Envoyé|À|Para|Enviado):\s",
                             re.IGNORECASE)


def split_quoted(text: str) -> tuple[str, str]:
    """(the new text of a plain-text message, its quoted history as written)."""
    lines = text.replace("\r\n", "\n").split("\n")
    main: list[str] = []
    quoted: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">") or _INITIALS_QUOTE.match(line):
            quoted.append(re.sub(r"^\s*(?:[A-Z]{0,5}>\s?)+", "", line))
            i += 1
            continue
        if is_attribution(line):
            quoted.append(line.strip())
            i += 1
            continue
        if (
            _ATTRIBUTION_START.match(line)
            and i + 1 < len(lines)
            and _WROTE_END.search(lines[i + 1])
        ):
            quoted.extend([line.strip(), lines[i + 1].strip()])  # attribution wrapped in two
            i += 2
            continue
        if _ORIGINAL.match(line) or (
            _OUTLOOK_HEADER.match(line)
            and any(
                re.match(r"^\s*(?:Sent|Date|Gesendet|Envoyé):\s", ln) for ln in lines[i : i + 4]
            )
        ):
            quoted.extend(lines[i:])  # everything below an Outlook reply header is history
            break
        main.append(line)
        i += 1
    return "\n".join(main), "\n".join(quoted)


_SIG_DELIM = re.compile(r"^(?:- )?-- ?$")  # "- --" is the delimiter dash-escaped by PGP clearsigning
_PGP_HEAD = re.compile(r"^-----BEGIN PGP SIGNED MESSAGE-----\s*\n(?:Hash: .*\n)?", re.M)
_PGP_SIG = re.compile(r"^-----BEGIN PGP SIGNATURE-----.*?(?:^-----END PGP SIGNATURE-----\s*$|\Z)", re.M | re.S)
_RULE_CHARS = "_-=~"
_RULE_ENDS = ("___", "---", "===", "~-->")


def is_rule_line(line: str) -> bool:
    r"""A rule line, possibly with a label in it ("------ Yahoo! Groups Sponsor ------~-->"): five or
    more of one of `_-=~`, then nothing, more of them, or anything ending in three of `_-=` or
    in "~-->". Plain string tests, not a regular expression: the pattern this replaces
    (`^\s*(?:-{5,})(?:.*(?:-{3,}))?\s*$`) backtracked in cubic time on a long dash line, and a
    4,000-character query or one line of a mail held the process (and the GIL) for minutes."""
    body = line.strip()
    if len(body) < 5 or body[0] not in _RULE_CHARS or body[:5] != body[0] * 5:
        return False
    rest = body[5:]
    return not rest.strip(body[0]) or rest.endswith(_RULE_ENDS)
_FOOTER_HINT = re.compile(
    r"mailing list|listinfo|/lists?[./]|unsubscribe|you received this message because|"
    r"sent from my (?:iphone|ipad|android)|posting guide|groups sponsor|yahoo! groups|egroups\.com|"
    r"sponsored by|this sf\.net email", re.IGNORECASE)
_TAIL_LINES = 6  # list boilerplate within the last lines ends a message even without a rule


def split_side(text: str) -> tuple[str, str]:
    """(a message's own words, its side text): a signature below the "-- " delimiter and a
    mailing-list footer (a rule line followed within four lines by list boilerplate, or such
    boilerplate in the last six lines) match every message of a list, so they are kept for
    display but not indexed (see `assets.chunking.is_side_text`)."""
    lines = _PGP_HEAD.sub("", text).split("\n")
    for i, line in enumerate(lines):
        if line.startswith("-----BEGIN PGP SIGNATURE-----"):  # armour: side text from here on
            return "\n".join(lines[:i]).rstrip(), _PGP_SIG.sub("", "\n".join(lines[i:])).strip()
        rule_footer = is_rule_line(line) and any(_FOOTER_HINT.search(x) for x in lines[i:i + 5])
        if _SIG_DELIM.match(line) or rule_footer:
            return "\n".join(lines[:i]).rstrip(), "\n".join(lines[i:])
    tail = [i for i, line in enumerate(lines[-_TAIL_LINES:], start=max(0, len(lines) - _TAIL_LINES))
            if _FOOTER_HINT.search(line)]
    if tail and tail[0] > 0:
        return "\n".join(lines[:tail[0]]).rstrip(), "\n".join(lines[tail[0]:])
    return text, ""


def strip_message_noise(query: str) -> str:
    """A query that is a pasted message, reduced to what says which message it is about: the
    words it quotes (quote markers, attribution lines, and the quoted signature and footer
    removed), then the writer's own words (their signature, list footer and PGP armour removed).

    Quoted history is left out of the *index* (replies would compete with the message they
    quote), but in a *query* it is the answered message's own text, verbatim: the best evidence
    of which message and thread is meant. Dropping it cost 13 points of recall@10 on whole
    pasted replies of mail_ham (docs/retrieval.md). A query with none of this comes back
    unchanged; one made only of noise also comes back unchanged."""
    main, quoted = split_quoted(query)
    main, _ = split_side(main)
    lines = quoted.split("\n")
    noise = {i for i, line in enumerate(lines) if is_attribution(line)
            or _ORIGINAL.match(line) or _HISTORY_HEADER.match(line)}
    for i, line in enumerate(lines[:-1]):  # an attribution wrapped over two lines
        if _ATTRIBUTION_START.match(line) and _WROTE_END.search(lines[i + 1]):
            noise |= {i, i + 1}
    words, _ = split_side("\n".join(line for i, line in enumerate(lines) if i not in noise))
    text = "\n\n".join(part for part in (words.strip(), main.strip()) if part)
    return text if text else query
