"""A pasted reply's attribution line as evidence for the message it answers (issue 8, e-mail).

The line ("On Thu, 22 Aug 2002, Joseph S. Barrera III wrote:") is stripped from the query's
text, but who and when it names are read (`connectors.mail_attribution.find_attribution`) and the
messages they fit gain a bonus in the ranking (`query_service.attribution`). These tests fail if
the line is no longer read, if it is read wrongly on the forms real mailers wrote, or if the
bonus reaches a message by somebody else.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from connectors.indexes.base import ScoredId
from connectors.mail_attribution import (
    Attribution,
    author_match,
    date_match,
    find_attribution,
    parse_attribution,
    sent_keys,
)
from connectors.message_text import strip_message_noise
from query_service.attribution import attributed_units, attribution_bonus, evidence
from query_service.fusion import Fused
from tests.bindery_fixture import Deployment

# Forms taken from a real 2002 mailing-list archive (mail_ham): line -> (names, address, day,
# time, offset in minutes, message id)
FORMS = {
    "Justin MacCarthy wrote:": (("justin", "maccarthy"), None, None, None, None, None),
    "On 10 Sep 2002, Gary Lawrence Murphy wrote:": (("gary", "lawrence", "murphy"), None, date(2002, 9, 10),
                                                    None, None, None),
    "On Fri, 04 Oct 2002 03:25:30 +0200 Vincent <cult@free.fr> wrote:": (
        ("vincent",), "cult@free.fr", date(2002, 10, 4), (3, 25), 120, None),
    "Once upon a time, Ville wrote :": (("ville",), None, None, None, None, None),
    "On Wed, 2002-08-28 at 23:48, Ville Skyttä wrote:": (("ville", "skyttä"), None, date(2002, 8, 28), (23, 48),
                                                        None, None),
    "At 5:22 PM -0400 on 9/23/02, Tom wrote:": (("tom",), None, date(2002, 9, 23), (17, 22), -240, None),
    "On Mon, Sep 02, 2002 at 03:19:13AM -0400, Eirikur Hallgrimsson wrote:": (
        ("eirikur", "hallgrimsson"), None, date(2002, 9, 2), (3, 19), -240, None),
    "In message <200209111917.PAA02912@blackcomb.panasas.com>, Brent Welch writes:": (
        ("brent", "welch"), None, None, None, None, "<200209111917.PAA02912@blackcomb.panasas.com>"),
    '"Michael Moncur" said:': (("michael", "moncur"), None, None, None, None, None),
    "On Thu, 5 Sep 2002 bitbitch@magnesium.net wrote:": ((), "bitbitch@magnesium.net", date(2002, 9, 5),
                                                         None, None, None),
    "On Mon, 09 Sep 2002 12:21:42 PDT, Rick Baartman <baartman@lin12.triumf.ca> wrote:": (
        ("rick", "baartman"), "baartman@lin12.triumf.ca", date(2002, 9, 9), (12, 21), -420, None),
    "R. A. Hettinga wrote:": (("hettinga",), None, None, None, None, None),
    "On Thu, 22 Aug 2002, Joseph S. Barrera III wrote:": (("joseph", "barrera", "iii"), None, date(2002, 8, 22),
                                                          None, None, None),
    # other verbs of saying, on a line that holds a date (the same archive)
    "On Thu, Aug 22, 2002 at 05:13:01PM +0100, Fergal Moran mentioned:": (
        ("fergal", "moran"), None, date(2002, 8, 22), (17, 13), 60, None),
    "On Fri, 13 Sep 2002, Tony L. Svanstrom mused:": (("tony", "svanstrom"), None, date(2002, 9, 13),
                                                       None, None, None),
    # Gmail's form: a short first name after the time is no time zone
    "On Mon, Sep 9, 2024 at 10:22 AM John Doe <jd@x.com> wrote:": (("john", "doe"), "jd@x.com", date(2024, 9, 9),
                                                                   (10, 22), None, None),
}


@pytest.mark.parametrize("line", list(FORMS))
def test_attribution_lines_of_real_mailers_are_read(line: str) -> None:
    names, address, day, time, offset, message_id = FORMS[line]
    assert parse_attribution(line) == Attribution(names=names, address=address, message_id=message_id,
                                                  day=day, time=time, offset=offset)


def test_a_pasted_reply_yields_its_first_attribution_and_the_text_loses_it() -> None:
    pasted = ("On Thu, 22 Aug 2002, Joseph S. Barrera III wrote:\n> the pump stalls\n"
              "> Tim Peters wrote:\n> >> older quote\n\nReplace the impeller.\n-- \nsig")
    found = find_attribution(pasted)
    assert found is not None and found.names == ("joseph", "barrera", "iii")  # not Tim: a deeper quote
    assert strip_message_noise(pasted) == "the pump stalls\nolder quote\n\nReplace the impeller."
    assert find_attribution("How do I reset the pump?") is None
    assert find_attribution("On reflection, I think it works") is None  # no "wrote:"
    assert find_attribution("On Thu, 22 Aug 2002, you wrote:") is None  # names nobody
    # initials quoting is quoted history; a quoted line is never joined to the line above it
    assert find_attribution("EL> On Thu, 22 Aug 2002, CDale wrote:\nmine") is None
    assert find_attribution("On Fri, 23 Aug 2002,\n> kevin lyda wrote:\nmine") is None
    wrapped = find_attribution("In message <abc@def.com>, Tony Nu\ngent writes:\n> x\nmine")
    assert wrapped is not None and wrapped.message_id == "<abc@def.com>"


def test_an_attribution_with_another_verb_is_quoted_history_where_it_holds_a_date() -> None:
    """"On <date>, X mentioned:" opened a reply's own words (and an `evalset draft` question);
    "On the other hand, I'd say:" is the writer's own line."""
    from connectors.message_text import is_attribution, split_quoted

    reply = ("On Thu, Aug 22, 2002 at 05:13:01PM +0100, Fergal Moran mentioned:\n> the pump stalls\n\n"
             "On the other hand, I'd say:\nreplace the impeller.")
    own, quoted = split_quoted(reply)
    assert own.split("\n")[0] == "" and "On the other hand, I'd say:" in own and "Fergal" not in own
    assert quoted.startswith("On Thu, Aug 22, 2002") and "the pump stalls" in quoted
    for line in ("On Fri, 13 Sep 2002 the voices made carlo@alinoe.com write:",
                 "On Saturday 28 September 2002 04:37 pm, you struggled free to say:"):
        assert is_attribution(line), line
    for line in ("On the other hand, I'd say:", "On Linux you write:", "On " + "9" * 300 + " said it all, mused:"):
        assert not is_attribution(line), line
    assert strip_message_noise(reply).startswith("the pump stalls")


