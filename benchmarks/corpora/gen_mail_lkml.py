"""Generate ``benchmarks/evalsets/mail_lkml.jsonl``: reply -> parent questions over real list mail.

    python -m benchmarks.corpora.gen_mail_lkml [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/mail_lkml/{lkml,default}/NNN.eml``, laid out by ``fetch.sh``) is the test
corpora of notmuch 0.37 as Debian's *source* package ships them (``test/corpora/lkml``: real
linux-kernel, linux-cifs, alsa-devel, linux-fsdevel, netdev, notmuch... list posts of 2009-2011,
many of them patches and their reviews; ``test/corpora/default``: early messages of the notmuch
list), one file per Message-ID (``fetch.sh`` drops the second copy of a cross-posted message):
228 messages, full headers included.

The questions are made exactly as `benchmarks.corpora.gen_mail_ham` makes them, with its
functions: every reply whose parent is in the corpus, the query = the opening of the reply's own
words (`own_words`: quoted lines, attribution, signature and list footer removed; a review of a
patch quotes the diff with ``>``, so the quoted diff goes too), replies with fewer than
`MIN_WORDS` such words dropped; gold = the parent (any chunk), the reply in ``exclude_docs``. The
same replies make ``mail_lkml_pasted.jsonl`` (`pasted`: the reply without its quoted history) and
``mail_lkml_quoted.jsonl`` (the reply whole, quoted history included). Every usable reply is kept
(no sample), in an order shuffled with a fixed seed.

Category = the list: the id in ``List-Id``'s angle brackets, first label (gen_mail_ham's
`list_name` reads the URL in alsa-devel's List-Id description as ``www``), else
``X-Mailing-List``; the ``default`` folder's messages, most of them without a list header, are
all from the notmuch list. Lists with fewer than `MIN_PER_LIST` questions are pooled as
``other``. A cross-posted message counts under the list of the copy ``fetch.sh`` kept.
"""

from __future__ import annotations

import email
import random
import re
import sys
from collections import Counter
from email.message import Message
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, corpora_dir
from benchmarks.corpora.gen_mail_ham import (
    MIN_PER_LIST,
    MIN_WORDS,
    MSGID,
    _capped,
    _parent,
    _plain_body,
    own_words,
    pasted,
    write_variants,
)

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "mail_lkml.jsonl"
OUT_PASTED = OUT.with_name("mail_lkml_pasted.jsonl")
OUT_QUOTED = OUT.with_name("mail_lkml_quoted.jsonl")
SEED = 8
LIST_ID = re.compile(r"<([\w.+-]+)>\s*$")
# A patch as git format-patch mails it: the commit message, its trailers, "---", the diffstat
# and the diff. Only the commit message is the author's own words.
DIFF = re.compile(r"^(diff -|Index: |\+\+\+ |--- a/)", re.M)
PATCH_CUT = re.compile(r"^(---\s*|diff -.*|Index: .*)$")
TRAILER = re.compile(r"^\s*(Signed-off-by|Acked-by|Reviewed-by|Tested-by|Reported-by|Suggested-by|"
                     r"Reported-and-tested-by|Cc):", re.I)


def commit_message(body: str) -> str:
    """A body holding a patch (an unquoted diff), cut to its commit message: the lines before
    git's ``---`` separator (or the diff itself), trailers (``Signed-off-by:``...) left out.
    Any other body is returned as it is. `own_words` then applies its rules to what is left;
    without this cut a patch's opening "words" are its ``Signed-off-by`` line and diffstat."""
    if not DIFF.search(body):
        return body
    lines: list[str] = []
    for line in body.splitlines():
        if PATCH_CUT.match(line.rstrip()):
            break
        if not TRAILER.match(line):
            lines.append(line)
    return "\n".join(lines)


def list_name(msg: Message, folder: str) -> str:
    """The list a message went to: ``List-Id``'s bracketed id, else ``X-Mailing-List``'s local
    part; the notmuch corpus's ``default`` folder is the notmuch list's."""
    m = LIST_ID.search(" ".join(str(msg.get("List-Id") or "").split()))
    if m:
        return m.group(1).split(".")[0].lower()
    m = re.match(r"\s*<?([\w.+-]+?)(?:-[A-Za-z0-9]{16,})?@", str(msg.get("X-Mailing-List") or ""))
    if m:
        return m.group(1).lower()
    return "notmuch" if folder == "default" else "other"


def cases(root: Path) -> list[Case]:
    """Every usable reply -> parent question, in an order shuffled with `SEED`."""
    msgs: dict[str, Message] = {}
    ids: dict[str, str] = {}
    for path in sorted(root.glob("*/*.eml")):
        doc = path.relative_to(root).as_posix()
        msgs[doc] = email.message_from_bytes(path.read_bytes())
        for mid in MSGID.findall(str(msgs[doc].get("Message-Id") or "")):
            ids.setdefault(mid, doc)
    out: list[Case] = []
    short = replies = 0
    for doc, msg in msgs.items():
        parent = _parent(msg, ids)
        if parent is None or parent == doc:
            continue
        replies += 1
        body = _plain_body(msg)
        query = own_words(commit_message(body))
        if len(query.split()) < MIN_WORDS:
            short += 1
            continue
        out.append({"query": query, "gold": [{"doc": parent, "text": None}],
                    "category": list_name(msg, doc.split("/")[0]), "exclude_docs": [doc],
                    "pasted": pasted(body),
                    "quoted": _capped("\n".join(line.rstrip() for line in body.splitlines()))})
    counts = Counter(c["category"] for c in out)
    for c in out:
        if counts[c["category"]] < MIN_PER_LIST:
            c["category"] = "other"
    print(f"{len(msgs)} messages, {replies} replies with a parent in the corpus: {len(out)} kept, {short} "
          "dropped as too short (a patch without a commit message has no words of its own)", file=sys.stderr)
    random.Random(SEED).shuffle(out)
    return [{"id": f"mail-{i}", **c} for i, c in enumerate(out)]


def main() -> int:
    """Writes three sets from the same replies, as `gen_mail_ham.main` does: `mail_lkml.jsonl`
    (the opening of each reply's own words), `mail_lkml_pasted.jsonl` (the reply without its
    quoted history, noise included) and `mail_lkml_quoted.jsonl` (the whole reply)."""
    root = corpora_dir() / "mail_lkml"
    write_variants(cases(root), root, OUT, OUT_PASTED, OUT_QUOTED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
