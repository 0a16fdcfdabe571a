"""A pasted reply's attribution line as evidence for the message it answers.

"On Thu, 22 Aug 2002, Joseph S. Barrera III wrote:" names the writer of the message the reply
quotes and when it was sent. The line is noise as *text* (it matches every message of a list,
so it is stripped from the query) but it is the strongest evidence there is for *which* message
the reply answers. `connectors.mail_attribution.find_attribution` reads it; the keyword index's
`by_author` fetches that writer's messages (those of the attributed day first); here each gets
an evidence in [0, 1] and the fused list a bonus of ``attribution_weight x evidence x`` the
list's spread, so a message by that writer of that minute ranks first and one of that day
rises. Only a message whose From header holds a name word of the line (or all of its address),
or whose Message-ID the line quotes, can gain: a "Tim Smith" gains a little for "Tim Peters"
(half the name), a writer the line does not name nothing.

Evidence: the quoted Message-ID ("In message <id>, X writes:") is 1; otherwise how well the
From header fits the name (1 every name word or the address, a share for some) times how well
the Date fits (1 the same minute, 0.8 the same day, 0.5 a day off, 0.1 another day, 0.5 when
the line gives no date).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

from connectors.indexes.base import ScoredId
from connectors.mail_attribution import Attribution, author_match, date_match
from query_service.fusion import Fused

__all__ = ["attributed_units", "attribution_bonus", "evidence"]

_UNDATED = 0.5  # the date factor when the line or the message has no date


def evidence(attr: Attribution, payload: Mapping[str, Any]) -> float:
    """How surely the message this chunk belongs to is the one `attr` attributes (module docstring)."""
    if attr.message_id and payload.get("message_id") == attr.message_id:
        return 1.0
    who = author_match(attr, str(payload.get("author") or ""))
    if who <= 0:
        return 0.0
    when = date_match(attr, payload.get("sent"))
    return who * (_UNDATED if when is None else when)


def attributed_units(attr: Attribution, hits: Sequence[ScoredId], payloads: Mapping[str, Mapping[str, Any]],
                     unit_of: Callable[[str], str], *, sure_only: Container[str] = ()) -> dict[str, tuple[str, float]]:
    """unit -> (its chunk with the most evidence, that evidence) over `by_author`'s hits; units
    without evidence are left out. `unit_of(chunk_id)` names a chunk's unit. A chunk in
    `sure_only` (fetched past the usual cut, for the attributed minute) counts only with full
    evidence."""
    out: dict[str, tuple[str, float]] = {}
    for h in hits:
        p = payloads.get(h.chunk_id)
        if not p:
            continue
        e = evidence(attr, p)
        if e < 1.0 and h.chunk_id in sure_only:
            continue
        u = unit_of(h.chunk_id)
        if e > 0 and e > out.get(u, ("", 0.0))[1]:
            out[u] = (h.chunk_id, e)
    return out


def attribution_bonus(fused: list[Fused], evidence_of: Mapping[str, float], weight: float) -> list[Fused]:
    """Each attributed unit gains ``weight x evidence x (top - base)``, top and base the fused
    list's highest and lowest scores; one not yet listed starts from base (ranked
    "attribution": its place in the evidence order)."""
    if not evidence_of or weight <= 0:
        return fused
    base = min((f.score for f in fused), default=0.0)
    spread = (max(f.score for f in fused) - base) if fused else 1.0
    spread = spread or 1.0
    listed = {f.chunk_id for f in fused}
    out = [f._replace(score=f.score + weight * evidence_of[f.chunk_id] * spread) if f.chunk_id in evidence_of else f
           for f in fused]
    order = sorted(evidence_of, key=lambda u: (-evidence_of[u], u))
    out += [Fused(u, base + weight * evidence_of[u] * spread, {"attribution": i})
            for i, u in enumerate(order, start=1) if u not in listed]
    return sorted(out, key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id))