def test_an_infinite_weight_is_refused() -> None:
    from pydantic import ValidationError

    from connectors.config import QueryConfig

    with pytest.raises(ValidationError):
        QueryConfig(attribution_weight=float("inf"))


def test_sent_keys_are_the_day_as_written_and_in_utc() -> None:
    assert sent_keys("2002-10-04T23:25:30-04:00") == ("d:2002-10-04", "d:2002-10-05")
    assert sent_keys("2002-10-04T03:25:30+00:00") == ("d:2002-10-04",)
    assert sent_keys("Thu, garbage") == () and sent_keys(None) == ()
    # a forged Date at the edge of the calendar must not stop the index stage (UTC overflows)
    assert sent_keys("9999-12-31T23:00:00-05:00") == () and sent_keys("0001-01-01T01:00:00+05:00") == ()


@pytest.mark.parametrize("line", ["On 31 Dec 9999, Mallory wrote:", "On 1/1/0000, Mallory wrote:",
                                  "On 31 Feb 2002 25:61 +9999, Mallory wrote:", "On 2002-13-45, Mallory wrote:"])
def test_impossible_dates_in_a_line_are_no_dates(line: str) -> None:
    found = parse_attribution(line)
    assert found is not None and found.names == ("mallory",) and found.day is None and found.day_keys() == ()
    assert date_match(found, "9999-12-31T23:00:00-05:00") is None


