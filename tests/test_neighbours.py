"""Neighbour expansion: each hit with the chunks just before and after its unit, in document
order, from the same generation; never inside the unit, never past the document."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from connectors.identity import chunk_id
from query_service.neighbours import neighbour_texts

CVER = "c1"


def _document(doc: str, units: list[int]) -> dict[str, dict[str, Any]]:
    """Payloads of one document whose units hold `units[i]` chunks each, by chunk id."""
    out: dict[str, dict[str, Any]] = {}
    ordinal = 0
    for i, size in enumerate(units):
        first = chunk_id(doc, CVER, ordinal)
        for j in range(size):
            c = chunk_id(doc, CVER, ordinal)
            out[c] = {"doc_id": doc, "ordinal": ordinal, "unit": first, "display_text": f"{doc} u{i} c{j}"}
            ordinal += 1
    return out


def test_neighbours_skip_the_units_own_chunks_and_stop_at_the_documents_edges() -> None:
    store = {**_document("a", [2, 40, 1, 3]), **_document("b", [1])}
    reads: list[int] = []

    def payloads(ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        reads.append(len(ids))
        return {c: store[c] for c in ids if c in store}

    head = {p["display_text"]: p for p in store.values()}
    heads = {chunk_id("a", CVER, 2): head["a u1 c0"],  # 40 chunks long: found past three reads
             chunk_id("a", CVER, 0): head["a u0 c0"],  # the document's first unit: nothing before
             chunk_id("a", CVER, 43): head["a u3 c0"],  # its last: nothing after
             chunk_id("b", CVER, 0): head["b u0 c0"]}  # a one-unit document: nothing either side
    got = neighbour_texts(heads, 2, CVER, payloads)
    assert got[chunk_id("a", CVER, 2)] == (["a u0 c0", "a u0 c1"], ["a u2 c0", "a u3 c0"])
    assert got[chunk_id("a", CVER, 0)] == ([], ["a u1 c0", "a u1 c1"])
    assert got[chunk_id("a", CVER, 43)] == (["a u1 c39", "a u2 c0"], [])
    assert got[chunk_id("b", CVER, 0)] == ([], [])
    assert len(reads) == 1 + 2  # the chunks before, then one read per round (16, then 32 ids) for every unit
    assert neighbour_texts(heads, 0, CVER, payloads) == {}
    # a unit of 3,000 chunks (parent_max_tokens allows thousands of small chunks): still found
    huge = _document("c", [3000, 1])
    far = neighbour_texts({chunk_id("c", CVER, 0): huge[chunk_id("c", CVER, 0)]}, 1, CVER,
                          lambda ids: {c: huge[c] for c in ids if c in huge})
    assert far[chunk_id("c", CVER, 0)] == ([], ["c u1 c0"])


SECTIONS = {
    "Unpacking": "Lift the arm out of the crate by the two blue handles and keep the joints folded. "
                 "Remove the foam blocks from the wrist and the base before the first power-on. "
                 "Keep the crate: a return shipment needs it and its foam.",
    "Mounting": "Bolt the base to the table with four M8 bolts torqued to twelve newton metres. "
                "The table must carry three times the arm's weight without flexing at full reach. "
                "Check the level with the spirit bubble on the base plate before tightening.",
    "Calibration": "Run the zeroing routine from the teach pendant with every joint at its mark. "
                   "The routine moves each joint to its hard stop slowly and records the offsets. "
                   "Repeat it after any collision or when a joint was moved by hand while powered off.",
    "Maintenance": "Grease the wrist bearings every five hundred operating hours with the supplied tube. "
                   "Replace the cable harness when the outer sleeve shows cracks near the elbow. "
                   "Log each service in the arm's maintenance book with the hour meter reading.",
}


@pytest.mark.slow
def test_a_hit_carries_the_chunks_around_its_unit_through_every_door(tmp_path: Path) -> None:
    """Small chunks and units of one section each: a hit in "Calibration" comes with the end of
    "Mounting" before it and the start of "Maintenance" after it, read from the store's own
    chunks, through the retriever, the query service (and its schema) and the CLI."""
    from fastapi.testclient import TestClient

    from connectors.config import load_config
    from connectors.store import DocumentStore
    from query_service.app import create_app
    from query_service.auth import hash_key
    from query_service.retrieval import GenerationRetriever, LiveRetriever, make_filters
    from tests.bindery_fixture import Deployment

    key = "bk_neighbours-test-caller"
    dep = Deployment(tmp_path, stages={"chunk": {"max_tokens": 24, "min_tokens": 0, "overlap_tokens": 0,
                                                   "parent_max_tokens": 90}},
                     query={"poll_seconds": 0.1, "auth": {"api_keys": [{"hash": hash_key(key), "principals": []}]}})
    dep.write("manuals/arm.md", "# Robot arm manual\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in SECTIONS.items()))
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    binding = store.get_binding()
    gen = store.get_generation(binding.generation_id) if binding else None
    assert gen is not None
    arm = next(d for d in store.documents() if d.external_id == "manuals/arm.md")
    chunks = sorted(store.chunks_for([arm.doc_id], gen.stage_versions["chunk"]), key=lambda c: c.ordinal)
    unit_of = {c.chunk_id: c.parent_id or c.chunk_id for c in chunks}

    question = "zeroing routine hard stop offsets teach pendant"
    retriever = GenerationRetriever(cfg, gen, store)
    try:
        plain = retriever.search(question, 3, make_filters("*")).hits
        hits = retriever.search(question, 3, make_filters("*"), neighbours=1).hits
    finally:
        retriever.close()
    top = hits[0]
    assert top.doc == "manuals/arm.md" and "Calibration" in top.heading_path
    inside = [c for c in chunks if unit_of[c.chunk_id] == top.unit_id]
    assert len(inside) >= 2, "the test needs a unit of several chunks"
    first, last = inside[0].ordinal, inside[-1].ordinal
    assert top.before == [chunks[first - 1].display_text] and "Mounting" in chunks[first - 1].heading_path
    assert top.after == [chunks[last + 1].display_text] and "Maintenance" in chunks[last + 1].heading_path
    assert plain[0].before is None and "before" not in plain[0].to_json()  # off unless asked
    assert [h.to_json()["text"] for h in plain] == [h.to_json()["text"] for h in hits]  # ranking unchanged

    live = LiveRetriever(cfg, follow=False)
    try:
        with TestClient(create_app(cfg, live)) as client:
            reply = client.post("/search", json={"query": question, "k": 1, "neighbours": 1},
                                headers={"X-API-Key": key})
            assert reply.status_code == 200, reply.text
            body = reply.json()
            assert body["hits"][0]["before"] == top.before and body["hits"][0]["after"] == top.after
            assert client.post("/search", json={"query": question, "neighbours": 6},
                               headers={"X-API-Key": key}).status_code == 422
            schema = client.get("/openapi.json").json()["components"]["schemas"]["HitModel"]["properties"]
            assert {"before", "after"} <= set(schema)
    finally:
        live.close()
    out = dep.cli("query", question, "-k", "1", "--neighbours", "2")
    assert out["hits"][0]["after"] == [chunks[last + 1].display_text, chunks[last + 2].display_text]
    # as a person reads it: one line per neighbour, the adjacent one first after the hit (joined
    # into one cut line, the adjacent chunk before a hit was lost behind the farther one)
    from orchestration.report import human

    after = [ln for ln in human("query", out).splitlines() if ln.startswith("   after: ")]
    assert len(after) == 2
    for line, chunk in zip(after, (chunks[last + 1], chunks[last + 2]), strict=True):
        assert " ".join(chunk.display_text.split())[:40] in line
    store.dispose()
