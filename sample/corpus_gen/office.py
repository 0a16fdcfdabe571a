"""The office document: the travel and expense policy (.docx, via python-docx).

python-docx stamps the zip entries with the current time; _normalise_zip rewrites them with a
fixed one so the bytes are reproducible.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def docx_expense_policy(out: Path) -> None:
    import datetime as dt

    import docx

    d = docx.Document()
    cp = d.core_properties
    fixed = dt.datetime(2024, 3, 1, 9, 0, 0)
    cp.author = "Northwind Robotics Finance"
    cp.last_modified_by = "Northwind Robotics Finance"
    cp.created = fixed
    cp.modified = fixed
    cp.last_printed = fixed
    cp.revision = 3
    cp.title = "Travel and expense policy 2024"

    d.add_heading("Travel and expense policy 2024", level=0)
    d.add_paragraph(
        "Owner: Finance department. Effective from 1 March 2024. This policy replaces the 2022 travel guideline."
    )
    d.add_heading("1. Scope", level=1)
    d.add_paragraph(
        "This policy applies to all employees and contractors of Northwind Robotics "
        "who travel for work, including field engineers visiting customer sites, "
        "sales staff and employees attending conferences or training."
    )
    d.add_heading("2. Booking travel", level=1)
    d.add_paragraph(
        "Book flights, trains and hotels through the company travel portal. Trains are "
        "preferred for journeys under five hours. Economy class is the standard for "
        "all flights; business class is allowed only for flights longer than eight "
        "hours and must be approved in advance."
    )
    d.add_paragraph(
        "Rental cars are allowed when public transport is impractical, for example for "
        "remote warehouse sites. Choose the smallest car that fits the equipment you "
        "carry."
    )
    d.add_heading("3. Hotel caps and meal allowances", level=1)
    d.add_paragraph(
        "The following limits apply per night and per day. Amounts above the hotel cap "
        "need a short justification in the expense claim."
    )
    rates = [
        ("City", "Hotel cap (EUR/night)", "Meals per day (EUR)"),
        ("Rotterdam", "160", "55"),
        ("Lyon", "140", "50"),
        ("Helsinki", "175", "60"),
        ("Munich", "180", "58"),
        ("Austin", "190", "65"),
        ("Other cities", "150", "50"),
    ]
    table = d.add_table(rows=len(rates), cols=3)
    table.style = "Table Grid"
    for r, row in enumerate(rates):
        for c, val in enumerate(row):
            table.cell(r, c).text = val
    d.add_heading("4. Receipts and submission", level=1)
    d.add_paragraph(
        "Submit receipts within 30 days of returning from the trip, using the Expensa "
        "app. Claims submitted later than 90 days after the trip are not reimbursed. "
        "Photos of receipts are accepted; keep the paper originals for six months."
    )
    d.add_heading("5. Approval limits", level=1)
    d.add_paragraph(
        "Your line manager approves expense claims up to EUR 2,500. Expenses above "
        "EUR 2,500 require approval from a vice president before they are paid."
    )
    d.add_heading("5.1 Corporate cards", level=2)
    d.add_paragraph(
        "Employees who travel more than six times a year receive a corporate card. "
        "Personal purchases on the corporate card are not allowed, and cash "
        "withdrawals are limited to EUR 200 per trip."
    )
    d.add_heading("6. Non-reimbursable expenses", level=1)
    for item in (
        "Fines for traffic or parking offences.",
        "Minibar and in-room entertainment.",
        "Upgrades that were not approved in advance.",
        ("Lost luggage that was not reported to the carrier."),
    ):
        d.add_paragraph(item, style="List Bullet")

    buf = io.BytesIO()
    d.save(buf)
    path = out / "policies/travel-expense-policy-2024.docx"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_normalise_zip(buf.getvalue()))


def _normalise_zip(data: bytes) -> bytes:
    """Rewrite a zip with fixed timestamps so the bytes are reproducible."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            zi = zipfile.ZipInfo(info.filename, date_time=(2024, 3, 1, 9, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            dst.writestr(zi, src.read(info.filename))
    return buf.getvalue()