def test_date_match_same_minute_across_zones_day_and_neighbours() -> None:
    zoned = parse_attribution("On Fri, 04 Oct 2002 03:25:30 +0200 Vincent wrote:")
    assert zoned is not None
    assert date_match(zoned, "2002-10-03T21:25:30-04:00") == 1.0  # the same instant, written in another zone
    assert date_match(zoned, "2002-10-04T09:00:00+02:00") == 0.8
    assert date_match(zoned, "2002-10-05T09:00:00+02:00") == 0.5
    assert date_match(zoned, "2002-11-04T03:25:30+02:00") == 0.1
    # no zone in the line (the reader's local time): the same minute of the hour within reach of any zone
    local = parse_attribution("On Wed, 2002-08-28 at 13:57, Michael Clark wrote:")
    assert local is not None
    assert date_match(local, "2002-08-28T14:57:39-04:00") == 1.0
    assert date_match(local, "2002-08-28T14:58:39-04:00") == 0.8
    assert date_match(local, None) is None
    assert date_match(Attribution(names=("x",)), "2002-08-28T14:57:39-04:00") is None


def test_author_match_needs_a_name_word_or_the_whole_address() -> None:
    tim = Attribution(names=("tim", "peters"))
    assert author_match(tim, "Tim Peters <tim.one@comcast.net>") == 1.0
    assert author_match(tim, "tim.one@comcast.net") == 0.5
    assert author_match(tim, "Guido van Rossum <guido@python.org>") == 0.0
    by_address = Attribution(address="bitbitch@magnesium.net")
    assert author_match(by_address, "bitbitch@magnesium.net") == 1.0
    assert author_match(by_address, "Other <other@magnesium.net>") == 0.0


def test_evidence_and_bonus_lift_the_attributed_message_and_no_other() -> None:
    attr = parse_attribution("On Fri, 04 Oct 2002 03:25:30 +0200 Vincent <cult@free.fr> wrote:")
    assert attr is not None
    payloads = {
        "parent": {"author": "Vincent <cult@free.fr>", "sent": "2002-10-04T03:25:30+02:00", "unit": "parent"},
        "same-day": {"author": "Vincent <cult@free.fr>", "sent": "2002-10-04T18:00:00+02:00", "unit": "same-day"},
        "sibling": {"author": "Someone Else <se@x.org>", "sent": "2002-10-04T03:25:30+02:00", "unit": "sibling"},
    }
    assert evidence(attr, payloads["parent"]) == 1.0
    assert evidence(attr, payloads["same-day"]) == 0.8
    assert evidence(attr, payloads["sibling"]) == 0.0
    quoted = Attribution(names=("brent",), message_id="<id@x>")
    assert evidence(quoted, {"message_id": "<id@x>", "author": "nobody"}) == 1.0

    hits = [_hit("same-day"), _hit("parent"), _hit("sibling")]
    units = attributed_units(attr, hits, payloads, lambda c: payloads[c]["unit"])
    assert units == {"parent": ("parent", 1.0), "same-day": ("same-day", 0.8)}
    # the sibling's words match best; the attribution puts the parent first, and it enters the
    # list even though no retriever found it
    fused = [Fused("sibling", 3.0, {"dense": 1}), Fused("same-day", 0.0, {"dense": 2}), Fused("x", -1.0, {"dense": 3})]
    out = attribution_bonus(fused, {u: e for u, (_, e) in units.items()}, 2.0)
    assert [f.chunk_id for f in out] == ["parent", "same-day", "sibling", "x"]
    assert out[0].ranks == {"attribution": 1} and out[0].score == pytest.approx(-1.0 + 2.0 * 1.0 * 4.0)
    assert out[1].score == pytest.approx(0.0 + 2.0 * 0.8 * 4.0) and out[2] == fused[0]
    assert attribution_bonus(fused, {"parent": 1.0}, 0.0) == fused


def _hit(chunk_id: str) -> ScoredId:
    return ScoredId(chunk_id, 1.0)


