"""The document store: schema, migrations, typed access and the records it returns."""

from connectors.store.records import (
    BindingRecord,
    ChunkRecord,
    ContextRecord,
    DeadLetterRecord,
    DocumentRecord,
    EventRecord,
    GenerationRecord,
    IndexStateRecord,
    ParseRecord,
    SourceRecord,
)
from connectors.store.store import DocumentStore

__all__ = ["BindingRecord", "ChunkRecord", "ContextRecord", "DeadLetterRecord", "DocumentRecord", "DocumentStore",
           "EventRecord", "GenerationRecord", "IndexStateRecord", "ParseRecord", "SourceRecord"]
