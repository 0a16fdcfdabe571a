"""indexes."""