def test_past_the_usual_cut_only_the_attributed_minute_counts() -> None:
    """The writer's chunks fetched past `candidates` (for a line that gives the minute) gain only
    for that minute: the cut by the query's words still keeps the rest of a prolific writer's day
    from all gaining."""
    attr = parse_attribution("On Fri, 04 Oct 2002 03:25:30 +0200 Vincent <cult@free.fr> wrote:")
    assert attr is not None
    payloads = {c: {"author": "Vincent <cult@free.fr>", "sent": sent, "unit": c}
                for c, sent in (("parent", "2002-10-04T03:25:30+02:00"), ("same-day", "2002-10-04T18:00:00+02:00"))}
    hits = [_hit("same-day"), _hit("parent")]
    assert attributed_units(attr, hits, payloads, lambda c: c, sure_only={"same-day", "parent"}) == {
        "parent": ("parent", 1.0)}
    assert attributed_units(attr, hits, payloads, lambda c: c) == {"parent": ("parent", 1.0),
                                                                   "same-day": ("same-day", 0.8)}


# -- end to end: a sync of a few e-mails, then `bindery query` with a pasted reply ------------------

MAILS = {
    "mail/parent.eml": """From: Hendrik de Vries <h.devries@kestrel.example>
Date: Tue, 03 Sep 2024 07:11:48 +0200
Subject: all robots stopped in Tilburg
Message-ID: <parent@kestrel.example>

All of our robots in the Tilburg DC stopped this morning and we are picking by hand.
Please call me as soon as possible.
""",
    "mail/earlier.eml": """From: Hendrik de Vries <h.devries@kestrel.example>
Date: Mon, 26 Aug 2024 09:00:00 +0200
Subject: dock lights
Message-ID: <earlier@kestrel.example>

The CD-2 dock lights blink amber after a firmware update. Is that expected?
""",
    "mail/other.eml": """From: Anna Berg <anna@northwind.example>
Date: Tue, 03 Sep 2024 09:30:00 +0200
Subject: fleet notes
Message-ID: <other@northwind.example>

We rolled the firmware back to v2.14.3; time synchronisation is fixed and the robots move again.
""",
}
THREAD = {  # a reply to the parent and a reply to that reply: one thread, rooted at the parent
    "mail/reply-1.eml": """From: Priya Raman <priya@northwind.example>
Date: Tue, 03 Sep 2024 10:00:00 +0200
Subject: Re: all robots stopped in Tilburg
Message-ID: <reply-1@northwind.example>
In-Reply-To: <parent@kestrel.example>
References: <parent@kestrel.example>

We are looking into it and will call you within the hour.
""",
    "mail/reply-2.eml": """From: Priya Raman <priya@northwind.example>
Date: Wed, 04 Sep 2024 08:00:00 +0200
Subject: Re: all robots stopped in Tilburg
Message-ID: <reply-2@northwind.example>
In-Reply-To: <reply-1@northwind.example>
References: <parent@kestrel.example> <reply-1@northwind.example>

The replacement quartz oscillator boards ship by courier on Thursday morning.
""",
}
PASTED = """On Tue, 3 Sep 2024 at 07:11, Hendrik de Vries wrote:
> All of our robots stopped.

We rolled the firmware back to v2.14.3 and time synchronisation is fixed: the robots move again.

Priya
"""


@pytest.mark.slow
def test_a_pasted_reply_finds_the_message_its_attribution_names(tmp_path: Path) -> None:
    d = Deployment(tmp_path)
    for rel, text in MAILS.items():
        d.write(rel, text)
    d.cli("sync")
    hits = d.cli("query", PASTED, "-k", "3")["hits"]
    assert hits[0]["doc"] == "mail/parent.eml", [h["doc"] for h in hits]
    answer = d.cli("query", PASTED, "-k", "3")
    assert answer["trace"]["binding"]["version"] == d.cli("status")["binding"]["version"]  # as /search says
    trace = answer["trace"]["attribution"]
    assert trace["names"] == ["hendrik", "vries"] and "index_outdated" not in trace
    assert trace["day"] == "2024-09-03" and trace["best"][0]["evidence"] == 1.0
    from query_service.app import AttributionTrace

    assert set(trace) <= set(AttributionTrace.model_fields)  # the service's OpenAPI schema declares each key
    # off, the words decide: the message by somebody else that says what the reply says
    d.config["query"]["attribution_weight"] = 0
    d.save()
    off = d.cli("query", PASTED, "-k", "3")
    assert off["hits"][0]["doc"] == "mail/other.eml" and "attribution" not in off["trace"]


