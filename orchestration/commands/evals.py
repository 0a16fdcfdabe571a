"""The commands over eval sets: `eval` (one generation's metrics), `tune` (a search of retrieval
settings on the gate's eval set) and `evalset draft` (proposed questions for a person to review)."""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectors.config import BinderyConfig
from connectors.errors import BinderyError, UsageError
from orchestration import report
from orchestration.commands.common import check_queries, partitions_of, queries_named, searchable_generation, store_for

if TYPE_CHECKING:
    from connectors.store import ChunkRecord, DocumentRecord, DocumentStore, GenerationRecord

__all__ = ["cmd_eval", "cmd_evalset", "cmd_tune"]


def cmd_eval(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    from evals.evalset import load_eval_set, resolve_source_prefixes
    from evals.promotion import evaluate

    check_queries(cfg, a.queries)
    store = store_for(cfg)
    gen = searchable_generation(cfg, store, a.generation)
    with queries_named(a.queries):  # a gold document it also excludes, written with and without its source
        resolve_source_prefixes(load_eval_set(path := a.queries or str(cfg.gate.queries)),
                                ((d.source, d.external_id) for d in store.documents()), path)
    rep = evaluate(cfg, store, gen, queries=a.queries)
    return {"generation": gen.id, "generation_name": gen.name, **rep.to_json(),
            "_table": report.eval_table(rep)}


def cmd_tune(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any] | None:
    """Search query-time retrieval settings on the eval set (see `evals.tune`); store a `tune`
    event with every trial, print the trials table (or return it with --json)."""
    from evals.tune import DEFAULT_SPACE, format_trials, parse_budget, split_space, tuning_split
    from orchestration.source_locks import sources_held
    from orchestration.tuning import ran_during_tune, tune_generations, tune_query_time

    check_queries(cfg, a.queries)
    store = store_for(cfg)
    gen = searchable_generation(cfg, store, a.generation)
    seed = cfg.tune.seed if a.seed is None else a.seed
    with queries_named(a.queries):  # as above, and a checking half with nothing in it
        tuning_split(cfg, store.documents(), a.queries, seed)
    budget = parse_budget(a.budget) if a.budget else None
    ingestion, _ = split_space(cfg.tune.space or DEFAULT_SPACE)
    built = None
    if (ingestion or a.build) and gen.status != "live":
        raise UsageError("tune --generation: ingestion settings and --build are tried against the live "
                         "generation (leave --generation out)")
    # no sync writes the sources while the trials measure them: every trial sees one corpus
    with sources_held(cfg, partitions_of(cfg, None)) as held:
        if ingestion or a.build:
            result, built = tune_generations(cfg, store, gen, build=a.build, budget=budget, seed=a.seed,
                                             queries=a.queries)
        else:
            result = tune_query_time(cfg, store, gen, budget=budget, seed=a.seed, queries=a.queries)
        result.warnings.extend(ran_during_tune(held))
    out = result.to_json()
    out["built"] = {"id": built.id, "name": built.name} if built else None
    best = out["best"]
    store.add_event("tune", f"{len(result.trials)} trials on generation {gen.name}; best "
                    f"{best['settings']} (tune {result.metric} {best['tune'][result.metric]:.3f}, "
                    f"check {best['check'][result.metric]:.3f})", details={**out, "generation": gen.id})
    if a.json:
        return {"generation": gen.id, **out}
    print(format_trials(result))
    for w in result.warnings:
        print(f"warning: {w}")
    where = cfg.config_path or "bindery.yaml"
    if built:
        print(f"built candidate {built.name}: copy these settings into {where}, then `bindery promote` "
              f"(the gate judges it)\n{report.settings_yaml(best['settings'])}")
    elif a.build:
        changed = {k: v for k, v in best["settings"].items() if result.trials[0].settings.get(k) != v}
        print(f"the best trial changes only query-time settings: nothing to build; set them in {where} (they "
              f"take effect without a new generation)\n{report.settings_yaml(changed)}" if changed
              else "live, as the configuration stands, scored best: nothing to build")
    return None


def cmd_evalset(cfg: BinderyConfig, a: argparse.Namespace) -> dict[str, Any]:
    """`bindery evalset draft`: proposed eval questions from the live generation's chunks, into a
    JSONL file for a person to review (it never touches gate.queries)."""
    from collections import Counter
    from pathlib import Path

    from assets.index_stage import indexed_chunks
    from connectors.acl import allows
    from evals.draft import draft_cases

    out = Path(a.out)
    if a.out == "-":
        raise UsageError("--out -: the draft is a file to review and keep, not output; give its path")
    try:
        _check_out(out, force=bool(a.force))
    except OSError as e:  # a name too long, a folder that cannot be read
        raise UsageError(f"--out {out}: cannot write there: {e.strerror or e}") from None
    store = store_for(cfg)  # a data_dir that holds nothing is said before --out's folder is made
    try:  # before any drafting (an LLM writer spends money): a place the file cannot go is a usage error
        out.parent.mkdir(exist_ok=True)  # one missing folder at most (`_check_out`)
        if not os.access(out.parent, os.W_OK | os.X_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write there: {e.strerror or e}") from None
    gen = searchable_generation(cfg, store, "live")
    every = store.documents()
    documents = [d for d in every if a.principal is None or allows(d.acl, a.principal)]
    chunks = indexed_chunks(store, gen, documents)  # the text the live generation serves, no other
    held = {c.doc_id for c in chunks}
    documents = [d for d in documents if d.doc_id in held]
    # a path two sources both hold is named `source:path`, as `bindery query` prints it: by the
    # path alone their chunks were drafted as one document and either file answered its questions
    paths = Counter(d.external_id for d in documents)
    docs = {d.doc_id: d.external_id if paths[d.external_id] == 1 else f"{d.source}:{d.external_id}" for d in documents}
    if a.principal is not None:  # the questions and their answers are the documents' own words
        chunks = _readable_chunks(store, gen, chunks, every, a.principal)
    by_doc: dict[str, list[ChunkRecord]] = {}
    for c in chunks:
        by_doc.setdefault(docs[c.doc_id], []).append(c)
    writer = None
    if cfg.stages.context.provider == "anthropic":
        from connectors.questions import AnthropicQuestionWriter

        writer = AnthropicQuestionWriter(cfg.stages.context)
    try:
        replies = _reply_pairs(cfg, store, gen, documents, docs)
        cases = draft_cases(by_doc, max_cases=a.max, writer=writer, replies=replies)
    finally:
        if writer is not None:
            writer.close()
    if not cases:  # an empty set is no gate (`promote` refuses it): say so rather than write one
        whose = f"that {', '.join(map(repr, a.principal))} may read" if a.principal else "the live generation serves"
        raise BinderyError(f"no question could be drafted from the {len(by_doc)} document(s) {whose}: too "
                           "little text with titles, headings or identifiers to ask about; nothing was "
                           f"written to {out} (write questions by hand: docs/eval-format.md)")
    try:
        _write_private(out, "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write it: {e.strerror or e}") from None
    return {"out": str(out), "cases": len(cases), "by_kind": dict(Counter(c["category"] for c in cases)),
            "provider": "anthropic" if writer is not None else "offline", "generation": gen.id,
            "principals": a.principal}


def _reply_pairs(cfg: BinderyConfig, store: DocumentStore, gen: GenerationRecord,
                 docs: list[DocumentRecord], by_id: dict[str, str]) -> list[tuple[str, str]]:
    """(reply, the message it replies to) among the corpus's e-mails, named as `by_id` names
    documents, from the parse metadata the index stage reads (`assets.index_stage.message_keys`)."""
    from assets.index_stage import message_keys
    from assets.runtime import Runtime

    keys = message_keys(Runtime(cfg, store), docs, gen.stage_versions["parse"])
    doc_of_message = {mk.message_id: by_id[did] for did, mk in keys.items() if mk.message_id}
    return [(by_id[did], doc_of_message[mk.reply_to]) for did, mk in keys.items()
            if mk.reply_to in doc_of_message and doc_of_message[mk.reply_to] != by_id[did]]


def _readable_chunks(store: DocumentStore, gen: GenerationRecord, chunks: list[ChunkRecord],
                     documents: list[DocumentRecord], principal: str) -> list[ChunkRecord]:
    """The chunks `principal` may read whole: an AsciiDoc page's chunks hold the text of the files
    its parse read in place (`included`), each of which must be readable too, as the query service
    checks. Judged by the parse the chunks were cut from, not the page's current record: a page
    whose new content failed to parse keeps older chunks, and what they included."""
    from assets.index_stage import cut_heads, included_ids
    from connectors.acl import allows

    by_id = {d.doc_id: d for d in documents}
    by_doc: dict[str, list[ChunkRecord]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    heads = cut_heads(store, {did: (by_id[did], cs) for did, cs in by_doc.items()}, gen.stage_versions["parse"])
    ok = {did for did in by_doc if all(dep in by_id and allows(by_id[dep].acl, principal)
                                        for dep in included_ids(by_id[did], heads.get(did, (None, {}))[1]))}
    return [c for c in chunks if c.doc_id in ok]


def _check_out(out: Path, *, force: bool) -> None:
    """What `--out` must be before anything is drafted: not a folder, not a device, pipe or link,
    not an existing file unless `force`, in a folder that exists or whose own folder does."""
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder: give the path of a JSONL file to write")
    if (out.is_symlink() or out.exists()) and not stat.S_ISREG(out.lstat().st_mode):
        # a device, a pipe or a link: writing "through" it would truncate (and chmod) what it
        # names, or block on a pipe nobody reads
        raise UsageError(f"--out {out} exists and is not a regular file (a device, a pipe or a link): "
                         "give the path of a JSONL file to write")
    if out.exists() and not force:
        raise UsageError(f"--out {out} already exists (pass --force to overwrite it)")
    # one missing folder is made (`--out evals/draft.jsonl` in a new project), as `mkdir` would;
    # a chain of them is a mistyped path, never made (it made /nonexistent/dir: an operator pass)
    for folder in (out.parent, out.parent.parent):
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"--out {out}: {folder} is a file, not a folder")
    if not out.parent.is_dir() and not out.parent.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent.parent} does not exist")


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner alone, as data_dir is: a draft quotes the
    documents it was made from, whatever their ACLs. Written beside it and renamed over it, so a
    file `--force` replaces is a new file of that mode (never the old one's inode, nor whatever a
    link put at that path since the check), and an interrupted write leaves the old file whole."""
    # a short name: the target's own may be as long as the file system allows
    fd, tmp = tempfile.mkstemp(prefix=".draft-", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
