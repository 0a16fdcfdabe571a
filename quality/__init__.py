"""Parse-quality metrics, the Great Expectations suite and the parse report."""
