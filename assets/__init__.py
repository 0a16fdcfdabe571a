"""The pipeline stages: pure stage functions (parse, chunk, contextualise, embed, index) and the
Dagster assets that call them (assets.pipeline)."""
