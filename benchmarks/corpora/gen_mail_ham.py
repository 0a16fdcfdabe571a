"""Generate ``benchmarks/evalsets/mail_ham.jsonl``: reply -> parent questions over real list mail.

    python -m benchmarks.corpora.gen_mail_ham [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/mail_ham/ham/*.eml``, laid out by ``fetch.sh``) is the SpamAssassin
"easy_ham" collection as Debian's ``golang-github-gatherstars-com-jwz-dev`` ships it for its
threading tests: 2,403 real messages of 2002 from a dozen public mailing lists (FoRK, freshrpms,
exmh, razor, SpamAssassin, ILUG...), full headers included.

A question is made from every reply whose parent (the last message id of ``In-Reply-To``, else
of ``References``) is itself in the corpus. Its text is the reply's *own* words, as a reader
would paste the start of a reply to ask "what was this answering?": the plain body with the
quoted history (``>``/``|`` lines), the attribution line ("On ..., X wrote:"), everything after a
"-----Original Message-----" or a forwarded-message marker, the signature (after ``-- ``) and the
list footers (the ``____`` banner of Mailman lists, Yahoo! Groups' sponsor block, "To
unsubscribe" lines) removed; then the first `MAX_LINES` non-empty lines, cut at `MAX_WORDS`
words. Replies whose own opening has fewer than `MIN_WORDS` words (a "+1", "Thanks!") are dropped; so are lines of
fewer than `MIN_LINE_WORDS` words (greetings and sign-offs such as "Cheers," or a first name),
FoRK's ``--]`` quote marks and a leading ``[Name]`` that says who is being quoted.
Gold = the parent message (any chunk of it); the reply itself is in ``exclude_docs`` (it holds
the query verbatim, so finding it says nothing). Category = the list, short name; lists with
fewer than `MIN_PER_LIST` questions are pooled as ``other``. At most `LIMIT` questions, drawn
with a fixed seed.

The same replies also make ``mail_ham_pasted.jsonl``: each reply whole, as a person would paste
it (only the quoted history removed; attribution lines, greetings, signature and list footer
kept), the kind of question that carries noise matching every message of a list. And
``mail_ham_quoted.jsonl``: each reply whole as received, its quoted history included (what a
person pastes most often), where the quoted lines are the parent's own words.
"""

from __future__ import annotations

import email
import random
import re
import sys
from collections import Counter
from email.message import Message
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, corpora_dir, write_checked

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "mail_ham.jsonl"
OUT_PASTED = OUT.with_name("mail_ham_pasted.jsonl")
OUT_QUOTED = OUT.with_name("mail_ham_quoted.jsonl")
MAX_PASTED_CHARS = 3500  # the query service takes at most 4,000 characters
SEED = 8
LIMIT = 650
MAX_LINES = 3
MAX_WORDS = 45
MIN_WORDS = 6
MIN_PER_LIST = 10
MIN_LINE_WORDS = 3
MSGID = re.compile(r"<[^<>\s]+>")
# Lines after which nothing is the reply's own text.
STOP = re.compile(
    r"^(-- ?$|_{10,}|-{5,} ?Original Message|-{3,} ?Forwarded|-{10,}.*Yahoo! Groups|"
    r"To unsubscribe|Begin forwarded message|-{5,}\s*$)", re.I)
ATTRIBUTION = re.compile(
    r"(wrote|writes|said|says|a écrit)\s*:?\s*$|^(On|At|Quoting|In message|In article)\b.*[,:]\s*$"
    r"|^(From|Sent|To|Subject|Date|Cc|Hash):\s|^-----BEGIN PGP|@\S+.*:\s*$|is all like:\s*$", re.I)
QUOTED = re.compile(r"^\s*([>|:}]|--\]|[A-Za-z]{1,12}>)")  # FoRK quotes with "--]"
DATED = re.compile(r"^On \w{3}, \d|^On \d|^On (Mon|Tue|Wed|Thu|Fri|Sat|Sun)", re.I)  # split attribution
SPEAKER = re.compile(r"^\[[A-Z][\w .'-]{1,40}\]\s*")  # "[Tim Peters] ..." names who is quoted


def _plain_body(msg: Message) -> str:
    """The first text/plain part, decoded (empty if the message has none)."""
    for part in msg.walk():
        if part.get_content_type() == "text/plain" and not part.is_multipart():
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                return payload.decode(part.get_content_charset() or "latin-1", errors="replace")
    return ""


def own_words(body: str) -> str:
    """The opening of a reply's own text: no quotes, attribution, signature or footer."""
    lines: list[str] = []
    for raw in body.splitlines():
        line = raw.strip()
        if STOP.match(raw) or STOP.match(line):
            break
        if not line or QUOTED.match(raw) or ATTRIBUTION.search(line) or DATED.match(line):
            continue
        line = SPEAKER.sub("", line)
        if len(line.split()) < MIN_LINE_WORDS:  # sign-offs and greetings: "Cheers,", "Greg"
            continue
        lines.append(line)
        if len(lines) == MAX_LINES:
            break
    words = " ".join(lines).split()[:MAX_WORDS]
    return " ".join(words)


