"""What the CLI prints for people: each command's `--json` answer rendered as text (tables, one-line
verdicts, what to do next). The answers of `sync` and `status` are built in `orchestration.summaries`."""

from __future__ import annotations

import time
from typing import Any

from assets.listing import CLASSES  # the change classes are the listing's; one definition
from assets.parse_stage import WARNINGS_SHOWN
from assets.parsing.ocr import PLACEHOLDER_WORDS
from connectors.lifecycle import FIRST_GENERATION


def eval_table(rep: Any) -> str:
    from evals.runner import format_table

    return format_table(rep)


def _indexed_cell(s: dict[str, Any]) -> str | int:
    """`status`'s indexed column: the live generation's count, and what waits for a sync split
    into documents it lacks and those it holds an older version of (the second are in the count)."""
    waiting = s.get("waiting") or 0
    if not waiting:
        return int(s["indexed"])
    stale = min(int(s.get("out_of_date") or 0), waiting)
    parts = [f"{waiting - stale:,} not yet indexed" if waiting > stale else "",
             f"{stale:,} out of date" if stale else ""]
    return f"{s['indexed']:,} ({', '.join(p for p in parts if p)}: waiting for a sync)"


def _ts(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "never"


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A plain fixed-width table (left-aligned text, right-aligned numbers), readable in any
    terminal and in a log file."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
               for i in range(len(headers))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return shown(str(v))


def shown(text: str) -> str:
    """`text` safe on a terminal line: control and format characters (a newline in a file name,
    a right-to-left override that makes a name read as another) as escapes, the rest as is."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _human_sync(r: dict[str, Any]) -> str:
    lines = []
    errors = r.get("errors", {})
    for name, c in r.get("sources", {}).items():
        what = ", ".join(f"{v} {k}" for k, v in c.items() if v) or "no items"
        if name in errors:  # listed, then failed in a later step: the counts are what it saw, not what it did
            what = f"FAILED (see below); listed {what}" if any(c.values()) else "FAILED (see below)"
        lines.append(f"source {name}: {what}")
    rc = r.get("recomputed", {})
    w = r.get("written", {})
    changed = any(rc.values()) or w.get("documents") or w.get("deleted")
    if changed:
        lines.append("recomputed: " + ", ".join(f"{k} {v:,}" for k, v in rc.items()))
        docs, chunks = w.get("documents", 0), w.get("chunks", 0)
        lines.append(f"indexes: {docs:,} document{'s' if docs != 1 else ''} written "
                     f"({chunks:,} chunk{'s' if chunks != 1 else ''}), {w.get('deleted', 0):,} removed")
    elif not errors:
        lines.append(_nothing_written(r.get("sources", {})))
    listed_gone = sum(c.get("deleted", 0) for name, c in r.get("sources", {}).items() if name in errors)
    if listed_gone:  # a failed source's listing swept them; its index step may not have run
        many = listed_gone != 1
        lines.append(f"{listed_gone:,} document{'s' if many else ''} deleted from failed sources "
                     f"{'are' if many else 'is'} already out of search (the listing swept the store); any the "
                     "indexes still hold leave them by the next sync that completes")
    lines += [f"source {name!r} is no longer configured: its {n:,} "
              f"{'documents are' if n != 1 else 'document is'} withheld from search and out of every generation's "
              "indexes (configured again, the next sync restores them; `bindery gc` deletes them for good)"
              for name, n in (r.get("removed_sources") or {}).items()]
    for src, checks in r.get("_checks", {}).items():
        for name, c in checks.items():
            if not c["passed"]:
                lines.append(f"check {name} [{src}]: {c['severity']}: {c['description']}")
    if warned := (r.get("parse_warnings") or {}).get("documents"):
        lines.append(f"parse warnings: {warned:,} document{'s' if warned != 1 else ''} read with a warning"
                     + (f" (the first {WARNINGS_SHOWN}):" if warned > WARNINGS_SHOWN else ":"))
        lines += [f"  {shown(x)}" for x in r["parse_warnings"].get("examples") or []]
    if r.get("dead_letters"):
        kept = r.get("kept_versions") or 0
        lines.append(f"dead letters: {r['dead_letters']} (see `bindery dlq`)" + (
            f"; {kept} of them keep{'s' if kept == 1 else ''} an earlier version searchable until the file reads "
            "well again (delete the file to withdraw it)" if kept else ""))
    lines += [f"warning: {w}" for w in r.get("warnings", [])]
    if r.get("redirect_pages"):
        lines.append(f"redirect pages: {r['redirect_pages']} (they only point at another page: kept, not indexed)")
    if r.get("index_pages"):
        lines.append(f"index pages: {r['index_pages']} (generated indexes of terms: kept, not indexed)")
    if r.get("site_files"):
        lines.append(f"site files: {r['site_files']} (a documentation build's own files: source copies, search "
                     "index, theme assets: kept, not indexed)")
    if r.get("truncated"):
        lines.append(f"warning: {r['truncated']} embedded {'texts were' if r['truncated'] != 1 else 'text was'} "
                     "longer than the embedding model reads; "
                     "their ends are in BM25 only (lower stages.chunk.max_tokens or stages.context.max_prefix_tokens)")
    if r.get("candidate") is not None:
        # a source that failed left the candidate without its documents: promote would refuse it
        then = ("is not complete: the next `bindery reindex` or `bindery sync` finishes it, then `bindery "
                "promote` judges it" if errors else "run `bindery promote` to judge and flip")
        lines.append(f"candidate generation: {r.get('candidate_name')} (id {r['candidate']}); {then}")
    live = r.get("generation")
    lines.append(f"{'live generation: ' + str(live) if live is not None else 'no live generation yet'}"
                 f"   ({r.get('seconds')} s)")
    return "\n".join(lines)


def _nothing_written(sources: dict[str, dict[str, int]]) -> str:
    """A sync that recomputed and wrote nothing: all unchanged, or changes the indexes did not
    hold (a deleted document that had never been indexed, a dead letter)."""
    if not any(v for c in sources.values() for k, v in c.items() if k != "unchanged"):
        return "nothing changed: nothing was recomputed"
    deleted = sum(c.get("deleted", 0) for c in sources.values())
    gone = (f" ({deleted} deleted document{' was' if deleted == 1 else 's were'} not in them)"
            if deleted else "")
    return f"nothing had to be recomputed; the indexes needed no change{gone}"


def _human_reindex(r: dict[str, Any]) -> str:
    if r.get("candidate") is None and "sources" not in r:  # nothing to rebuild
        return r.get("message") or "nothing to reindex"
    built = _human_sync(r)
    if r.get("candidate") is None:  # the first generation: built and live at once, nothing to promote
        *head, last = built.splitlines()
        return "\n".join([*head, str(r.get("message") or "the first generation is live"), last])
    if r.get("stale_index_fields"):  # the upgrade of a generation an older release wrote
        built = (f"the live generation's keyword index lacks {', '.join(r['stale_index_fields'])} "
                 f"(written by an older release): rebuilt\n{built}")
    promotion = r.get("promotion")
    if promotion is None:  # `reindex` without --promote: the candidate waits for `bindery promote`
        return built
    # `reindex --promote`: the gate's verdict replaces the "run `bindery promote`" hint and the
    # live generation the build started from
    lines = [ln for ln in built.splitlines() if not ln.startswith(("candidate generation:", "live generation:"))]
    lines.append(f"candidate generation: {r.get('candidate_name')} (id {r['candidate']}) built in {r.get('seconds')} s")
    return "\n".join([*lines, _human_promote(promotion)])


def _human_query(r: dict[str, Any]) -> str:
    lines = [f"generation {r['generation']} ({r['generation_name']})"]
    attr = (r.get("trace") or {}).get("attribution")
    if attr:  # a pasted reply: say whose message its attribution line made us look for
        who = " ".join(attr.get("names") or []) or attr.get("address") or attr.get("message_id") or "?"
        when = " ".join(x for x in (attr.get("day"), attr.get("time")) if x)
        lines.append(f"attribution line: {who}{', ' + when if when else ''} "
                     f"({attr.get('units', 0)} of their messages found)")
        if attr.get("index_outdated"):
            lines.append("  (this generation's keyword index predates attribution lines: `bindery reindex` "
                         "rebuilds it)")
    if not r["hits"]:
        lines.append(f"no results: {r.get('reason')}")
    for i, h in enumerate(r["hits"], 1):
        where = shown(" > ".join(h["heading_path"])) or "-"
        if mail := h.get("email"):  # a message: who wrote it and when, beside its subject
            where += " · " + shown(", ".join(x for x in (mail.get("from"), (mail.get("date") or "")[:10]) if x))
        page = f" p.{h['page']}" if h.get("page") else ""
        ranks = ", ".join(f"{k} #{v}" for k, v in h["ranks"].items())
        text = shown(" ".join(h["text"].split())[:160])  # a document's bidi or control characters, escaped
        lines.append(f"{i}. [{h['score']:.4f}] {h['source']}:{shown(h['doc'])}{page}  ({where})  [{ranks}]\n"
                     f"   {text}")
        # neighbour expansion: what the document says around the hit, one line per chunk in
        # document order (joined into one cut line, the farther chunk hid the adjacent one)
        for side in ("before", "after"):
            lines += [f"   {side}: " + shown(_clipped(" ".join(t.split()), 120)) for t in h.get(side) or ()]
    return "\n".join(lines)


def settings_yaml(settings: dict[str, Any]) -> str:
    """Dotted settings (`{"query.unit_weight": 0.3}`) as the YAML a configuration file takes, to
    paste as is (printed as a Python dict they could not be: a new-user pass)."""
    import yaml

    from evals.tune import set_dotted

    nested: dict[str, Any] = {}
    for dotted, value in settings.items():
        set_dotted(nested, dotted, value, create=True)
    return str(yaml.safe_dump(nested, sort_keys=False, default_flow_style=False)).rstrip()


def _clipped(text: str, width: int) -> str:
    """`text` cut to `width` characters, with an ellipsis when it was cut."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _gate_word(g: dict[str, Any]) -> str:
    ev = g["eval"]
    if ev.get("forced_by"):
        return f"forced by {ev['forced_by']}"
    if ev.get("passed") is None and g.get("built"):
        return "not judged yet"
    if ev.get("reasons") == [FIRST_GENERATION]:  # live by default, never measured (an operator pass)
        return "not judged (first generation)"
    return {True: "passed", False: "refused", None: "not judged"}[ev.get("passed")]


def _human_status(r: dict[str, Any]) -> str:
    gens = [[role.replace("_", " "), g["id"], g["name"], "built" if g.get("built") else g["status"],
             g["counts"].get("documents"), g["counts"].get("chunks"), f"{g['age_hours']:.1f} h", _gate_word(g)]
            for role, g in r["generations"].items() if g]
    blockers = r.get("sync_blockers") or []
    lines = ["generations"]
    lines += ["  " + x for x in table(["role", "id", "name", "status", "documents", "chunks", "age", "gate"],
                                      gens).splitlines()] if gens else [
        "  none yet" + ("" if blockers else ": run `bindery sync`")]
    if (cand := r["generations"].get("candidate")) and _gate_word(cand) == "refused":
        # it stays, and syncs keep writing to it, until one of these
        lines.append(f"  candidate {cand['name']} was refused by the gate: change the configuration and `bindery "
                     "reindex`, drop it with `bindery discard`, or `bindery promote --force --reason`")
    versions = {role: g["stage_versions"] for role, g in r["generations"].items() if g}
    if versions:
        stages = list(next(iter(versions.values())))
        lines += ["", "stage versions"]
        lines += ["  " + x for x in table(["stage", *versions],
                                          [[st, *(v.get(st) for v in versions.values())] for st in stages]
                                          ).splitlines()]
    srcs = [[name, s["kind"], s["documents"],
             _indexed_cell(s),
             _ts(s["last_good_listing_at"]),
             None if s["lag_p50_s"] is None else f"{s['lag_p50_s']}/{s['lag_p95_s']} s", s["last_error"] or "-"]
            for name, s in r["sources"].items()]
    lines += ["", "sources"]
    lines += ["  " + x for x in table(["source", "kind", "documents", "indexed", "last good listing",
                                       "lag p50/p95", "last error"], srcs).splitlines()]
    # the store's count: a source no longer configured keeps its rows until `bindery gc`
    gone = sum((r.get("removed_sources") or {}).values())
    lines += ["", f"documents {r['documents']:,}" + (f" ({gone:,} of sources no longer configured)" if gone else "")
                  + f"   chunks (live) {r['chunks']:,}   dead letters {r['dead_letters']:,}"
                  + ("  (see `bindery dlq`)" if r["dead_letters"] else "")]
    for name, s in r["sources"].items():
        for p in s.get("stopped_parsing") or []:
            runs = "a run" if p["deaths"] == 1 else f"{p['deaths']} runs"
            then = ("parses it once more; if that run dies on it too, it becomes a dead letter" if p["deaths"] == 1
                    else "makes it a parse-killed dead letter without parsing it")
            lines += ["", f"source {name!r}: {runs} died while parsing {shown(p['doc'])}: the next sync {then}"]
    if blockers:
        lines += ["", *(f"a sync would stop now: {b}" for b in blockers)]
    if r.get("live_outdated"):
        lines += ["", _outdated_line(r)]
    if (other := r.get("candidate_outdated")) and (cand := r["generations"].get("candidate")):
        lines += ["", f"candidate {cand['name']} was built for other settings than the configuration ("
                      f"{'; '.join(other['settings'])}): promoted, it goes live with them, and the next `bindery "
                      "reindex` builds the configuration's (copy them into bindery.yaml to keep them)"
                  if other["settings"] else
                  f"candidate {cand['name']} was built under other stage versions than the configuration's "
                  f"(stages {', '.join(other['stages'])}: a release changed them, not bindery.yaml): the next "
                  "`bindery reindex` builds the configuration's"]
    for name, n in (r.get("removed_sources") or {}).items():
        docs = f"{n:,} document{'s' if n != 1 else ''}"
        # with no source configured at all a sync refuses to run (a configuration emptied by
        # mistake must not withdraw the whole index), so nothing is withheld until gc or a source
        lines += ["", f"source {name!r} is no longer configured: a sync withholds its {docs} from search and every "
                      "generation's indexes (configured again, the next sync restores them; `bindery gc` deletes "
                      "them for good)" if r["sources"] else
                      f"source {name!r} is no longer configured and no other is: its {docs} stay searchable (a sync "
                      "refuses to run without sources; `bindery gc` deletes them for good)"]
    if r["events"]:
        lines += ["", "recent events"]
        lines += [f"  {_ts(e['at'])}  {e['kind']}: {e['message']}" for e in r["events"]]
    return "\n".join(lines)


def _outdated_line(r: dict[str, Any]) -> str:
    out = r["live_outdated"]
    what = ", ".join([*(f"stage {st}" for st in out["stages"]),
                      *([f"keyword-index fields {', '.join(out['index_fields'])}"] if out["index_fields"] else [])])
    cand = r["generations"].get("candidate")
    if cand and out.get("candidate_current"):
        if _gate_word(cand) == "refused":  # said above the table: what to do with it
            state = "built and was refused by the gate (above)"
        else:
            state = "built: `bindery promote` judges it" if cand.get("built") else "building"
        step = f"candidate {cand['name']} is {state}"
    elif cand:
        step = (f"candidate {cand['name']} was built for other settings (below): `bindery reindex` builds one "
                "for the current configuration in its place")
    elif out.get("previous_current") and (prev := r["generations"].get("previous")):
        step = (f"the previous generation {prev['name']} was built for it: `bindery promote --candidate "
                f"{prev['id']}` brings it back, with no rebuild")
    else:
        step = "`bindery plan reindex` shows the cost, `bindery reindex` builds it beside live"
    return (f"live generation differs from the current configuration and release in: {what}; syncs keep "
            f"writing at live's versions ({step})")


def _human_dlq(r: Any) -> str:
    if isinstance(r, dict):  # retry: its own line, then what the sync behind it did
        head = (f"retried {r['retried']}, resolved {r['resolved']}"
                + (f"; still failing: {', '.join(r['still_failing'])}" if r["still_failing"] else ""))
        return head + ("\n" + _human_sync(r["sync"]) if r.get("sync") else "")
    if not r:
        return "dead-letter table is empty"
    if isinstance(r, DeadLetterDetail):  # `dlq list --doc`: every word of the error, to fix the file by
        return "\n\n".join(f"{shown(d['source'])}:{shown(d['doc'])}\n  stage {d['stage']}, reason {d['reason']}, "
                           f"at {_ts(d['at'])}\n" + "\n".join("  " + shown(ln) for ln in d["error"].splitlines())
                           for d in r)
    errors = [" ".join(d["error"].split()) for d in r]
    out = table(["at", "source", "document", "stage", "reason", "error"],
                [[_ts(d["at"]), d["source"], _shortened(d["doc"]), d["stage"], d["reason"], _clipped(e, 100)]
                 for d, e in zip(r, errors, strict=True)])
    if any(len(e) > 100 for e in errors):
        out += "\n(errors cut to 100 characters: `bindery dlq list --doc PATH` shows a document's whole)"
    return out


class DeadLetterDetail(list[dict[str, Any]]):
    """`bindery dlq list --doc`'s rows: the same JSON as the list, read by a person one by one."""


def _shortened(path: str, width: int = 80) -> str:
    """A path cut in the middle to `width` characters: one 1,119-character name made every row of
    the table wider than any terminal (a robustness pass). `--json` has it whole."""
    if len(path) <= width:
        return path
    keep = width - 1
    return f"{path[: keep // 2]}…{path[len(path) - (keep - keep // 2):]}"


def _gate_text(rep: dict[str, Any]) -> list[str]:
    from evals.gate import GateReport, format_gate

    if not rep:
        return []
    if "metric" not in rep:  # a gate that did not run (e.g. forced without an eval set)
        return [f"  - {reason}" for reason in rep.get("reasons") or []]
    return format_gate(GateReport.from_json(rep)).splitlines()


def _human_promote(r: dict[str, Any]) -> str:
    lines = _gate_text(r.get("report") or {})
    if r.get("promoted"):
        forced = " (FORCED)" if r.get("forced") else ""
        lines.append(f"promoted{forced}: generation {r.get('live')} is live, {r.get('previous')} kept as previous "
                     "(`bindery rollback` to go back)")
    else:
        lines.append(f"not promoted: generation {r.get('live')} stays live")
    return "\n".join(lines + [f"warning: {w}" for w in r.get("warnings") or []])


def _human_rollback(r: dict[str, Any]) -> str:
    return "\n".join([f"rolled back: generation {r.get('live')} is live again; generation {r.get('previous')} is kept "
                      "as previous (`bindery rollback` again returns to it)",
                      *(f"warning: {w}" for w in r.get("warnings") or [])])


def _human_discard(r: dict[str, Any]) -> str:
    d = r["discarded"]
    return (f"discarded candidate {d['name']} (generation {d['id']}): its indexes are gone; the parses, chunks "
            "and embeddings it filled stay for a later reindex (`bindery gc` removes what nothing uses)")


def _human_eval(r: dict[str, Any]) -> str:
    return f"generation {r['generation']} ({r['generation_name']}), {r['cases']} cases\n{r['_table']}"


def _human_plan(r: dict[str, Any]) -> str:
    if r.get("message"):
        return str(r["message"])
    new = r.get("new_generation")
    lines = [f"plan for a {r['kind']} into {', '.join(r['generations'])}"
             + ("" if not new else " (a new generation)" if r["generations"] == [new] else f" ({new} is new)")]
    rows, failing = [], []
    for name, s in r["sources"].items():
        guard = s["delete_guard"]
        if s.get("error"):  # the listing failed, or nothing would be searchable: said in full below
            failing.append(f"error [{name}]: the sync would fail: {s['error']}")
        verdict = "FAILS (see below)" if s.get("error") else (
            "ok" if guard["safe"] else f"ABORTS: {guard['reason']}")
        rows.append([name, s["listed"], *(s["changes"].get(k, 0) for k in CLASSES), verdict])
    lines += ["", *table(["source", "listed", *CLASSES, "outcome"], rows).splitlines(), *failing]
    lines += _planned_dead_letters(r)
    if (scans := r.get("scans_estimated") or {}).get("documents"):
        docs, pages = scans["documents"], scans["pages"]
        lines += ["", f"{docs:,} document{'s' if docs != 1 else ''} hold{'s' if docs == 1 else ''} {pages:,} scanned "
                      f"page{'s' if pages != 1 else ''} to OCR, which the plan does not read (seconds a page): "
                      f"the context and embed counts and the chunks to write take each such page for "
                      f"{PLACEHOLDER_WORDS} words of text, cut at the configured chunk size (within about 20 % of "
                      "the chunks a real scanned page gives); `bindery plan --ocr` reads them for exact counts"]
    est = r["estimate"]
    # every run lists whatever changed: its time is in the total, so it has its row
    listing = [["listing", sum(s["listed"] for s in r["sources"].values()), "", "entries", est["by_stage"]["listing"]]
               ] if "listing" in est["by_stage"] else []
    stage_rows = listing + [[st, c["compute"], c["cached"], c["unit"], est["by_stage"].get(st)]
                            for st, c in r["stages"].items()]
    lines += ["", *table(["stage", "compute", "cached", "unit", "est. seconds"], stage_rows).splitlines()]
    w = r["written"]
    # with scanned pages unread the chunks are an estimate (7 a page): said so where they are counted
    about = "about " if (r.get("scans_estimated") or {}).get("documents") else ""
    lines += ["", f"indexes: {w['documents']:,} document{'s' if w['documents'] != 1 else ''} to write "
                  f"({about}{w['chunks']:,} chunk{'s' if w['chunks'] != 1 else ''}), {w['deleted']:,} to remove"]
    for name, n in (r.get("removed_sources") or {}).items():
        docs, held = f"{n:,} document{'s' if n != 1 else ''}", (r.get("removed_sources_indexed") or {}).get(name, n)
        lines.append(f"source {name!r} is no longer configured: the {r['kind']} withholds its {docs} from search "
                     f"and takes the {held:,} still indexed out of every generation's indexes (`bindery gc` then "
                     "removes them)" if held else
                     f"source {name!r} is no longer configured: its {docs} {'are' if n != 1 else 'is'} withheld "
                     "from search and out of every generation's indexes already (`bindery gc` removes "
                     f"{'them' if n != 1 else 'it'} from the store)")
    total, known = est["seconds"], sum(est["by_stage"].values())
    guess = f"about {total:,.0f} s" if total is not None else f"unknown, more than {known:,.0f} s" if known >= 1 \
        else "unknown"
    lines.append(f"estimated time: {guess}"
                 + (f"; {est['note']}" if est.get("note") else ""))
    llm = r.get("llm")
    if llm:
        lines.append(f"LLM ({llm['model']}): {llm['calls']:,} calls, {llm['input_tokens']:,} input + "
                     f"{llm['cache_write_tokens']:,} cache-write + {llm['cached_input_tokens']:,} cached input + "
                     f"{llm['output_tokens']:,} output tokens, about ${llm['cost_usd']:,.2f}")
    lines.append(f"(planned in {r['seconds']} s; nothing was written)")
    return "\n".join(lines)


def _planned_dead_letters(r: dict[str, Any], shown_per_source: int = 5) -> list[str]:
    """The plan's documents that would land in the dead-letter table, a few named per source."""
    lines: list[str] = []
    for name, s in r["sources"].items():
        dl = s.get("dead_letters") or {}
        if not dl.get("count"):
            continue
        reasons = ", ".join(f"{k} {n}" for k, n in sorted(dl["by_reason"].items()))
        n = dl["count"]
        lines.append(f"{name}: {n} document{'s' if n != 1 else ''} would be dead-lettered ({reasons}):")
        lines += [f"  {shown(e['path'])}: {e['stage']} {e['reason']}: {shown(e['error'])[:160]}"
                  for e in dl["examples"][:shown_per_source]]
        if n > shown_per_source:
            lines.append(f"  ... and {n - shown_per_source} more (`bindery plan --json` lists {len(dl['examples'])})")
    return ["", *lines] if lines else []


def _human_evalset(r: dict[str, Any]) -> str:
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(r["by_kind"].items())) or "none"
    whose = (f"documents {', '.join(r['principals'])} may read" if r.get("principals")
             else "every document, whatever its ACL (--principal drafts from what a principal may read)")
    return (f"drafted {r['cases']} questions ({kinds}; {r['provider']}) into {r['out']}\n"
            f"from {whose}\n"
            "the file quotes those documents and is readable by you alone; once it is gate.queries, the gate's "
            "reports show its questions to operators\n"
            "review them (fix or delete), then set gate.queries to the file")


