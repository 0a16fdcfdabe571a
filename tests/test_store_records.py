"""The typed store records (connectors/store/records.py) stay in step with the schema: one field
per column, in column order, so `to_dict()` has the row's keys in the row's order."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from connectors.store import (
    BindingRecord,
    ChunkRecord,
    ContextRecord,
    DeadLetterRecord,
    DocumentRecord,
    DocumentStore,
    EventRecord,
    GenerationRecord,
    IndexStateRecord,
    ParseRecord,
    SourceRecord,
)
from connectors.store import schema as t

RECORDS = {t.sources: SourceRecord, t.documents: DocumentRecord, t.parses: ParseRecord, t.chunks: ChunkRecord,
           t.contexts: ContextRecord, t.generations: GenerationRecord, t.bindings: BindingRecord,
           t.index_state: IndexStateRecord, t.dead_letters: DeadLetterRecord, t.events: EventRecord}


def test_every_row_table_has_a_record_with_its_columns_in_order() -> None:
    # vectors are read as bytes; the one owner row as a (store id, data_dir) pair
    assert set(RECORDS) == set(t.metadata.sorted_tables) - {t.embeddings, t.store_owner}
    for table, record in RECORDS.items():
        assert [f.name for f in dataclasses.fields(record)] == [c.name for c in table.columns], table.name


def test_a_column_the_record_does_not_know_is_an_error_not_dropped() -> None:
    row = {"alias": "live", "generation_id": 1, "previous_generation_id": None, "flipped_at": 1.0,
           "flipped_by": None, "version": 1}
    assert BindingRecord.from_row(row).to_dict() == row
    with pytest.raises(TypeError):
        BindingRecord.from_row({**row, "flipped_by_whom": "x"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        BindingRecord.from_row(row).version = 2  # type: ignore[misc]


def test_the_store_returns_records_whose_dict_is_the_row(db_url: str) -> None:
    store = DocumentStore(db_url)
    gid = store.create_generation(name="g1", stage_versions={"chunk": "c"}, stage_configs={}, embedder_id="e",
                                  vector_index="v", keyword_index="k", created_at=5.0)
    gen = store.get_generation(gid)
    assert isinstance(gen, GenerationRecord) and (gen.id, gen.status, gen.counts, gen.vector_engine) == (
        gid, "building", {}, None)
    assert list(gen.to_dict()) == [c.name for c in t.generations.columns]
    binding = store.flip_binding(gid, by="test")
    assert binding == store.get_binding() and binding.generation_id == gid and binding.version == 1
    store.add_event("gc", "nothing", details={"n": 0})
    (event,) = store.events("gc")
    assert (event.kind, event.message, event.details) == ("gc", "nothing", {"n": 0})
    unrecorded = GenerationRecord.unrecorded(0, "g2")
    assert (unrecorded.vector_engine, unrecorded.vector_index, unrecorded.status) == (None, "", "building")


def test_a_block_serialises_as_asdict_would_every_field_in_order_and_meta_copied() -> None:
    from connectors.documents import Block

    meta: dict[str, Any] = {"attachment": "a.pdf", "pages": [1, {"ocr": True}]}
    for block in (Block("heading", "Install", level=2, page=3, meta=meta), Block("paragraph", "text")):
        d = block.to_dict()
        assert d == dataclasses.asdict(block) and list(d) == [f.name for f in dataclasses.fields(Block)]
        assert Block.from_dict(d) == block
    d = Block("table", "| a |", meta=meta).to_dict()
    d["meta"]["pages"][1]["ocr"] = False  # a stored row is its own copy, not the parser's
    assert meta["pages"][1]["ocr"] is True