@pytest.mark.slow
def test_the_message_of_the_attributed_minute_is_found_on_a_prolific_writers_day(tmp_path: Path) -> None:
    """notmuch's linux-kernel mail: "On Sun, Nov 14, 2010 at 07:05:03PM -0800, Joe Perches wrote:"
    answers one of 45 patches he sent that evening. The writer's lookup stopped at `candidates`
    chunks ranked by day, then by the reply's words, so whether the patch of that minute made the
    cut was up to BM25 statistics (an unrelated re-parse took it from 1st to unranked)."""
    d = Deployment(tmp_path)
    d.config["query"].update(candidates=5, k=3)
    d.save()
    for i in range(12):  # the same evening, each saying more of what the reply says than the answered one
        d.write(f"mail/patch-{i:02}.eml", f"""From: Joe Perches <joe@perches.com>
Date: Sun, 14 Nov 2010 18:{10 + i}:00 -0800
Subject: [PATCH {i + 2}/13] drivers/part{i}: remove unnecessary semicolons
Message-ID: <patch-{i}@perches.com>

Remove unnecessary semicolons in part {i}; this applies against current next and regenerates cleanly.
""")
    d.write("mail/answered.eml", """From: Joe Perches <joe@perches.com>
Date: Sun, 14 Nov 2010 19:05:03 -0800
Subject: [PATCH 1/13] sound/soc/codecs: remove unnecessary semicolons
Message-ID: <answered@perches.com>

Semicolons after closing braces of switch statements in the codec drivers.
""")
    d.cli("sync")
    reply = ("On Sun, Nov 14, 2010 at 07:05:03PM -0800, Joe Perches wrote:\n\n"
             "This doesn't apply against current -next, could you please regenerate against that?\n")
    hits = d.cli("query", reply, "-k", "3")["hits"]
    assert hits[0]["doc"] == "mail/answered.eml", [h["doc"] for h in hits]


@pytest.mark.slow
def test_a_matching_message_lifts_its_whole_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from query_service import retrieval

    d = Deployment(tmp_path)
    for rel, text in {**MAILS, **THREAD}.items():
        d.write(rel, text)
    d.cli("sync")

    def score(doc: str) -> float:
        hits = d.cli("query", "when do the quartz oscillator boards ship", "-k", "10")["hits"]
        return float(next(h["score"] for h in hits if h["doc"] == doc))

    (top,) = d.cli("query", "when do the quartz oscillator boards ship", "-k", "1")["hits"]
    assert top["doc"] == "mail/reply-2.eml" and top["title"] == "Re: all robots stopped in Tilburg"
    # a hit says who wrote the message, when, and where it sits in its thread (a citation names them)
    assert top["email"] == {"from": "Priya Raman <priya@northwind.example>", "date": "2024-09-04T08:00:00+02:00",
                            "message_id": "<reply-2@northwind.example>", "in_reply_to": "<reply-1@northwind.example>",
                            "thread_id": "<parent@kestrel.example>"}
    from query_service.app import HitModel

    assert HitModel.model_validate(top).model_dump(by_alias=True, exclude_unset=True)["email"] == top["email"]
    from query_service.retrieval import _email

    # a Date header no parser could read is stored as written: not a date the contract promises
    assert _email({"author": "a@b", "sent": "sometime next week"}) == {"from": "a@b"}
    assert _email({"display_text": "not an e-mail"}) is None
    with_mates = score("mail/parent.eml")  # the thread's root: not reply-2's parent, its thread mate
    # a thread lookup cut at its limit cannot tell a long thread from a short one: no mates then
    monkeypatch.setattr(retrieval, "_THREAD_LOOKUP_LIMIT", 2)
    cut = score("mail/parent.eml")
    monkeypatch.undo()
    d.config["query"]["thread_mates_weight"] = 0
    d.save()
    without = score("mail/parent.eml")
    assert with_mates > without + 0.1 and cut < with_mates - 0.1