def _human_verify(r: dict[str, Any]) -> str:
    """One line per generation: consistent, or each kind of drift with its count."""
    lines = []
    for name, g in r.get("generations", {}).items():
        problems = [f"{k.replace('_', ' ')} {v:,}" for k, v in g.items()
                    if k not in ("chunks", "consistent", "repaired", "pending") and isinstance(v, int) and v]
        if g.get("unreadable"):  # one index cannot be opened at all: nothing to count
            problems.insert(0, f"an index cannot be opened ({g['unreadable']})")
        state = "consistent" if g.get("consistent") else "DRIFTED: " + ", ".join(problems)
        mark = " (repaired)" if g.get("repaired") else ""
        if not g.get("consistent") and (n := g.get("pending")):  # what a stopped sync leaves drifted
            mark += f"; {n:,} of its documents changed since their indexing there"
        lines.append(f"{name}: {g.get('chunks', 0):,} chunks, {state}{mark}")
    if not lines:
        return "no generations to verify"
    repaired = any(g.get("repaired") for g in r["generations"].values())
    if r.get("consistent"):
        verdict = "store and indexes are consistent"
    else:
        verdict = "store and indexes had drifted; rebuilt" if repaired else "store and indexes drifted"
    return "\n".join([*lines, verdict])


def _human_gc(r: dict[str, Any]) -> str:
    dropped = r.get("dropped") or []
    gens = (f"dropped {len(dropped)} expired generation{'s' if len(dropped) != 1 else ''}: {', '.join(dropped)}"
            if dropped else "no expired generations to drop")
    rows = {k: v for k, v in (r.get("caches") or {}).items() if v}
    caches = ("removed orphaned cache rows: " + ", ".join(f"{k} {v:,}" for k, v in rows.items())
              if rows else "no orphaned cache rows")
    removed = [f"removed the {n:,} documents of source {name!r}, which is no longer configured"
               for name, n in (r.get("removed_sources") or {}).items()]
    trials = [f"removed {n:,} trial configuration file{'s' if n != 1 else ''} of `bindery tune`"
              for n in [r.get("tune_configs") or 0] if n]
    return "\n".join([gens, *removed, caches, *trials, *(f"warning: {w}" for w in r.get("warnings") or [])])


def _human_hash_key(r: dict[str, str]) -> str:
    lines = [f"key:  {r['key']}   (give it to the caller; it is stored nowhere)"] if "key" in r else []
    return "\n".join([*lines, f"hash: {r['hash']}", "put the hash under query.auth.api_keys in the configuration"])


_HUMAN: dict[str, Any] = {
    "sync": _human_sync, "reindex": _human_reindex, "eval": _human_eval, "query": _human_query,
    "status": _human_status, "dlq": _human_dlq, "promote": _human_promote, "rollback": _human_rollback,
    "discard": _human_discard,
    "plan": _human_plan, "evalset": _human_evalset, "verify": _human_verify, "gc": _human_gc,
    "hash-key": _human_hash_key,
}


def human(command: str, r: Any) -> str:
    """What a person reads: one renderer per command; commands without one print indented JSON."""
    render = _HUMAN.get(command)
    if render is not None:
        return str(render(r))
    import json

    return json.dumps(r, indent=2, default=str)