HISTORY = re.compile(r"^(-{3,} ?Original Message|-{3,} ?Forwarded|Begin forwarded message)", re.I)


def pasted(body: str) -> str:
    """A reply as a person pastes it into a search box: everything but the quoted history (the
    ``>``-quoted lines and what follows an "Original Message" marker). Attribution lines,
    greetings, the signature and the list footer stay, as they do in a pasted message."""
    lines: list[str] = []
    for raw in body.splitlines():
        if HISTORY.match(raw.strip()):
            break
        if QUOTED.match(raw):
            continue
        lines.append(raw.rstrip())
    return _capped("\n".join(lines))


def _capped(text: str) -> str:
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text[:MAX_PASTED_CHARS].rsplit(" ", 1)[0] if len(text) > MAX_PASTED_CHARS else text


def list_name(msg: Message) -> str:
    """A short name of the list a message went to (List-Id, else Mailing-List, else Sender)."""
    for header in ("List-Id", "Mailing-List", "X-Mailing-List", "Sender", "To"):
        value = str(msg.get(header) or "")
        m = re.search(r"<?([\w.+-]+?)(?:-owner|-admin|-request)?[@.](?:[\w-]+\.)*[\w-]+>?", value)
        if m and header in ("List-Id", "Mailing-List"):
            name = re.sub(r"^(list |zzzz)", "", m.group(1).split("@")[0])
            return name.replace("-zzzlist", "").replace("zzzz", "") or "other"
    return "other"


def _parent(msg: Message, ids: dict[str, str]) -> str | None:
    for header in ("In-Reply-To", "References"):
        found = MSGID.findall(str(msg.get(header) or ""))
        if found and found[-1] in ids:
            return ids[found[-1]]
    return None


def cases(root: Path) -> list[Case]:
    """Every usable reply -> parent question, sampled down to `LIMIT` with `SEED`."""
    msgs: dict[str, Message] = {}
    ids: dict[str, str] = {}
    for path in sorted((root / "ham").glob("*.eml")):
        doc = path.relative_to(root).as_posix()
        msgs[doc] = email.message_from_bytes(path.read_bytes())
        for mid in MSGID.findall(str(msgs[doc].get("Message-Id") or "")):
            ids.setdefault(mid, doc)
    out: list[Case] = []
    short = 0
    for doc, msg in msgs.items():
        parent = _parent(msg, ids)
        if parent is None or parent == doc:
            continue
        query = own_words(_plain_body(msg))
        if len(query.split()) < MIN_WORDS:
            short += 1
            continue
        out.append({"query": query, "gold": [{"doc": parent, "text": None}],
                    "category": list_name(msg), "exclude_docs": [doc], "pasted": pasted(_plain_body(msg)),
                    "quoted": _capped("\n".join(line.rstrip() for line in _plain_body(msg).splitlines()))})
    counts = Counter(c["category"] for c in out)
    for c in out:
        if counts[c["category"]] < MIN_PER_LIST:
            c["category"] = "other"
    print(f"{len(out)} replies with a parent in the corpus; dropped {short} too short", file=sys.stderr)
    random.Random(SEED).shuffle(out)
    return [{"id": f"mail-{i}", **c} for i, c in enumerate(out[:LIMIT])]


def main() -> int:
    """Writes three sets from the same sampled replies: `mail_ham.jsonl` (the opening of each
    reply's own words), `mail_ham_pasted.jsonl` (the reply as pasted without its quoted history,
    noise included: what the query service's `strip_message_noise` must cope with) and
    `mail_ham_quoted.jsonl` (the whole reply, quoted history included)."""
    root = corpora_dir() / "mail_ham"
    write_variants(cases(root), root, OUT, OUT_PASTED, OUT_QUOTED)
    return 0


def write_variants(picked: list[Case], root: Path, out: Path, out_pasted: Path, out_quoted: Path) -> None:
    """The three sets of one archive's replies: own words (`out`), pasted and quoted (their
    `pasted` / `quoted` texts as the query, ids prefixed "pasted-" / "quoted-")."""
    def variant(name: str, prefix: str) -> list[Case]:
        return [{**{k: v for k, v in c.items() if k not in ("pasted", "quoted")},
                 "id": c["id"].replace("mail-", prefix), "query": c[name]} for c in picked]

    write_checked([{k: v for k, v in c.items() if k not in ("pasted", "quoted")} for c in picked], root, out)
    write_checked(variant("pasted", "pasted-"), root, out_pasted)
    write_checked(variant("quoted", "quoted-"), root, out_quoted)


if __name__ == "__main__":
    sys.exit(main())
