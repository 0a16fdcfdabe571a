"""Everything that talks to an outside system: sources, the document store, the indexes and the
model providers, plus what ingestion and the query service must agree on (config, ids, the
embedder, the analyser). Nothing here imports Dagster."""