@pytest.mark.slow
def test_reindex_rebuilds_a_live_generation_whose_keyword_index_is_older(tmp_path: Path) -> None:
    import shutil

    from connectors.config import load_config
    from connectors.lifecycle import Lifecycle
    from connectors.store import DocumentStore
    from tests.test_keyword_tantivy import write_pre_mail_index

    d = Deployment(tmp_path)
    d.cli("sync")
    assert d.cli("reindex")["candidate"] is None  # current: nothing to do
    assert d.cli("plan", "reindex")["candidate"] is None
    # as a generation an older release wrote: the same configuration, its published keyword index
    # with the older schema (a real tantivy index, without the new fields)
    store = DocumentStore(load_config(d.config_path).database_url, migrate=False)
    live = Lifecycle(load_config(d.config_path), store).live()
    store.dispose()
    assert live is not None and live.record.keyword_snapshot
    shutil.rmtree(live.record.keyword_snapshot)
    write_pre_mail_index(Path(live.record.keyword_snapshot))
    plan = d.cli("plan", "reindex")  # the plan says the same: every document's indexes, nothing else
    assert plan["stages"]["index"]["compute"] > 0 and plan["stages"]["parse"]["compute"] == 0
    assert d.cli("query", PASTED)["trace"]["attribution"]["index_outdated"] is True  # the query says so too
    out = d.cli("reindex")
    assert out["candidate"] is not None and out["stale_index_fields"] == ["author", "sent", "thread"]
    assert out["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}  # indexes only


@pytest.mark.slow
def test_a_keyword_backend_that_cannot_say_its_fields_still_serves(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors.config import load_config
    from connectors.errors import IndexError_
    from connectors.indexes.tantivy_index import TantivyIndex
    from connectors.lifecycle import Lifecycle
    from connectors.store import DocumentStore
    from query_service.retrieval import GenerationRetriever

    d = Deployment(tmp_path)
    for rel, text in MAILS.items():
        d.write(rel, text)
    d.cli("sync")
    cfg = load_config(d.config_path)
    store = DocumentStore(cfg.database_url, migrate=False)
    live = Lifecycle(cfg, store).live()
    assert live is not None
    def unreachable(self: TantivyIndex) -> list[str]:  # as a server backend briefly down answers
        raise IndexError_("read mapping on g1 failed: connection refused")

    monkeypatch.setattr(TantivyIndex, "missing_fields", unreachable)
    retriever = GenerationRetriever(cfg, live.record, store)  # opening never asks: it cannot fail on it
    try:
        result = retriever.search(PASTED, 3)
        assert result.hits[0].doc == "mail/parent.eml" and "index_outdated" not in result.trace["attribution"]
    finally:
        retriever.close()
        store.dispose()


@pytest.mark.slow
def test_a_rewrite_of_a_message_whose_new_bytes_fail_keeps_its_title_and_thread_keys(tmp_path: Path) -> None:
    """A message whose new content fails to parse keeps its indexed chunks (cut from the old
    content); an ACL change then rewrites it from those chunks, and its title and thread keys came
    from the new, failed content: none. They come from the parse the chunks were cut from."""
    from connectors.config import load_config
    from connectors.indexes.base import Filters
    from query_service.retrieval import LiveRetriever

    d = Deployment(tmp_path)
    d.write("mail/reply-2.eml", THREAD["mail/reply-2.eml"])
    d.cli("sync")
    d.write("mail/reply-2.eml", b"%PDF-1.4 not an e-mail any more \x00\x01\x02")  # a failed parse: dead letter
    d.write("mail/.bindery-acl", "group:support\n")
    d.cli("sync")
    r = LiveRetriever(load_config(d.config_path))
    try:
        (hit,) = r.search("quartz oscillator boards", 1, Filters(principals=("group:support",))).hits
    finally:
        r.close()
    assert hit.doc == "mail/reply-2.eml" and hit.title == "Re: all robots stopped in Tilburg"
    assert hit.email is not None and hit.email["thread_id"] == "<parent@kestrel.example>"
