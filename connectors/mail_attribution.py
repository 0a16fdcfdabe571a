"""What an attribution line says about the message a pasted reply answers.

"On Thu, 22 Aug 2002, Joseph S. Barrera III wrote:" is side text to `connectors.message_text`
(it is stripped from indexed text and from queries), but it names the writer of the quoted
message and when it was sent. `find_attribution` reads that from a query, on the forms real
mailers wrote (checked on a 2002 mailing-list archive: the line names the parent's writer in 98 %
of the replies that have one); `sent_keys`, `author_match` and `date_match` are what the keyword
index stores and what the query service compares (`query_service.attribution`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from connectors.message_text import _ATTRIBUTION_START, _INITIALS_QUOTE, OTHER_VERBS, WROTE_VERBS, is_attribution

__all__ = ["Attribution", "attribution_lines", "author_match", "date_match", "find_attribution", "parse_attribution",
           "sent_keys"]

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_ZONES = {"ut": 0, "utc": 0, "gmt": 0, "z": 0, "edt": -240, "est": -300, "cdt": -300, "cst": -360,
          "mdt": -360, "mst": -420, "pdt": -420, "pst": -480, "bst": 60, "cet": 60, "cest": 120,
          "met": 60, "mest": 120, "eet": 120, "eest": 180}
_ADDRESS = re.compile(r"(?<![\w.+'-])<?([\w.+'-]+@[\w-]+(?:\.[\w-]+)+)>?")  # lookbehind: linear, not quadratic
# "In message <id>, X writes:" (exmh, nmh), "In <id>, X wrote:" (Usenet readers)
_ANGLE_ID = re.compile(r"\b(?:in(?:\s+message)?|message-id:?)\s*<([^<>\s@]+@[^<>\s]+)>", re.IGNORECASE)
# no leading \s*: retried from every position of a long blank run it was quadratic
_VERB = re.compile(rf"\b(?:{WROTE_VERBS}|{OTHER_VERBS})\s*:\s*$", re.IGNORECASE)
# Words of an attribution line that are never part of the writer's name.
_NOT_NAME = frozenset(re.findall(r"\w+", """
    on at am pm le el il op in message once upon a time the de del der van von quoting um om
    you someone somebody he she they we
    mon tue wed thu fri sat sun monday tuesday wednesday thursday friday saturday sunday
    january february march april june july august september october november december""")) | set(_MONTHS) | set(_ZONES)
_DMY = re.compile(r"\b(\d{1,2})\s+([A-Za-z]{3})[a-z]*\.?,?\s+(\d{4})\b")  # 22 Aug 2002
_MDY = re.compile(r"\b([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2}),?\s+(\d{4})\b")  # Sep 02, 2002
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")  # 2002-08-28
_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b")  # 9/23/02 (month first, as US mailers wrote it)
_YEARS = (1900, 2999)  # dates outside are no mail's (and would overflow a day's arithmetic)
# 03:25:30 +0200, 5:22 PM -0400, 12:21:42 PDT, 03:19:13AM; a zone name is only read from _ZONES
_ZONE_NAMES = "|".join(sorted(_ZONES, key=len, reverse=True))  # only these: "10:22 AM John" keeps John
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*([AaPp][Mm])?\b"
                   r"(?:\s*([+-]\d{4})|\s*\(?(" + _ZONE_NAMES + r")\)?(?=[\s,]|$))?", re.IGNORECASE)


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
    """The attribution lines of a message's own text (not of its quoted history), a line
    wrapped in two joined."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    for i, line in enumerate(lines):
        if _quoted(line):
            continue
        if is_attribution(line):
            out.append(line.strip())
        elif ((_ATTRIBUTION_START.match(line) or _ANGLE_ID.match(line.strip())) and i + 1 < len(lines)
              and not _quoted(lines[i + 1]) and _VERB.search(lines[i + 1])):
            out.append(f"{line.strip()} {lines[i + 1].strip()}")
    return out


def _quoted(line: str) -> bool:
    return line.lstrip().startswith(">") or bool(_INITIALS_QUOTE.match(line))


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
    verb = _VERB.search(line)
    body = line[:verb.start()].rstrip() if verb else line
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
