"""The query service: hybrid retrieval over the live binding, served with FastAPI."""
