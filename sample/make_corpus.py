"""Generate the Bindery sample corpus into sample/corpus/.

The corpus is the internal documentation of a fictional company, Northwind Robotics: product
catalogues and manuals (PDF), wiki pages (HTML), engineering docs (Markdown), notes (plain text,
one in latin-1), mail (.eml), a policy (.docx) and a few deliberately broken files under broken/.
All text is original and written for this repository.

Deterministic: re-running produces byte-identical files (fixed PDF ids and dates, fixed MIME
boundaries, fixed zip timestamps in the .docx, seeded random bytes).

This file is the entry point; the builders live in corpus_gen/, one module a kind of document.

    .venv/bin/python sample/make_corpus.py [--out DIR [--force]]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from corpus_gen.broken import broken
from corpus_gen.emails import emails
from corpus_gen.html_pages import html_pages
from corpus_gen.markdown_docs import markdown_docs
from corpus_gen.office import docx_expense_policy
from corpus_gen.pdfs import (
    pdf_catalog,
    pdf_dock_install,
    pdf_newsletter,
    pdf_operator_manual,
    pdf_postmortem,
    pdf_safety_handbook,
)
from corpus_gen.text_notes import text_notes

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "corpus")
    ap.add_argument(
        "--force",
        action="store_true",
        help="replace a non-empty --out folder other than sample/corpus",
    )
    args = ap.parse_args(argv)
    out: Path = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        if out != HERE / "corpus" and not args.force:
            ap.error(f"{out} is not empty; pass --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True)

    pdf_catalog(out)
    pdf_operator_manual(out)
    pdf_dock_install(out)
    pdf_postmortem(out)
    pdf_safety_handbook(out)
    pdf_newsletter(out)
    html_pages(out)
    markdown_docs(out)
    text_notes(out)
    emails(out)
    docx_expense_policy(out)
    broken(out)

    files = sorted(p for p in out.rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in files)
    for p in files:
        print(f"{p.stat().st_size:>8}  {p.relative_to(out)}")
    print(f"{len(files)} files, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
