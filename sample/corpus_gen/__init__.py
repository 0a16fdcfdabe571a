"""Builders for the sample corpus that sample/make_corpus.py writes, one module a kind of document.

Not named `corpus`: sample/corpus/ is the generated output. Every builder writes fixed bytes
(fixed PDF ids and dates, MIME boundaries, zip timestamps, seeded random bytes), so a rerun
reproduces the committed corpus exactly.

- pdf_layout: the shared PDF writer (FlowPdf, word wrap, fixed metadata)
- pdfs: catalogue, manuals, postmortem, handbook and the two-column newsletter
- html_pages: wiki pages inside the same site chrome
- markdown_docs: engineering docs (.md)
- text_notes: plain-text notes, one in latin-1
- emails: .eml messages, threaded and multipart (with a PDF attachment)
- office: the .docx policy
- broken: deliberately broken files for the dead-letter path
"""
