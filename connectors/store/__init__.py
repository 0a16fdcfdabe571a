"""The document store: schema, migrations and typed access."""

from connectors.store.store import DocumentStore

__all__ = ["DocumentStore"]
