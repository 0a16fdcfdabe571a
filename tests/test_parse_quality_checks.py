"""The `parse_quality` asset check as Dagster runs it: `dg.materialize()` of the listing and parse
assets on a tmp corpus, a real store and a real ephemeral instance (no embedding model, no jobs).

`tests/test_parse_quality_gate.py` tests `judge` alone and the CLI end to end; these cover the
join between them — the check result Dagster records, its severity and metadata — on the WARN,
drift and passing paths.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from assets.pipeline import parsed_documents, source_listing
from orchestration.definitions import resources

PROSE = ("The battery of the field unit lasts about eleven hours when the radio is idle and the "
         "screen is dimmed; charging takes two hours from a standard wall adapter. ")


def _config(tmp_path: Path, corpus: Path, **quality: object) -> str:
    cfg = {"data_dir": str(tmp_path / "data"),
           "sources": [{"name": "docs", "kind": "local", "root": str(corpus), "quality": quality}]}
    path = tmp_path / "bindery.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(path)


def _check(config_path: str, instance: dg.DagsterInstance) -> dg.AssetCheckEvaluation:
    """Materialise listing + parse for partition `docs`; the one parse_quality evaluation."""
    result = dg.materialize([source_listing, parsed_documents], partition_key="docs", instance=instance,
                            resources=resources(config_path),
                            raise_on_error=False)
    evaluations = result.get_asset_check_evaluations()
    assert [e.check_name for e in evaluations] == ["parse_quality"]
    return evaluations[0]


def _instance() -> dg.DagsterInstance:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("sources", ["docs"])
    return instance


def test_healthy_prose_passes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"note{i}.md").write_text(f"# Note {i}\n\n{PROSE * 3}\n", encoding="utf-8")
    ev = _check(_config(tmp_path, corpus), _instance())
    assert ev.passed
    assert ev.metadata["failed"].value == 0 and ev.metadata["judged_docs"].value == 3


def test_one_broken_file_of_two_only_warns(tmp_path: Path) -> None:
    """50 % failed, but two documents are below the floor of 20: WARN, never a blocking ERROR."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text(f"# Good\n\n{PROSE * 3}\n", encoding="utf-8")
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf" + bytes(range(256)) * 4)
    ev = _check(_config(tmp_path, corpus), _instance())
    assert not ev.passed and ev.severity == dg.AssetCheckSeverity.WARN
    assert "below the floor of 20" in (ev.description or "")
    assert ev.metadata["failed"].value == 1 and ev.metadata["judged_docs"].value == 2


def test_word_share_drift_of_a_batch_is_an_error(tmp_path: Path) -> None:
    """A batch whose mean word share falls far below the accepted rest of the source blocks,
    even though every document in it parsed (the per-document word floor is off here)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    config_path = _config(tmp_path, corpus, min_batch=5, min_word_share=0.0)
    instance = _instance()
    for i in range(6):
        (corpus / f"prose{i}.md").write_text(f"# Prose {i}\n\n{PROSE * 3}\n", encoding="utf-8")
    first = _check(config_path, instance)
    assert first.passed, first.description
    for i in range(6):  # identifier soup: alphanumeric, but hardly any word-shaped tokens
        soup = " ".join(f"k{j}x{i}q{j * 7}" for j in range(120))
        (corpus / f"dump{i}.md").write_text(f"{soup}\n", encoding="utf-8")
    second = _check(config_path, instance)
    assert not second.passed and second.severity == dg.AssetCheckSeverity.ERROR
    assert "word share" in (second.description or "")
    drift = second.metadata["word_share_drift"].value
    assert isinstance(drift, float) and drift > 0.25
    assert second.metadata["judged"].value == "batch" and second.metadata["batch_docs"].value == 6


def test_a_dagster_run_that_indexes_nothing_records_why_on_the_source(tmp_path: Path) -> None:
    """The CLI's summary says "nothing could be indexed"; a run started from the UI, a schedule
    or a sensor has no summary, so the index step leaves the same reason on the source's row
    (`bindery status`, the console) and in the step's log, as a failing stage does."""
    import os

    from assets.pipeline import STAGE_ASSETS
    from connectors.config import load_config
    from connectors.store import DocumentStore

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("a.txt", "b.txt"):
        (corpus / name).write_bytes(os.urandom(2000))
    config_path = _config(tmp_path, corpus)
    result = dg.materialize(STAGE_ASSETS, partition_key="docs", instance=_instance(),
                            resources=resources(config_path), raise_on_error=False)
    assert result.success  # two broken files are below the check's floor: a warning, not a failure
    store = DocumentStore(load_config(config_path).database_url)
    row = store.get_source("docs")
    error = row.last_error if row else None
    assert error is not None and error.startswith("nothing could be indexed: none of the 2 documents")
