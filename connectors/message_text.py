"""What in a message's text is the writer's own words, and what is side text: quoted history,
attribution lines ("On ... wrote:"), signatures and mailing-list footers.

Both sides of the index use it: the e-mail parser (`assets.parsing.email`) marks side text as
blocks that are shown but not indexed, and the query service strips the same noise from a query
that is a pasted message. It lives here, below both layers, for that reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = ["Attribution", "attribution_lines", "find_attribution", "parse_attribution", "sent_keys", "split_quoted",
           "split_side", "strip_message_noise"]

_WROTE = r"(?:wrote|schrieb|a écrit|escribió|ha scritto|schreef)\s*:\s*$"
_ATTRIBUTION_START = re.compile(r"^\s*(?:On|Am|Le|El|Il|Op)\s", re.IGNORECASE)
_ATTRIBUTION = re.compile(r"^\s*(?:On|Am|Le|El|Il|Op)\s.*" + _WROTE, re.IGNORECASE)
_WROTE_END = re.compile(_WROTE, re.IGNORECASE)
# "Tim Peters wrote:", "At 1:16 AM -0400 on 10/3/02, Gary Murphy wrote:", "Martin A posted:"
_SAYS = re.compile(r"^\s*\S.{0,160}\b(?:wrote|writes|posted|said|schrieb|a écrit|escribió)\s*:\s*$", re.I)
# Initials quoting ("E> ...", "GLM> ...", as some mail readers of the time wrote them)
_INITIALS_QUOTE = re.compile(r"^\s*[A-Z]{1,5}>")
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(?:Original Message|Forwarded message)\s*-{2,}\s*$", re.I)
_OUTLOOK_HEADER = re.compile(r"^\s*(?:From|Von|De):\s", re.IGNORECASE)


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
        if _ATTRIBUTION.match(line) or _SAYS.match(line):
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
# A rule line, possibly with a label in it ("---- Yahoo! Groups Sponsor ----~-->")
_RULE = re.compile(r"^\s*(?:_{5,}|-{5,}|={5,}|~{5,})(?:.*(?:_{3,}|-{3,}|={3,}|~-->))?\s*$")
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
        rule_footer = _RULE.match(line) and any(_FOOTER_HINT.search(x) for x in lines[i:i + 5])
        if _SIG_DELIM.match(line) or rule_footer:
            return "\n".join(lines[:i]).rstrip(), "\n".join(lines[i:])
    tail = [i for i, line in enumerate(lines[-_TAIL_LINES:], start=max(0, len(lines) - _TAIL_LINES))
            if _FOOTER_HINT.search(line)]
    if tail and tail[0] > 0:
        return "\n".join(lines[:tail[0]]).rstrip(), "\n".join(lines[tail[0]:])
    return text, ""


def strip_message_noise(query: str) -> str:
    """A query that is a pasted message, reduced to the writer's own words: quoted lines,
    attribution lines ("On ... wrote:"), signature and list footer removed. A query with none
    of these comes back unchanged; one made only of noise also comes back unchanged."""
    main, _ = split_quoted(query)
    main, _ = split_side(main)
    main = main.strip()
    return main if main else query


# -- attribution: who wrote the message a pasted reply answers ------------------------------------

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_ZONES = {"ut": 0, "utc": 0, "gmt": 0, "z": 0, "edt": -240, "est": -300, "cdt": -300, "cst": -360,
          "mdt": -360, "mst": -420, "pdt": -420, "pst": -480, "bst": 60, "cet": 60, "cest": 120,
          "met": 60, "mest": 120, "eet": 120, "eest": 180}
_ADDRESS = re.compile(r"<?([\w.+'-]+@[\w-]+(?:\.[\w-]+)+)>?")
# "In message <id>, X writes:" (exmh, nmh), "In <id>, X wrote:" (Usenet readers)
_ANGLE_ID = re.compile(r"\b(?:in(?:\s+message)?|message-id:?)\s*<([^<>\s@]+@[^<>\s]+)>", re.IGNORECASE)
_VERB = re.compile(r"\s*\b(?:wrote|writes|posted|said|says|schrieb|a écrit|escribió|ha scritto|schreef)\s*:\s*$",
                   re.IGNORECASE)
# Words of an attribution line that are never part of the writer's name.
_NOT_NAME = frozenset(re.findall(r"\w+", """
    on at am pm le el il op in message once upon a time the de del der van von quoting
    mon tue wed thu fri sat sun monday tuesday wednesday thursday friday saturday sunday
    january february march april june july august september october november december""")) | set(_MONTHS) | set(_ZONES)
_DMY = re.compile(r"\b(\d{1,2})\s+([A-Za-z]{3})[a-z]*\.?,?\s+(\d{4})\b")  # 22 Aug 2002
_MDY = re.compile(r"\b([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2}),?\s+(\d{4})\b")  # Sep 02, 2002
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")  # 2002-08-28
_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b")  # 9/23/02 (month first, as US mailers wrote it)
# 03:25:30 +0200, 5:22 PM -0400, 12:21:42 PDT, 03:19:13AM; a zone name is only read from _ZONES
_YEARS = (1900, 2999)  # dates outside are no mail's (and would overflow a day's arithmetic)
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*([AaPp][Mm])?\b"
                   r"(?:\s*([+-]\d{4})|\s*\(?([A-Za-z]{1,4})\)?(?=[\s,]|$))?")


@dataclass(frozen=True)
class Attribution:
    """What an attribution line ("On Thu, 22 Aug 2002, Joseph S. Barrera III wrote:") says about
    the message a pasted reply answers: its writer's name words and address, the Message-ID
    some mailers quote ("In message <id>, X writes:"), and when it was sent (`day`, the `time`
    as written, and the zone's `offset` in minutes when the line names one)."""

    names: tuple[str, ...] = ()  # lowercased name words, single letters dropped
    address: str | None = None
    message_id: str | None = None
    day: date | None = None
    time: tuple[int, int] | None = None  # (hour, minute) as written
    offset: int | None = None  # minutes east of UTC, when the line gives a zone

    def day_keys(self) -> tuple[str, ...]:
        """The day and its neighbours as ``sent`` keys (`sent_keys`): a mailer quotes the date in
        the writer's zone or the reader's, which can fall on either side of midnight."""
        if self.day is None:
            return ()
        return tuple(f"d:{self.day + timedelta(days=n)}" for n in (0, -1, 1))


def _words(text: str) -> list[str]:
    """Lowercased alphanumeric runs: what the keyword index's ``author`` field holds."""
    return [w for w in re.findall(r"[^\W_]+", text.lower()) if len(w) > 1]


def attribution_lines(text: str) -> list[str]:
    """The attribution lines of a message's text, a line wrapped in two joined."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith(">"):
            continue
        if _ATTRIBUTION.match(line) or _SAYS.match(line):
            out.append(line.strip())
        elif _ATTRIBUTION_START.match(line) and i + 1 < len(lines) and _WROTE_END.search(lines[i + 1]):
            out.append(f"{line.strip()} {lines[i + 1].strip()}")
    return out


def _day(line: str) -> date | None:
    """The first date in `line`; None for none, or one no mail was sent on (31 Feb, year 9999:
    a date that far out would overflow the day arithmetic)."""
    try:
        if m := _ISO.search(line):
            day = date(int(m[1]), int(m[2]), int(m[3]))
        elif (m := _DMY.search(line)) and m[2].lower() in _MONTHS:
            day = date(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))
        elif (m := _MDY.search(line)) and m[1].lower() in _MONTHS:
            day = date(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
        elif m := _SLASH.search(line):
            year = int(m[3]) + (2000 if len(m[3]) == 2 and int(m[3]) < 70 else 1900 if len(m[3]) == 2 else 0)
            day = date(year, int(m[1]), int(m[2]))
        else:
            return None
    except ValueError:  # month 13, day 0
        return None
    return day if _YEARS[0] <= day.year <= _YEARS[1] else None


def _time(line: str) -> tuple[tuple[int, int] | None, int | None]:
    """((hour, minute), the zone's offset in minutes or None) of the first time in `line`."""
    m = _TIME.search(line)
    if not m:
        return None, None
    hour, minute = int(m[1]), int(m[2])
    if m[3]:
        hour = hour % 12 + (12 if m[3].lower() == "pm" else 0)
    if hour > 23 or minute > 59:
        return None, None
    if m[4]:
        sign = -1 if m[4][0] == "-" else 1
        return (hour, minute), sign * (int(m[4][1:3]) * 60 + int(m[4][3:5]))
    return (hour, minute), _ZONES.get((m[5] or "").lower())


def parse_attribution(line: str) -> Attribution | None:
    """An `Attribution` from one attribution line; None when it names nobody."""
    body = _VERB.sub("", line)
    ids = _ANGLE_ID.findall(body)
    body = _ANGLE_ID.sub(" ", body)
    address = next(iter(_ADDRESS.findall(body)), None)
    body = _ADDRESS.sub(" ", body)
    day = _day(body)
    who = body.rsplit(",", 1)[-1]  # "On <date>, Name": the name follows the last comma
    for rx in (_TIME, _ISO, _DMY, _MDY, _SLASH):
        who = rx.sub(" ", who)
    names = tuple(w for w in _words(who) if not w.isdigit() and w not in _NOT_NAME)[:5]
    if not names and not address and not ids:
        return None
    time, offset = _time(body) if day else (None, None)
    return Attribution(names=names, address=address.lower() if address else None,
                       message_id=f"<{ids[0]}>" if ids else None, day=day, time=time, offset=offset)


def find_attribution(text: str) -> Attribution | None:
    """The attribution of a pasted reply: its first attribution line that names somebody (the
    message it answers; deeper lines attribute older quotes). None for any other text."""
    for line in attribution_lines(text):
        found = parse_attribution(line)
        if found is not None:
            return found
    return None


def sent_keys(iso: str | None) -> tuple[str, ...]:
    """The keyword index's ``sent`` values for a message's Date (ISO 8601, as the e-mail parser
    stores it): its day as written (the writer's zone) and its day in UTC, once each."""
    at = _sent(iso)
    if at is None:
        return ()
    keys = [f"d:{at.date()}"]
    if at.utcoffset() is not None:
        keys.append(f"d:{(at - at.utcoffset()).date()}")  # type: ignore[operator]
    return tuple(dict.fromkeys(keys))


def _sent(iso: str | None) -> datetime | None:
    """A message's Date as the parser stored it; None for none, for one kept as written (not ISO)
    and for one no mail was sent on (the UTC arithmetic of year 1 or 9999 overflows)."""
    try:
        at = datetime.fromisoformat(iso) if iso else None
    except ValueError:
        return None
    return at if at is not None and _YEARS[0] <= at.year <= _YEARS[1] else None


def author_match(a: Attribution, author: str) -> float:
    """How well a From header fits the attribution: 1 when it holds every name word (or the
    address), the share of name words it holds otherwise ("Tim Peters" for tim.one@...: 0.5)."""
    words = set(_words(author))
    if a.address and set(_words(a.address)) <= words:
        return 1.0
    if not a.names:
        return 0.0
    return sum(n in words for n in a.names) / len(a.names)


_ANY_ZONE = timedelta(hours=14)  # the widest gap between a local time and UTC


def date_match(a: Attribution, sent: str | None) -> float | None:
    """How well a message's Date fits the attribution's: 1 the same minute (in UTC when the
    line names a zone; else the same minute of the hour within any zone's reach of the time as
    written), 0.8 the same day, 0.5 the day next to it, 0.1 another day; None when either
    side has no date (nothing to compare)."""
    at = _sent(sent)
    if a.day is None or at is None:
        return None
    if a.time is not None and at.utcoffset() is not None:
        written = datetime(a.day.year, a.day.month, a.day.day, *a.time)
        utc = (at - at.utcoffset()).replace(tzinfo=None, second=0, microsecond=0)  # type: ignore[operator]
        if a.offset is not None:
            if utc == written - timedelta(minutes=a.offset):
                return 1.0
        elif at.minute == a.time[1] and abs(utc - written) <= _ANY_ZONE:
            return 1.0
    days = {abs((d - a.day).days) for d in (at.date(), (at - (at.utcoffset() or timedelta())).date())}
    return 0.8 if 0 in days else 0.5 if 1 in days else 0.1
