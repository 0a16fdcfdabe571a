"""Generate the Bindery sample corpus into sample/corpus/.

The corpus is the internal documentation of a fictional company, Northwind Robotics: product
catalogues and manuals (PDF), wiki pages (HTML), engineering docs (Markdown), notes (plain text,
one in latin-1), mail (.eml), a policy (.docx) and a few deliberately broken files under broken/.
All text is original and written for this repository.

Deterministic: re-running produces byte-identical files (fixed PDF ids and dates, fixed MIME
boundaries, fixed zip timestamps in the .docx, seeded random bytes).

    .venv/bin/python sample/make_corpus.py [--out DIR [--force]]
"""

from __future__ import annotations

import argparse
import io
import random
import shutil
import sys
import zipfile
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path
from textwrap import dedent, fill

import pymupdf

HERE = Path(__file__).resolve().parent
PDF_DATE = "D:20241015090000+00'00'"

# ---------------------------------------------------------------------------------------------
# PDF helpers
# ---------------------------------------------------------------------------------------------

A4 = pymupdf.paper_rect("a4")
MARGIN_X = 56
TOP = 72
BOTTOM = A4.height - 64


def wrap(text: str, width: float, fontname: str, fontsize: float) -> list[str]:
    """Greedy word wrap using the built-in font metrics."""
    lines: list[str] = []
    cur = ""
    for word in text.split():
        trial = f"{cur} {word}" if cur else word
        if pymupdf.get_text_length(trial, fontname=fontname, fontsize=fontsize) <= width or not cur:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return lines


class FlowPdf:
    """A tiny flowing-layout writer: headings, paragraphs, bullets, code, grid tables.

    Every page gets a running header line and a "Page N of M" footer (added at save time).
    A paragraph never splits across pages, so a sentence is always contiguous on one page.
    """

    def __init__(self, header: str, footer: str, title: str, author: str = "Northwind Robotics"):
        self.doc = pymupdf.open()
        self.header = header
        self.footer = footer
        self.title = title
        self.author = author
        self.page: pymupdf.Page = self.doc.new_page(width=A4.width, height=A4.height)
        self.y = float(TOP)
        self.width = A4.width - 2 * MARGIN_X

    def new_page(self) -> None:
        self.page = self.doc.new_page(width=A4.width, height=A4.height)
        self.y = float(TOP)

    def ensure(self, height: float) -> None:
        if self.y + height > BOTTOM:
            self.new_page()

    def lines(
        self,
        lines: list[str],
        fontname: str,
        fontsize: float,
        x: float,
        leading: float,
        color=(0, 0, 0),
    ) -> None:
        for line in lines:
            self.page.insert_text((x, self.y + fontsize), line, fontname=fontname, fontsize=fontsize, color=color)
            self.y += leading

    def title_block(self, text: str, subtitle: str | None = None) -> None:
        self.ensure(60)
        self.lines(wrap(text, self.width, "hebo", 20), "hebo", 20, MARGIN_X, 26)
        if subtitle:
            self.y += 2
            self.lines(
                wrap(subtitle, self.width, "helv", 11),
                "helv",
                11,
                MARGIN_X,
                15,
                color=(0.3, 0.3, 0.3),
            )
        self.y += 14

    def heading(self, text: str, level: int = 1) -> None:
        size = {1: 15, 2: 12.5, 3: 11}[level]
        self.ensure(size * 1.4 + 40)  # keep with at least a couple of body lines
        self.y += 6 if level == 1 else 3
        self.lines(wrap(text, self.width, "hebo", size), "hebo", size, MARGIN_X, size * 1.35)
        self.y += 4

    def para(self, text: str, fontname: str = "helv", fontsize: float = 10.5) -> None:
        text = " ".join(text.split())
        lines = wrap(text, self.width, fontname, fontsize)
        leading = fontsize * 1.38
        self.ensure(len(lines) * leading)
        self.lines(lines, fontname, fontsize, MARGIN_X, leading)
        self.y += 7

    def bullets(self, items: list[str], fontsize: float = 10.5, numbered: bool = False) -> None:
        leading = fontsize * 1.38
        for i, item in enumerate(items, 1):
            item = " ".join(item.split())
            lines = wrap(item, self.width - 18, "helv", fontsize)
            self.ensure(len(lines) * leading)
            mark = f"{i}." if numbered else "-"
            self.page.insert_text((MARGIN_X + 2, self.y + fontsize), mark, fontname="helv", fontsize=fontsize)
            self.lines(lines, "helv", fontsize, MARGIN_X + 18, leading)
            self.y += 2
        self.y += 6

    def code(self, text: str, fontsize: float = 9) -> None:
        lines = dedent(text).strip("\n").splitlines()
        leading = fontsize * 1.35
        h = len(lines) * leading + 10
        self.ensure(h)
        rect = pymupdf.Rect(MARGIN_X, self.y, MARGIN_X + self.width, self.y + h)
        self.page.draw_rect(rect, color=(0.8, 0.8, 0.8), fill=(0.95, 0.95, 0.95), width=0.5)
        self.y += 5
        self.lines(lines, "cour", fontsize, MARGIN_X + 6, leading)
        self.y += 12

    def table(
        self,
        header: list[str],
        rows: list[list[str]],
        col_widths: list[float],
        fontsize: float = 9.5,
        caption: str | None = None,
    ) -> None:
        """Draw a ruled grid; cells are written row by row, left to right."""
        row_h = fontsize * 2.1
        total_w = sum(col_widths)
        self.ensure(row_h * (len(rows) + 1) + (20 if caption else 0))
        if caption:
            self.lines([caption], "hebo", 10, MARGIN_X, 16)
            self.y += 2
        for r, cells in enumerate([header, *rows]):
            x = float(MARGIN_X)
            top = self.y
            if r == 0:
                self.page.draw_rect(
                    pymupdf.Rect(MARGIN_X, top, MARGIN_X + total_w, top + row_h),
                    color=None,
                    fill=(0.86, 0.89, 0.94),
                )
            for c, cell in enumerate(cells):
                rect = pymupdf.Rect(x, top, x + col_widths[c], top + row_h)
                self.page.draw_rect(rect, color=(0.2, 0.2, 0.2), width=0.6)
                font = "hebo" if r == 0 else "helv"
                self.page.insert_text(
                    (x + 5, top + row_h / 2 + fontsize * 0.35),
                    cell,
                    fontname=font,
                    fontsize=fontsize,
                )
                x += col_widths[c]
            self.y += row_h
        self.y += 12

    def save(self, path: Path) -> None:
        n = len(self.doc)
        for i in range(1, n + 1):
            page = self.doc[i - 1]
            page.insert_text((MARGIN_X, 40), self.header, fontname="helv", fontsize=8, color=(0.4, 0.4, 0.4))
            page.draw_line((MARGIN_X, 46), (A4.width - MARGIN_X, 46), color=(0.7, 0.7, 0.7), width=0.5)
            page.insert_text(
                (MARGIN_X, A4.height - 36),
                self.footer,
                fontname="helv",
                fontsize=8,
                color=(0.4, 0.4, 0.4),
            )
            label = f"Page {i} of {n}"
            w = pymupdf.get_text_length(label, fontname="helv", fontsize=8)
            page.insert_text(
                (A4.width - MARGIN_X - w, A4.height - 36),
                label,
                fontname="helv",
                fontsize=8,
                color=(0.4, 0.4, 0.4),
            )
        save_pdf(self.doc, path, self.title, self.author)


def save_pdf(doc, path: Path, title: str, author: str = "Northwind Robotics") -> None:
    doc.set_metadata(
        {
            "title": title,
            "author": author,
            "subject": "",
            "keywords": "",
            "creator": "Bindery sample corpus generator",
            "producer": "PyMuPDF",
            "creationDate": PDF_DATE,
            "modDate": PDF_DATE,
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    data = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    path.write_bytes(data)


# ---------------------------------------------------------------------------------------------
# PDFs
# ---------------------------------------------------------------------------------------------

MODELS = [
    # Model, Payload (kg), Battery (h), Top speed (m/s), Price (EUR)
    ["XR-3300", "25", "10.5", "1.2", "18,900"],
    ["XR-4471", "60", "8.5", "1.6", "34,500"],
    ["XR-5200", "120", "7.0", "1.4", "52,750"],
    ["XR-6010", "250", "6.5", "1.1", "78,200"],
    ["XR-7100", "500", "5.0", "0.9", "119,000"],
]


def pdf_catalog(out: Path) -> None:
    p = FlowPdf(
        "Northwind Robotics - XR Series Product Catalogue 2024",
        "Prices valid for orders placed between 1 March 2024 and 31 December 2024.",
        "XR Series Product Catalogue 2024",
    )
    p.title_block(
        "XR Series Product Catalogue 2024",
        "Autonomous mobile robots for warehouses, factories and hospital logistics",
    )
    p.heading("About the XR series")
    p.para("""The XR series is the Northwind Robotics family of autonomous mobile robots. Every
    model shares the same navigation stack, the Northwind Fleet OS (NWOS), and the same charging
    dock, so a customer can mix small tote carriers with heavy pallet movers in one fleet and
    manage all of them from a single fleet manager. Robots navigate with a 270 degree safety
    lidar and two depth cameras and do not need floor markers, reflectors or magnetic tape.""")
    p.para("""This catalogue lists the standard configuration of each model. Customer-specific
    top modules, such as conveyors, shelving lifts and roller beds, are quoted separately by the
    sales engineering team. All prices are list prices per robot, excluding VAT, delivery and
    on-site commissioning.""")
    p.heading("Model overview")
    p.table(
        ["Model", "Payload (kg)", "Battery (h)", "Top speed (m/s)", "Price (EUR)"],
        MODELS,
        [90, 90, 85, 110, 105],
        caption="Table 1. XR series standard configurations",
    )
    p.para(
        """Battery figures are measured at 70 percent of the rated payload on a flat concrete
    floor at 20 degrees Celsius, with opportunity charging disabled. Real runtimes depend on duty
    cycle, floor quality and ambient temperature.""",
        fontsize=9,
    )
    p.heading("Choosing a model")
    p.para("""Customers moving totes and small parcels between picking stations usually choose
    the compact XR-3300, which fits through standard 80 cm doorways and runs a full double shift
    on one charge. The XR-4471 is the best seller of the range and the default recommendation for
    mixed goods-to-person workflows. Sites that move roll cages, carts or half pallets should
    look at the XR-5200, while full pallet transport is covered by the XR-6010 and the XR-7100.""")
    p.para("""The XR-7100 is the only model certified for outdoor use between buildings. It carries
    an IP54 enclosure and heated lidar window, and it is sold with a mandatory annual service
    contract.""")
    p.heading("Service plans")
    p.table(
        ["Plan", "Response time", "Remote monitoring", "Price per robot/year (EUR)"],
        [
            ["Basic", "Next business day", "No", "1,200"],
            ["Standard", "8 business hours", "Yes", "2,650"],
            ["Premium", "4 hours, 24/7", "Yes", "4,900"],
        ],
        [90, 130, 120, 140],
        caption="Table 2. Service plans",
    )
    p.para("""The Standard plan includes two preventive maintenance visits per year. The Premium
    plan adds a guaranteed spare robot pool for fleets larger than 20 units and a named technical
    account manager.""")
    p.heading("Ordering and lead times")
    p.para("""Standard configurations ship within six weeks of order confirmation. Orders of more
    than 25 robots are scheduled with the production planning team in Eindhoven and may take up
    to twelve weeks. Volume discounts start at five units and are shown on the formal quote.""")
    p.save(out / "catalog/xr-series-catalogue-2024.pdf")


def pdf_operator_manual(out: Path) -> None:
    p = FlowPdf(
        "Northwind Robotics - XR-4471 Operator Manual - Revision C",
        "Document NW-MAN-4471-C. Internal and customer distribution.",
        "XR-4471 Operator Manual",
    )
    p.title_block("XR-4471 Operator Manual", "Revision C, valid for robots running NWOS v2.14 and later")
    p.heading("1. Safety instructions")
    p.para("""Read this chapter before operating the robot. The XR-4471 is designed to share aisles
    with people, but it relies on trained operators who keep the work area free of loose straps,
    film and cables. Never ride on the robot, never place a hand between the lift deck and the
    chassis, and never cover the safety lidar window.""")
    p.para("""The red emergency stop buttons are located on both long sides of the chassis. Pressing
    either button cuts power to the drive motors within 50 milliseconds and engages the
    mechanical brakes. To resume operation, release the button by turning it clockwise and
    confirm the restart on the touch panel.""")
    p.heading("1.1 Protective fields", level=2)
    p.para("""The robot continuously evaluates two protective fields. When an obstacle enters the
    warning field the robot slows to 0.3 m/s; when an obstacle enters the protective field the
    robot performs a controlled stop. Field sizes grow with speed and are configured by
    Northwind during commissioning; operators cannot change them.""")
    p.heading("2. Unpacking and first start")
    p.bullets(
        [
            "Remove the four transport screws marked in yellow from the lift deck before powering on.",
            (
                "Check the tilt indicator on the crate. If it has turned red, report the delivery to "
                "Northwind support before unpacking further."
            ),
            "Switch on the main battery isolator behind the rear service flap.",
            "Hold the power button for three seconds until the status ring turns white.",
        ],
        numbered=True,
    )
    p.para("""The first start takes about four minutes because the robot checks its sensors and
    downloads its site map from the fleet manager. Do not move the robot by hand during this
    time.""")
    p.heading("3. Configuration")
    p.para("""Most operational settings are pushed from the fleet manager and should not be edited
    on the robot itself. The following keys are relevant to operators and can be read on the
    touch panel under Settings, Fleet profile.""")
    p.bullets(
        [
            (
                "max_payload_kg: the heaviest load the robot accepts for a task. The factory value for "
                "the XR-4471 is 60 and may only be lowered, never raised."
            ),
            "speed_limit_mps: the site-wide speed cap, applied on top of zone limits.",
            "charge_threshold_pct: the battery level at which the robot goes to charge.",
            "lidar_timeout_ms: how long the safety controller waits for a lidar heartbeat.",
        ]
    )
    p.para("""When the weighing cells in the lift deck measure a load above max_payload_kg, the
    robot refuses the pick task and reports ERR-0x3C to the fleet manager. The load must be split
    before the task can be retried; overriding the limit is not possible.""")
    p.heading("4. Charging")
    p.para("""The XR-4471 charges on the CD-2 charging dock. Robots dock automatically when their
    battery drops below the configured threshold or when the fleet manager schedules an
    opportunity charge between tasks. A full charge from 10 to 100 percent takes 95 minutes;
    charging from 20 to 80 percent takes about 50 minutes.""")
    p.para("""Do not store the robot for more than 30 days without charging. For longer storage,
    charge the battery to 60 percent and switch off the main battery isolator.""")
    p.heading("5. Troubleshooting")
    p.para("""Errors are shown on the touch panel and in the fleet manager with a hexadecimal code.
    The most frequent codes for the XR-4471 are explained below. For all other codes, see the
    error code reference on the internal wiki.""")
    p.heading("5.1 ERR-0x1F lidar heartbeat lost", level=2)
    p.para("""ERR-0x1F indicates that no lidar heartbeat packet arrived within lidar_timeout_ms.
    The robot stops in place until the lidar reports again. First check that the lidar cable at
    connector J7 is seated, then restart the robot. If the error returns more than twice in one
    shift, request a lidar recalibration.""")
    p.heading("5.2 ERR-0x2A dock handshake failed", level=2)
    p.para("""ERR-0x2A is raised when the robot reaches the dock but the dock does not confirm the
    charging handshake. Clean the contact plate with a dry cloth and check that the dock status
    LED is green. The robot retries the handshake automatically before reporting the error.""")
    p.heading("5.3 ERR-0x41 battery cell imbalance", level=2)
    p.para("""ERR-0x41 means the battery management system measured a voltage difference of more
    than 80 mV between cells. Take the robot out of service and contact Northwind support; do not
    attempt to charge it on a dock.""")
    p.heading("6. Maintenance")
    p.para("""Wipe the lidar window and both camera lenses weekly with the supplied microfibre
    cloth. Check the drive wheels for embedded debris every month. Drive wheels are wear parts
    and should be replaced after 4,000 operating hours or when the tread depth falls below
    3 mm.""")
    p.save(out / "manuals/xr4471-operator-manual.pdf")


def pdf_dock_install(out: Path) -> None:
    p = FlowPdf(
        "Northwind Robotics - CD-2 Charging Dock - Installation Guide",
        "NW-INS-CD2 rev 2. Electrical work must be carried out by a qualified electrician.",
        "CD-2 Charging Dock Installation Guide",
    )
    p.title_block("CD-2 Charging Dock Installation Guide", "For installers and site facility teams")
    p.heading("Overview")
    p.para("""The CD-2 is the standard charging dock for all XR series robots. It delivers up to 40 A
    of charging current through a spring-loaded contact plate and talks to the approaching robot
    over a short-range infrared link. One dock can serve up to six robots in a typical
    two-shift operation, depending on the duty cycle.""")
    p.heading("Site requirements")
    p.bullets(
        [
            (
                "A dedicated 230 V single-phase circuit protected by a 16 A type C breaker and a "
                "30 mA residual current device."
            ),
            "A flat concrete floor with an unevenness of less than 3 mm over one metre.",
            "A wired network port or reliable Wi-Fi coverage within two metres of the dock.",
            "Ambient temperature between 5 and 35 degrees Celsius.",
        ]
    )
    p.para("""Keep at least 1.2 m of free floor in front of the dock and 0.3 m on each side. The
    robot approaches the dock in a straight line from the front and needs this space to align;
    pallets or bins parked in the approach zone are the most common cause of failed docking.""")
    p.heading("Mounting")
    p.para("""Place the dock against a wall or a fixed column with the contact plate facing the
    aisle. Mark the four anchor holes using the supplied template, drill 12 mm holes to a depth of
    90 mm and clean them with compressed air.""")
    p.para("""Insert the anchors and tighten the four M10 anchor bolts to 35 Nm. A dock that is not
    anchored will slowly move when robots push against it, which misaligns the contacts.""")
    p.heading("Electrical connection")
    p.para("""The electrician connects the mains supply to terminal block X1 inside the lower
    cover. Route the cable through the rear gland and tighten the gland so that the cable cannot
    be pulled out. Close the cover and torque the four cover screws before switching on the
    breaker.""")
    p.para("""After power-up the status LED blinks blue for about one minute while the dock loads
    its firmware, then turns solid green. A solid red LED after power-up means the dock measured
    a wiring fault; switch off the breaker and check the protective earth connection.""")
    p.heading("Pairing with the fleet manager")
    p.para("""Each dock has a label with its serial number and pairing code. In the fleet manager,
    open Infrastructure, Docks, Add dock, and enter both values. Give the dock a short
    identifier, such as D3, that matches the marking painted on the floor; operators use this
    identifier when they report problems.""")
    p.code("""
        nwctl dock add --serial CD2-004417 --pairing-code 7731-QX --id D3
        nwctl dock status D3
    """)
    p.heading("Acceptance test")
    p.para("""Send one robot to the dock ten times in a row from different directions. Docking must
    succeed in all ten attempts, and each handshake must complete in less than eight seconds.
    Record the results in the commissioning report and hand a copy to the site manager.""")
    p.save(out / "manuals/cd2-charging-dock-installation.pdf")


def pdf_postmortem(out: Path) -> None:
    p = FlowPdf(
        "Northwind Robotics - Incident postmortem INC-2041",
        "Blameless postmortem. Distribution: engineering, support, customer success.",
        "Postmortem INC-2041",
    )
    p.title_block(
        "Postmortem: INC-2041 fleet-wide stop at Kestrel Foods, Tilburg",
        "Severity SEV1. Incident commander: Priya Raman. Published 2024-09-09.",
    )
    p.heading("Summary")
    p.para("""On 3 September 2024, 14 XR-4471 units at the Kestrel Foods distribution centre in
    Tilburg stopped in the aisles during the morning shift. Every robot reported ERR-0x1F, lidar
    heartbeat lost, and stayed stopped until the fleet manager was restarted. Order picking at
    the site was degraded for 3 hours and 20 minutes. No person was hurt and no goods were
    damaged.""")
    p.heading("Impact")
    p.para("""Kestrel Foods processed about 2,900 fewer order lines than planned that morning and
    moved part of the picking to manual trolleys. Two outbound trucks left 45 minutes late. The
    customer contacted Northwind support at 07:12 local time; the incident was declared a SEV1 at
    07:20.""")
    p.heading("Timeline (all times CEST)")
    p.bullets(
        [
            "06:58 first ERR-0x1F alarm from robot XR4471-0031.",
            "07:04 all 14 robots in the fleet report ERR-0x1F within six minutes.",
            "07:20 incident declared SEV1, Priya Raman takes the incident commander role.",
            "08:35 engineers notice that heartbeat timestamps from the robots look stale.",
            "09:40 NTP service on the fleet manager corrected and the fleet manager restarted.",
            "10:18 last robot back in service; incident downgraded to SEV3 for monitoring.",
        ]
    )
    p.heading("Root cause")
    p.para("""The root cause was a clock skew of 2.8 seconds on the fleet manager NTP server. NWOS
    v2.14.2 had introduced a stricter check that compares the timestamp of each lidar heartbeat
    with the fleet manager clock. With the fleet manager clock running ahead, every heartbeat
    looked older than lidar_timeout_ms, and the safety controller stopped the robots.""")
    p.para("""The skew itself came from a firewall change two days earlier that blocked outbound
    NTP traffic from the customer's server VLAN. The fleet manager silently fell back to its
    local hardware clock, which drifted.""")
    p.heading("What went well")
    p.bullets(
        [
            "The robots failed safe: all of them stopped in place and none collided with anything.",
            "Support reached the on-site contact within eight minutes of the first call.",
        ]
    )
    p.heading("What went badly")
    p.bullets(
        [
            "Nothing alerted on the lost NTP synchronisation for two days.",
            (
                "The stricter heartbeat check in v2.14.2 was not behind a feature flag, so it could not "
                "be switched off remotely."
            ),
            (
                "It took more than an hour to connect ERR-0x1F with the clock, because the runbook only "
                "covered cabling and calibration."
            ),
        ]
    )
    p.heading("Action items")
    p.table(
        ["ID", "Action", "Owner", "Due"],
        [
            ["AI-1", "Tolerate heartbeat jitter and skew in NWOS", "T. Kowalczyk", "2024-09-10"],
            ["AI-2", "Alert when fleet manager NTP sync is lost", "P. Raman", "2024-09-20"],
            ["AI-3", "Add clock checks to the ERR-0x1F runbook", "D. Whitfield", "2024-09-13"],
            ["AI-4", "Put new safety checks behind feature flags", "M. Oyelaran", "2024-10-31"],
        ],
        [45, 245, 95, 80],
    )
    p.para("""AI-1 shipped as part of NWOS v2.14.3, which was rolled out to Kestrel Foods on
    10 September 2024 after a one-day canary on two robots.""")
    p.save(out / "reports/inc-2041-postmortem.pdf")


def pdf_safety_handbook(out: Path) -> None:
    p = FlowPdf(
        "Northwind Robotics - Site Safety Handbook for Field Engineers",
        "NW-HSE-007. Keep a printed copy in every field service vehicle.",
        "Site Safety Handbook for Field Engineers",
    )
    p.title_block(
        "Site Safety Handbook for Field Engineers",
        "Health, safety and environment guidance for work at customer sites",
    )
    p.heading("Purpose")
    p.para("""Field engineers spend most of their working time at customer sites that Northwind does
    not control. This handbook sets out the minimum rules that apply at every site, regardless of
    the customer's own rules. Where the customer's rules are stricter, follow the customer's
    rules.""")
    p.heading("Personal protective equipment")
    p.para("""Wear safety shoes with toe caps and a high-visibility vest at all times in operational
    areas. Wear cut-resistant gloves when you open a robot chassis or handle the contact plate of
    a dock. Hearing protection is required in areas marked with the blue ear symbol.""")
    p.heading("Working near robots in operation")
    p.para("""Before entering an aisle where robots are working, inform the site supervisor and
    place the zone in maintenance mode from the fleet manager. Robots then route around the zone.
    If maintenance mode is not available, limit robot speed in the zone instead: the maximum speed
    in pedestrian zones is 0.8 m/s for all XR models.""")
    p.para("""Never stand between a robot and a wall, rack or dock. Approach robots from the side,
    where the lidar sees you earliest, and never from directly behind a loaded robot.""")
    p.heading("Lockout and tagout")
    p.para("""Before opening a robot, press the emergency stop, switch off the main battery isolator
    and attach your personal padlock and tag. Wait two minutes for the drive capacitors to
    discharge. Only the person who attached the lock may remove it.""")
    p.heading("Batteries")
    p.para("""XR robots use lithium iron phosphate batteries. A damaged, swollen or hot battery must
    be moved to the outdoor quarantine area using the fire-resistant transport bag, and the
    incident must be reported through the safety portal within 24 hours. Do not ship a damaged
    battery by courier; the logistics team arranges dangerous goods transport.""")
    p.heading("Reporting incidents and near misses")
    p.para("""Report every incident and near miss, even when nobody was hurt. Near miss reports are
    anonymous by default and are reviewed every Monday by the health and safety committee. Serious
    injuries must be reported to the safety officer by phone immediately, then in writing.""")
    p.heading("Vehicles and driving")
    p.para("""Field service vehicles carry a first aid kit, a fire extinguisher rated for electrical
    fires, spill absorbent and the battery transport bag. Check the kit at the start of each week
    and log the check in the vehicle book. Drivers take a break of at least 15 minutes after every
    two hours of driving, and nobody drives to a site after a night shift of more than ten hours;
    book a hotel instead.""")
    p.para("""Secure robots and spare parts in the vehicle with the supplied straps. A loose battery
    module is a fire and projectile hazard in an emergency stop.""")
    p.heading("First aid and emergencies")
    p.para("""Learn the location of the first aid kit, the nearest emergency exit and the assembly
    point at the start of every site visit; the customer's safety induction normally covers them.
    If the customer does not offer an induction, ask the site supervisor for one before you start
    work.""")
    p.para("""In a battery fire, leave the area, raise the alarm and call the emergency services.
    Do not try to extinguish a burning lithium battery pack with a standard extinguisher; cool
    neighbouring equipment only if it is safe to do so.""")
    p.heading("Working alone")
    p.para("""Lone work at customer sites outside normal hours requires a check-in call with the
    support desk every two hours. If a check-in is missed by more than 30 minutes, the support
    desk calls the site and, if there is no answer, the local emergency contact.""")
    p.save(out / "policies/field-safety-handbook.pdf")


def pdf_newsletter(out: Path) -> None:
    """Page 1: single column intro. Page 2: a two-column page built with insert_textbox."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_text((MARGIN_X, 80), "Northwind Field Notes", fontname="hebo", fontsize=24)
    page.insert_text(
        (MARGIN_X, 102),
        "Quarterly newsletter of the field and customer success teams, Q3 2024",
        fontname="helv",
        fontsize=11,
        color=(0.3, 0.3, 0.3),
    )
    intro = [
        (
            "Editorial",
            """Dear colleagues, the third quarter was the busiest in our history. We
        shipped 212 robots in the third quarter, more than in the whole of 2022, and commissioned
        nine new customer sites across five countries. This issue looks back at the quarter, shares
        what we learned from the Kestrel Foods outage, and introduces the people who joined the
        field team.""",
        ),
        (
            "Numbers of the quarter",
            """Average fleet availability across all customer sites reached
        99.2 percent, up from 98.6 percent in the second quarter. The mean time to repair for
        on-site interventions fell to 3.1 hours. Customer satisfaction, measured after every
        closed ticket, averaged 4.5 out of 5.""",
        ),
    ]
    y = 130.0
    for head, body in intro:
        page.insert_text((MARGIN_X, y + 12), head, fontname="hebo", fontsize=13)
        y += 22
        body = " ".join(body.split())
        lines = wrap(body, A4.width - 2 * MARGIN_X, "tiro", 11)
        h = len(lines) * 11 * 1.45 + 6
        rc = page.insert_textbox(
            pymupdf.Rect(MARGIN_X, y, A4.width - MARGIN_X, y + h),
            body,
            fontname="tiro",
            fontsize=11,
            lineheight=1.45,
        )
        assert rc >= 0, (head, rc)
        y += h + 14

    # Two-column page: each paragraph is its own text box so each stays one block.
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_text((MARGIN_X, 70), "Around the sites", fontname="hebo", fontsize=18)
    gutter = 22
    col_w = (A4.width - 2 * MARGIN_X - gutter) / 2
    left = [
        (
            "Helsinki pilot goes live",
            """The Helsinki pilot with Pohjola Parts started on 2 July
        with six XR-5200 robots moving roll cages between the goods-in area and the high-bay
        store. After a slow first week caused by the narrow ramp at gate 4, the fleet now runs
        two full shifts. Jonas Virtanen, who led the sales process, says the customer is already
        asking for a quote for an extension.""",
        ),
        (
            "Cold store trial",
            """In August we ran a two-week trial of the XR-4471 in a minus 25
        degree cold store near Antwerp. The robots worked without interruption, but the battery
        runtime dropped by roughly a third. Engineering is evaluating insulated battery covers
        for a cold store kit planned for 2025.""",
        ),
        (
            "Dock overheating fixed",
            """Under INC-2057 the Helsinki team found that one CD-2 dock
        overheated when installed next to a heating vent. The dock now sits two metres further
        along the wall, and the installation guide will gain a note about heat sources.""",
        ),
    ]
    right = [
        (
            "Lessons from INC-2041",
            """The Kestrel Foods outage taught us that a safe stop is not
        the same as a good experience. Support now checks time synchronisation on the fleet
        manager as the first step whenever several robots report the same error at once, and
        the field team adds an NTP check to every commissioning report.""",
        ),
        (
            "New faces",
            """Three field engineers joined in the quarter: Sofia Brandt in Munich,
        Karim El Idrissi in Lyon and Mei Lin Ong in Rotterdam. All three completed the robot
        safety course and the CD-2 installation training in their first month.""",
        ),
        (
            "Coming up in Q4",
            """The fourth quarter brings the NWOS v2.15.0 rollout, the first
        XR-7100 outdoor deployment at a port terminal in Gdansk, and the field team offsite in
        Lyon on 21 and 22 November. Please send your agenda proposals to the field operations
        mailbox before the end of October.""",
        ),
    ]
    for col, items in ((0, left), (1, right)):
        x0 = MARGIN_X + col * (col_w + gutter)
        y = 92.0
        for head, body in items:
            page.insert_textbox(pymupdf.Rect(x0, y, x0 + col_w, y + 18), head, fontname="hebo", fontsize=12)
            y += 20
            body = " ".join(body.split())
            lines = wrap(body, col_w - 4, "tiro", 10.5)
            h = len(lines) * 10.5 * 1.45 + 12
            rc = page.insert_textbox(
                pymupdf.Rect(x0, y, x0 + col_w, y + h),
                body,
                fontname="tiro",
                fontsize=10.5,
                lineheight=1.45,
            )
            assert rc >= 0, (head, rc)
            y += h + 12
        assert y < A4.height - 50
    for i in range(1, len(doc) + 1):
        pg = doc[i - 1]
        pg.insert_text(
            (MARGIN_X, A4.height - 36),
            f"Northwind Field Notes, Q3 2024 - page {i}",
            fontname="helv",
            fontsize=8,
            color=(0.4, 0.4, 0.4),
        )
    save_pdf(doc, out / "reports/field-notes-q3-2024.pdf", "Northwind Field Notes Q3 2024")


def pdf_spare_parts(path: Path) -> bytes:
    """A valid PDF whose first 40 % becomes broken/truncated-spare-parts.pdf."""
    p = FlowPdf("Northwind Robotics - Spare parts list", "NW-SPL-2024", "Spare parts list")
    p.title_block("Spare parts list 2024")
    for i in range(3):
        p.heading(f"Group {i + 1}")
        p.para("Spare parts are shipped from the central warehouse in Eindhoven. " * 6)
        p.table(
            ["Part", "Description", "Price (EUR)"],
            [[f"NW-SP-{i}{j:02d}", f"Spare part {i}-{j}", f"{40 + 13 * j}"] for j in range(8)],
            [90, 250, 90],
        )
    p.save(path)
    return path.read_bytes()


def pdf_quote_attachment() -> bytes:
    p = FlowPdf(
        "Northwind Robotics - Quotation Q-2024-0917",
        "Northwind Robotics B.V.",
        "Quotation Q-2024-0917",
    )
    p.title_block("Quotation Q-2024-0917", "Customer: Pohjola Parts Oy, Helsinki")
    p.table(
        ["Item", "Qty", "Unit price (EUR)", "Total (EUR)"],
        [
            ["XR-5200 robot", "6", "52,750", "316,500"],
            ["CD-2 charging dock", "2", "6,400", "12,800"],
            ["Volume discount 8%", "", "", "-26,344"],
        ],
        [170, 50, 120, 120],
    )
    p.para("Quotation valid until 31 December 2024. Prices exclude VAT and delivery.")
    buf = io.BytesIO()
    p.doc.set_metadata(
        {
            "title": "Quotation Q-2024-0917",
            "author": "Northwind Robotics",
            "creationDate": PDF_DATE,
            "modDate": PDF_DATE,
        }
    )
    n = len(p.doc)
    for i in range(1, n + 1):
        page = p.doc[i - 1]
        page.insert_text((MARGIN_X, A4.height - 36), f"Page {i} of {n}", fontname="helv", fontsize=8)
    p.doc.save(buf, garbage=3, deflate=True, no_new_id=True)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------

HTML_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} - Northwind Wiki</title>
<link rel="stylesheet" href="/static/wiki.css">
</head>
<body>
<header class="site-header">
  <a class="logo" href="/">Northwind Wiki</a>
  <form class="search" action="/search"><input name="q" placeholder="Search the wiki"></form>
  <span class="user">Signed in as wiki-reader</span>
</header>
<nav class="top-nav">
  <ul>
    <li><a href="/">Home</a></li>
    <li><a href="/runbooks/">Runbooks</a></li>
    <li><a href="/products/">Products</a></li>
    <li><a href="/support/">Support</a></li>
    <li><a href="/policies/">Policies</a></li>
    <li><a href="/people/">People directory</a></li>
    <li><a href="https://status.northwind.example/">Status page</a></li>
  </ul>
</nav>
<div class="layout">
<aside class="sidebar">
  <h4>In this space</h4>
  <ul>
{sidebar}
  </ul>
  <h4>Quick links</h4>
  <ul>
    <li><a href="/it/helpdesk">Contact IT helpdesk</a></li>
    <li><a href="/hr/holidays">Holiday calendar</a></li>
    <li><a href="/cafeteria">Cafeteria menu</a></li>
  </ul>
</aside>
<main>
<article>
{body}
</article>
</main>
</div>
<footer class="site-footer">
  <p>&copy; 2024 Northwind Robotics B.V. Internal use only.</p>
  <p><a href="/privacy">Privacy</a> | <a href="/terms">Terms of use</a> |
     <a href="/accessibility">Accessibility</a> | <a href="/wiki/help">Wiki help</a></p>
  <p>Last edited {edited}. Page owner: {owner}.</p>
</footer>
</body>
</html>
"""


def write_html(out: Path, rel: str, title: str, body: str, sidebar: list[str], edited: str, owner: str) -> None:
    side = "\n".join(f'    <li><a href="#">{s}</a></li>' for s in sidebar)
    text = HTML_TEMPLATE.format(title=title, body=dedent(body).strip(), sidebar=side, edited=edited, owner=owner)
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def html_pages(out: Path) -> None:
    runbook_side = [
        "Dock failure runbook",
        "Lidar recalibration",
        "Emergency stop recovery",
        "Battery quarantine",
        "Map update procedure",
    ]
    write_html(
        out,
        "wiki/runbooks/dock-failure-runbook.html",
        "Runbook: dock failures",
        """
        <h1>Runbook: dock failures and ERR-0x2A</h1>
        <p class="meta">Audience: support engineers (level 1 and 2). Applies to CD-2 docks with
        firmware 3.x.</p>
        <h2>When to use this runbook</h2>
        <p>Use this runbook when a robot reports <code>ERR-0x2A</code> (dock handshake failed),
        when a robot circles in front of a dock without docking, or when a customer reports that
        a dock LED shows an unexpected colour. If several robots report the same error at the
        same time, check time synchronisation on the fleet manager first (see INC-2041).</p>
        <h2>Reading the dock LED</h2>
        <table>
          <thead><tr><th>LED pattern</th><th>Meaning</th><th>First action</th></tr></thead>
          <tbody>
            <tr><td>Solid green</td><td>Idle and ready</td><td>None</td></tr>
            <tr><td>Pulsing green</td><td>Charging a robot</td><td>None</td></tr>
            <tr><td>Blinking amber</td><td>Handshake in progress or retrying</td><td>Wait two minutes</td></tr>
            <tr><td>Solid red</td><td>Wiring or overtemperature fault</td><td>Switch off breaker, call field service</td></tr>
            <tr><td>Blinking blue</td><td>Firmware loading or updating</td><td>Do not unplug</td></tr>
          </tbody>
        </table>
        <h2>Diagnosis</h2>
        <ol>
          <li>Ask the customer to check the approach zone. Anything within 1.2 m in front of the
          dock can block the final alignment.</li>
          <li>Check the dock in the fleet manager. A dock that is offline cannot answer the
          handshake, and the robot will report ERR-0x2A after its retries.</li>
          <li>Look at the number of handshake retries in the robot log. The robot retries as
          many times as <code>dock_retry_limit</code> allows, three by default.</li>
          <li>Ask for a photo of the contact plate. Dust, grease and shrink-wrap residue are
          the most frequent causes of intermittent failures.</li>
        </ol>
        <h2>Remote reset</h2>
        <p>If the dock is online but stuck in blinking amber for more than five minutes, a remote
        reset usually clears it. Resetting a dock interrupts any charge in progress, so check that
        no robot is docked first.</p>
        <pre><code>nwctl dock status D3
nwctl dock reset --dock-id D3 --force
nwctl dock log D3 --since 30m</code></pre>
        <p>After the reset the LED blinks blue for about a minute and then turns solid green.</p>
        <h3>Escalation</h3>
        <p>Escalate to field service when the LED is solid red, when the dock fails again within
        24 hours of a reset, or when the contact plate is visibly damaged. The replacement contact
        plate has part number NW-CP-220 and can be swapped by a field engineer in about twenty
        minutes.</p>
    """,
        runbook_side,
        "2024-09-16",
        "Dana Whitfield",
    )

    write_html(
        out,
        "wiki/runbooks/lidar-recalibration.html",
        "Runbook: lidar recalibration",
        """
        <h1>Runbook: lidar recalibration</h1>
        <p class="meta">Audience: field engineers. Estimated duration: 40 minutes per robot.</p>
        <h2>Background</h2>
        <p>The safety lidar is calibrated at the factory, but it can drift after a collision, after
        the lidar window has been replaced, or after repeated <code>ERR-0x1F</code> events caused
        by a loose connector. A robot with a drifted lidar localises poorly and tends to stop more
        often near racks.</p>
        <h2>Before you start</h2>
        <ul>
          <li>Confirm that the robot runs NWOS v2.14.3 or later. Older versions report calibration
          results in a different format.</li>
          <li>Clear an area of at least 4 by 4 metres with a flat, non-reflective floor.</li>
          <li>Bring the calibration target for the robot model (see the table below).</li>
          <li>Place the robot in maintenance mode from the fleet manager.</li>
        </ul>
        <h2>Calibration targets</h2>
        <table>
          <tr><th>Model</th><th>Target board</th><th>Distance (m)</th><th>Tolerance (degrees)</th></tr>
          <tr><td>XR-3300</td><td>board-a2</td><td>1.5</td><td>0.5</td></tr>
          <tr><td>XR-4471</td><td>board-a3</td><td>2.0</td><td>0.5</td></tr>
          <tr><td>XR-5200</td><td>board-a3</td><td>2.5</td><td>0.4</td></tr>
          <tr><td>XR-6010</td><td>board-b1</td><td>3.0</td><td>0.3</td></tr>
          <tr><td>XR-7100</td><td>board-b1</td><td>3.5</td><td>0.3</td></tr>
        </table>
        <h2>Procedure</h2>
        <ol>
          <li>Place the target board upright at the distance listed for the model, centred in
          front of the robot.</li>
          <li>Start the calibration from a laptop connected to the robot service port:
          <pre><code>nwctl lidar calibrate --robot XR4471-0042 --target board-a3 --distance 2.0
nwctl lidar verify --robot XR4471-0042</code></pre></li>
          <li>Rotate the robot by 90 degrees when prompted and repeat until all four sides are
          done.</li>
          <li>The tool prints the residual angle for each side. Accept the result only if every
          residual is within the tolerance for the model.</li>
        </ol>
        <h2>After calibration</h2>
        <p>Upload the calibration report to the robot's record in the service portal and take the
        robot out of maintenance mode. Watch the robot complete three normal tasks before you leave
        the site. If the residual stays outside tolerance after two attempts, replace the lidar
        mounting bracket, part NW-LB-310.</p>
    """,
        runbook_side,
        "2024-09-27",
        "Tomasz Kowalczyk",
    )

    write_html(
        out,
        "wiki/support/error-code-reference.html",
        "Error code reference",
        """
        <h1>Error code reference</h1>
        <p>This page lists the error codes that XR series robots report to the fleet manager.
        Codes are hexadecimal and always start with <code>ERR-0x</code>. Severity decides whether
        the robot stops (stop), finishes its current task (degraded) or only logs (info).</p>
        <h2>Codes</h2>
        <table>
          <thead>
            <tr><th>Code</th><th>Name</th><th>Severity</th><th>First action</th></tr>
          </thead>
          <tbody>
            <tr><td>ERR-0x05</td><td>Emergency stop engaged</td><td>stop</td><td>Find who pressed it and why</td></tr>
            <tr><td>ERR-0x1F</td><td>Lidar heartbeat lost</td><td>stop</td><td>Check connector J7 and fleet manager clock</td></tr>
            <tr><td>ERR-0x2A</td><td>Dock handshake failed</td><td>degraded</td><td>Follow the dock failure runbook</td></tr>
            <tr><td>ERR-0x3C</td><td>Payload above max_payload_kg</td><td>info</td><td>Split the load</td></tr>
            <tr><td>ERR-0x41</td><td>Battery cell imbalance</td><td>stop</td><td>Take out of service, open ticket</td></tr>
            <tr><td>ERR-0x52</td><td>Wheel encoder mismatch</td><td>degraded</td><td>Inspect drive wheels for debris</td></tr>
            <tr><td>ERR-0x6B</td><td>Map version conflict</td><td>degraded</td><td>Republish the site map</td></tr>
          </tbody>
        </table>
        <h2>How codes reach support</h2>
        <p>Every stop-severity code opens a ticket automatically in the support queue of the
        customer's region. Degraded codes only open a ticket if the same robot reports them more
        than five times within an hour. Info codes are kept for 90 days in the telemetry store.</p>
        <h2>Adding a new code</h2>
        <p>New codes are assigned by the NWOS team. Open a merge request against the
        <code>error-codes.yaml</code> file in the nwos repository and ask a member of the safety
        review board to approve it. A code is never reused, even after the condition it described
        has been removed.</p>
        <pre><code>- code: 0x6B
  name: map_version_conflict
  severity: degraded
  owner: navigation</code></pre>
    """,
        ["Error code reference", "Ticket priorities", "Escalation matrix", "Customer contacts"],
        "2024-10-02",
        "Dana Whitfield",
    )

    write_html(
        out,
        "wiki/products/xr-5200-overview.html",
        "XR-5200 product overview",
        """
        <h1>XR-5200 product overview</h1>
        <p class="lead">The XR-5200 is a mid-size autonomous mobile robot for roll cages, carts and
        half pallets. It was launched in March 2023 and is built in Eindhoven.</p>
        <h2>Typical applications</h2>
        <ul>
          <li>Moving roll cages from goods-in to the put-away area.</li>
          <li>Line-side supply of kitting carts in assembly plants.</li>
          <li>Transporting linen and meal carts in hospitals, using the lift-and-lock top.</li>
        </ul>
        <h2>Key facts</h2>
        <ul>
          <li>Rated payload: 120 kg, with the lift deck raising loads by up to 60 mm.</li>
          <li>Footprint: 1,050 by 720 mm; turning on the spot is supported.</li>
          <li>Navigation: natural-feature SLAM, no floor markers required.</li>
          <li>Charging: CD-2 dock, about 70 minutes from 20 to 90 percent.</li>
        </ul>
        <h2>Top modules and accessories</h2>
        <table>
          <tr><th>Option</th><th>Code</th><th>Price (EUR)</th></tr>
          <tr><td>Conveyor top</td><td>CT-200</td><td>7,450</td></tr>
          <tr><td>Lift-and-lock cart top</td><td>LL-120</td><td>3,900</td></tr>
          <tr><td>Roller bed, passive</td><td>RB-050</td><td>2,150</td></tr>
          <tr><td>Extra rear safety scanner</td><td>SS-R2</td><td>4,300</td></tr>
        </table>
        <h2>Fleet profile example</h2>
        <p>Sites usually run the XR-5200 with a lower speed cap than the factory default, because
        roll cages tip more easily than totes. A typical fleet profile looks like this:</p>
        <pre><code>profile: roll-cages
model: XR-5200
max_payload_kg: 110
speed_limit_mps: 1.1
charge_threshold_pct: 25</code></pre>
        <h2>Known limitations</h2>
        <p>The XR-5200 cannot climb ramps steeper than 4 percent with a full load. For sites with
        steeper ramps, sales engineering proposes the XR-6010 instead or a reduced payload
        profile.</p>
    """,
        ["XR-3300", "XR-4471", "XR-5200", "XR-6010", "XR-7100", "CD-2 dock"],
        "2024-06-11",
        "Jonas Virtanen",
    )

    write_html(
        out,
        "wiki/policies/on-call-policy.html",
        "On-call policy",
        """
        <h1>On-call policy for engineering and support</h1>
        <p>This policy describes how Northwind staffs the out-of-hours rotation that protects
        customer fleets. It applies to the SRE, NWOS and support teams.</p>
        <h2>Rotations</h2>
        <p>Each rotation lasts one week, starting on Monday at 09:00 CET. Every rotation has a
        primary and a secondary responder. Nobody is scheduled for more than one week in four,
        and swaps are arranged directly between engineers and recorded in the paging tool.</p>
        <h2>Severities and response times</h2>
        <table>
          <thead><tr><th>Severity</th><th>Definition</th><th>Acknowledge within</th><th>Update cadence</th></tr></thead>
          <tbody>
            <tr><td>SEV1</td><td>Fleet stopped or safety risk</td><td>5 minutes</td><td>every 30 minutes</td></tr>
            <tr><td>SEV2</td><td>Fleet degraded at one site</td><td>15 minutes</td><td>every 2 hours</td></tr>
            <tr><td>SEV3</td><td>Single robot affected</td><td>next business day</td><td>daily</td></tr>
          </tbody>
        </table>
        <p>If the primary does not acknowledge a page in time, it escalates to the secondary, then
        to the engineering manager on duty.</p>
        <h2>Compensation</h2>
        <p>On-call engineers receive EUR 45 for each weekday night and EUR 120 for each weekend
        day or public holiday in the rotation, in addition to regular pay. Time spent actively
        working on an incident outside office hours is paid as overtime or taken as time off in
        lieu, at the engineer's choice.</p>
        <h2>After an incident</h2>
        <ul>
          <li>The incident commander writes a blameless postmortem for every SEV1 within five
          business days.</li>
          <li>Action items are tracked in the incident tracker and reviewed every Thursday.</li>
          <li>A responder who was paged after midnight starts work late the next day.</li>
        </ul>
    """,
        ["On-call policy", "Incident commander guide", "Postmortem template", "Paging tool"],
        "2024-05-20",
        "Priya Raman",
    )

    write_html(
        out,
        "wiki/onboarding/engineering-onboarding.html",
        "Engineering onboarding",
        """
        <h1>Welcome to Northwind engineering</h1>
        <p>This page walks new engineers through their first two weeks. Your onboarding buddy is
        named in your welcome email; ask them anything, at any time.</p>
        <h2>Day one</h2>
        <ul>
          <li>Collect your badge and laptop from the IT desk on the ground floor in Rotterdam, or
          from the office manager in Lyon and Helsinki.</li>
          <li>Activate your account and enrol a hardware security key. Password-only logins are
          disabled for all engineering systems.</li>
          <li>Join the team channels listed in your welcome email.</li>
        </ul>
        <h2>Setting up your development environment</h2>
        <p>All NWOS development happens in a container image, so you do not need to install the
        robot toolchain on your laptop. Clone the repository and run the setup target:</p>
        <pre><code>git clone git@code.northwind.example:nwos/nwos.git
cd nwos
make dev-setup
make sim SCENARIO=warehouse-small</code></pre>
        <p>The simulator starts a virtual warehouse with four XR-4471 robots. The first build takes
        about 25 minutes; later builds reuse the cache.</p>
        <h2>Who to ask</h2>
        <table>
          <tr><th>Topic</th><th>Contact</th></tr>
          <tr><td>Laptops, accounts, security keys</td><td>IT helpdesk, extension 4400</td></tr>
          <tr><td>Robot hardware access</td><td>Tomasz Kowalczyk</td></tr>
          <tr><td>On-call and incidents</td><td>Priya Raman</td></tr>
          <tr><td>Security training</td><td>Aiko Tanaka</td></tr>
        </table>
        <h2>First two weeks</h2>
        <h3>Week one</h3>
        <p>Complete the robot safety course before you touch a physical robot. The course takes
        half a day and is held every Tuesday in the Rotterdam test hall.</p>
        <h3>Week two</h3>
        <p>Pick a starter issue labelled good-first-change, pair with your buddy on the review, and
        ship it to the simulator fleet. By the end of the second week you should have merged one
        change and shadowed one on-call handover.</p>
    """,
        [
            "Engineering onboarding",
            "Development environment",
            "Coding guidelines",
            "Release process",
        ],
        "2024-08-05",
        "Marcus Oyelaran",
    )


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------

MARKDOWN = {
    "docs/release-notes/nwos-v2.14.3.md": """
        # NWOS v2.14.3 release notes

        Released 2024-08-19. Patch release for all XR series robots and fleet manager installations
        running v2.14.x.

        ## Highlights

        This patch release hardens the lidar heartbeat check introduced in v2.14.2 and fixes two
        defects reported by customers. Upgrading is strongly recommended for every fleet on
        v2.14.2.

        ## Fixes

        ### Safety controller

        - The safety controller no longer raises ERR-0x1F when heartbeat jitter stays below 40 ms.
          Heartbeats are now compared with the robot's own monotonic clock instead of the fleet
          manager clock, so clock skew on the fleet manager can no longer stop a fleet.
        - A lidar that reconnects within one second no longer forces a full safety restart.

        ### Docking

        - Fixed a race in the dock handshake that made robots report ERR-0x2A when two robots
          approached neighbouring docks at the same moment.

        ### Path planner

        - Fixed a memory leak in the path planner that grew by about 30 MB per day on sites with
          more than 2,000 map nodes.

        ## Known issues

        - On the XR-6010, arm homing can take up to 20 seconds after a cold start. A fix is
          planned for v2.15.0.

        ## Upgrade

        Roll out with a canary, as usual:

        ```bash
        nwctl fleet upgrade --version v2.14.3 --canary 2 --wait 30m
        nwctl fleet upgrade --version v2.14.3 --all
        ```

        Rollback to v2.14.1 is supported. Do not roll back to v2.14.2.
    """,
    "docs/release-notes/nwos-v2.15.0.md": """
        # NWOS v2.15.0 release notes

        Release date: 2024-10-07. This is a minor release with new features and one deprecation.

        ## New features

        ### Battery-aware dispatching

        The dispatcher now considers the battery level of each robot before assigning a task. When
        the battery falls below `charge_threshold_pct`, the robot finishes its current task and
        returns to the nearest free dock instead of accepting new work. The default threshold is
        22 percent.

        ### Zone speed profiles

        Speed limits can now be set per zone and per time of day. A zone profile overrides the
        site-wide `speed_limit_mps` while a robot is inside the zone.

        ```yaml
        zones:
          - name: packing-hall
            speed_limit_mps: 0.8
            active: "06:00-22:00"
        ```

        ## Deprecations

        - `dock_retry_count` is deprecated in favour of `dock_retry_limit`. Both keys are read in
          v2.15.x; `dock_retry_count` will be removed in v2.17.0.

        ## Compatibility

        | Component | Minimum version |
        |-----------|-----------------|
        | Fleet manager | 5.3.0 |
        | CD-2 dock firmware | 3.4.1 |
        | XR-6010 motor controller | MC-4.2 |
        | nwctl | 2.15.0 |

        XR-3300 units of hardware revision A are no longer supported from this release on; they
        stay on the v2.14 line, which receives security fixes until 30 June 2025.

        ## Fixes

        - XR-6010 arm homing after a cold start now takes less than five seconds.
        - The fleet manager map editor no longer loses unsaved edits when the session expires.
    """,
    "docs/config/fleet-config-reference.md": """
        # Fleet configuration reference

        The fleet profile is a YAML document that the fleet manager pushes to every robot. This
        page lists every key that operators and support engineers are allowed to change. Keys not
        listed here are reserved for Northwind engineering.

        ## Where the profile lives

        Each site has one active profile, stored in the fleet manager database and versioned on
        every change. Robots fetch the profile when they start and whenever the fleet manager
        announces a new version. Edit it in the fleet manager under Site settings, or with
        `nwctl profile edit`.

        ## Keys

        | Key | Type | Default | Description |
        |-----|------|---------|-------------|
        | max_payload_kg | number | model rating | heaviest load accepted for a task |
        | speed_limit_mps | number | 1.2 | site wide speed cap in metres per second |
        | lidar_timeout_ms | integer | 250 | wait for a lidar heartbeat before a safety stop |
        | dock_retry_limit | integer | 3 | handshake attempts before ERR-0x2A is reported |
        | charge_threshold_pct | integer | 22 | battery level that sends a robot to charge |
        | telemetry_interval_s | integer | 5 | seconds between telemetry frames |
        | night_mode_start | string | 22:00 | local time when quiet night driving begins |
        | geofence_file | path | none | optional GeoJSON file with no-go areas |

        ## Validation rules

        - `max_payload_kg` can never exceed the rating of the model; the fleet manager rejects a
          profile that tries.
        - `lidar_timeout_ms` must stay between 100 and 500. Values above 500 are rejected by the
          safety review board and by the robot itself.
        - Changing `telemetry_interval_s` below 2 requires approval from the SRE team because it
          multiplies the load on the telemetry ingest service.

        ## Example

        ```yaml
        site: tilburg-dc
        max_payload_kg: 55
        speed_limit_mps: 1.2
        lidar_timeout_ms: 250
        dock_retry_limit: 3
        charge_threshold_pct: 22
        telemetry_interval_s: 5
        ```

        ## Applying changes

        Changes take effect on each robot after its current task. Use a canary group for any change
        to safety-related keys, and record the reason for the change in the profile comment field.
    """,
    "docs/api/fleet-api-quickstart.md": """
        # Fleet API quickstart

        The Fleet API lets customers and integrators create transport tasks, read robot status and
        subscribe to events. This guide gets you from zero to your first task in about ten
        minutes.

        ## Base URL and versions

        All endpoints live under `https://fleet.northwind.example/api/v3`. Version 2 of the API was
        switched off on 1 April 2024.

        ## Authentication

        Request a client id and secret from your Northwind account manager. Exchange them for an
        access token with the token endpoint. Access tokens expire after 3600 seconds; request a
        new one rather than refreshing.

        ```bash
        curl -s -X POST https://fleet.northwind.example/api/v3/oauth/token \\
          -d grant_type=client_credentials \\
          -d client_id=$NW_CLIENT_ID -d client_secret=$NW_CLIENT_SECRET
        ```

        ## Creating a task

        A transport task moves a load from a pickup station to a drop station. The dispatcher picks
        a suitable robot unless you pin one.

        ```python
        import requests

        token = get_token()  # see above
        resp = requests.post(
            "https://fleet.northwind.example/api/v3/tasks",
            headers={"Authorization": f"Bearer {token}"},
            json={"pickup": "GI-03", "drop": "PA-17", "payload_kg": 42, "priority": "normal"},
            timeout=10,
        )
        resp.raise_for_status()
        print(resp.json()["task_id"])
        ```

        ## Rate limits

        The API allows 120 requests per minute per client. Requests above the limit receive HTTP
        429 with a `Retry-After` header. Use the event stream instead of polling robot status.

        ## Events

        Subscribe to server-sent events at `/api/v3/events` to receive task and robot updates. Each
        event carries a monotonically increasing sequence number so that a client can resume after
        a disconnect with the `Last-Event-ID` header.

        ## Errors

        | HTTP status | Meaning |
        |-------------|---------|
        | 400 | The request body failed validation |
        | 401 | Missing or expired token |
        | 409 | The task conflicts with a running task |
        | 429 | Rate limit exceeded |
    """,
    "docs/architecture/fleet-manager-architecture.md": """
        # Fleet manager architecture

        This document describes the main components of the fleet manager, the on-premises server
        that coordinates every robot at a customer site. It is aimed at engineers joining the
        platform team.

        ## Components

        ### Dispatcher

        The dispatcher receives transport tasks from the Fleet API and from customer warehouse
        systems, and assigns each one to a robot. Assignment uses a cost function built from travel
        time, battery level and the robot's current queue. The dispatcher recomputes assignments
        every two seconds.

        ### Map service

        The map service stores the site map as a graph of nodes and edges with zone metadata. Maps
        are versioned; a robot refuses tasks while its map version differs from the published one,
        which it reports as ERR-0x6B.

        ### Telemetry ingest

        Robots publish telemetry over MQTT on port 8883 with mutual TLS. The ingest service writes
        frames to a time-series store that keeps full resolution data for 14 days and hourly
        aggregates for two years.

        ### Storage

        Tasks, profiles and audit logs live in PostgreSQL 15. The fleet manager runs one primary and
        one streaming replica; failover is manual and documented in the SRE runbooks.

        ## Deployment

        The fleet manager ships as a set of containers on a single server appliance supplied by
        Northwind. Large sites with more than 150 robots get a three-node cluster instead.

        ```text
        robots --MQTT/TLS--> telemetry-ingest --> timeseries
        api/wms --HTTPS--> dispatcher --> postgres
        dispatcher <--> map-service
        ```

        ## Design decisions

        - The fleet manager runs on premises so that a site keeps working when its internet link is
          down. Cloud services are used only for reporting and remote support.
        - Time synchronisation is critical: since INC-2041, the appliance runs its own NTP
          monitoring and raises an alert when the offset exceeds 200 ms.
    """,
    "docs/howto/firmware-rollback.md": """
        # How to roll back robot firmware

        Sometimes a new NWOS release misbehaves at a particular site. This guide explains how to
        return a fleet to the previous release safely.

        ## Before you roll back

        1. Open a SEV2 incident, or join the existing one, so that the rollback is recorded.
        2. Check the release notes of the target version for rollback restrictions. For example,
           rolling back to v2.14.2 is not allowed because of the heartbeat defect fixed in v2.14.3.
        3. Make sure no robot is in the middle of a firmware download.

        ## Rolling back with a canary

        Always roll back a small group first. The following command rolls back five percent of the
        fleet to v2.14.3:

        ```bash
        nwctl firmware rollback --to v2.14.3 --canary 5% --site tilburg-dc
        nwctl firmware status --site tilburg-dc
        ```

        Wait 30 minutes after each canary stage and watch the error rate in the fleet dashboard
        before widening the rollback. If the canary robots look healthy, continue with 25 percent
        and then the rest of the fleet.

        ## If the rollback fails

        - A robot that cannot flash the old image keeps running the new one and reports
          ERR-0x7E. Leave it in service and open a SEV3 ticket for it.
        - Never power off a robot while it is writing firmware.

        ## Afterwards

        Write down what went wrong with the new release in the incident, and tag the NWOS release
        manager so that the release is paused for other sites with the same profile.
    """,
    "docs/policies/security-patching-policy.md": """
        # Security patching policy

        Owner: Aiko Tanaka, head of product security. Version 1.3, approved 2024-04-02.

        ## Scope

        This policy covers NWOS, the fleet manager appliance, the CD-2 dock firmware and all
        internal engineering systems. Third-party components bundled in our products are in scope
        too.

        ## Deadlines

        | Severity (CVSS) | Patch deadline | Customer notice |
        |-----------------|----------------|-----------------|
        | Critical (9.0-10.0) | 7 calendar days | within 24 hours |
        | High (7.0-8.9) | 30 calendar days | with the release notes |
        | Medium (4.0-6.9) | next minor release | with the release notes |
        | Low (below 4.0) | best effort | none |

        Critical vulnerabilities must be patched within 7 calendar days of confirmation, even if
        this requires an out-of-band release. The clock starts when product security confirms that
        a vulnerability affects a shipped version.

        ## Exceptions

        An exception can be requested when a patch would break a certified safety function. The
        request must describe compensating controls and is approved by the head of product
        security and the safety review board together. Exceptions expire after 90 days.

        ## Customer communication

        Security advisories are published on the customer portal with an identifier of the form
        NW-SA-YYYY-NNN. Customers on a service plan also receive them by email.
    """,
}


# ---------------------------------------------------------------------------------------------
# Plain text
# ---------------------------------------------------------------------------------------------

LYON_NOTE = """\
Note de service - Bureau de Lyon
================================

De : Élodie Marchand, responsable du bureau de Lyon
À : toute l'équipe de Lyon
Date : 30 septembre 2024

(English version below)

Déménagement
------------
Le bureau de Lyon déménage ! À partir du lundi 4 novembre 2024, nous serons installés au
27 rue des Tanneurs, 69007 Lyon, au deuxième étage. Les cartons seront livrés le 28 octobre ;
merci de vider vos casiers avant le vendredi 1er novembre à midi.

Badges et accès
---------------
Les anciens badges ne fonctionneront pas dans le nouveau bâtiment. Passez récupérer votre
nouveau badge à l'accueil entre le 4 et le 8 novembre. Le réseau Wi-Fi invités s'appellera
« NW-Lyon-Invités ».

Café et cantine
---------------
La cafétéria du nouveau bâtiment ouvre à 8 h 00. Les tickets restaurant restent inchangés.

English version
---------------
The Lyon office is moving. From Monday 4 November 2024 we will be at 27 rue des Tanneurs,
69007 Lyon, on the second floor. Moving boxes arrive on 28 October; please empty your lockers
before Friday 1 November at noon.

Old badges will not work in the new building. Collect your new badge at reception between
4 and 8 November. The guest Wi-Fi network will be called "NW-Lyon-Invités".

The field team offsite on 21 and 22 November will take place in the new office; the large
meeting room seats up to 30 people and has a demo area for two robots.

Merci à tous et à bientôt dans nos nouveaux locaux !
Élodie
"""

MINUTES = """\
PRODUCT COUNCIL - MINUTES
Date: 12 September 2024, 14:00-15:30 CEST
Location: Rotterdam, room Maas, and video call
Present: Marcus Oyelaran (chair), Priya Raman, Tomasz Kowalczyk, Jonas Virtanen, Aiko Tanaka,
Dana Whitfield
Minutes: Dana Whitfield

1. INC-2041 follow-up
---------------------
Priya summarised the postmortem. NWOS v2.14.3 is live at Kestrel Foods since 10 September and
no ERR-0x1F has been reported since. The council agreed that any new safety check must ship
behind a feature flag from now on. Marcus owns the process change (AI-4).

2. Future of the XR-3300
------------------------
Sales volumes of the XR-3300 fell for the fourth quarter in a row, and the hardware revision A
units can no longer run the latest NWOS. Decision: the XR-3300 will be discontinued at the end of
Q2 2025. Existing customers get spare parts and software support until the end of 2029. Jonas
will prepare a migration offer towards the XR-4471 with a trade-in credit.

3. Price list 2025
------------------
Component costs rose by about six percent this year. Decision: a list price increase of 4 percent
on 1 January 2025 for all XR models; service plan prices stay unchanged. Quotes sent before
31 December 2024 keep their prices if the order arrives within 60 days.

4. Security
-----------
Aiko reported that all critical findings from the spring penetration test are closed. Two
medium findings on the fleet manager web interface are scheduled for NWOS v2.15.0.

5. Any other business
---------------------
- The Helsinki pilot customer asked about an extension; Jonas will send a quote for six more
  XR-5200 units.
- Next council meeting: 10 October 2024.

Action items
------------
- Jonas Virtanen: XR-3300 migration offer, by 15 October.
- Dana Whitfield: announce the 2025 price change to the sales team, by 30 September.
- Tomasz Kowalczyk: feature flag guidelines for the safety controller, by 30 September.
"""

PILOT_LOG = """\
Helsinki pilot - site log
Customer: Pohjola Parts Oy, Vantaa warehouse
Fleet: 6 x XR-5200, 2 x CD-2 docks
Log kept by: Jonas Virtanen and the on-site field engineer

Day 1 (2 July 2024)
Robots unpacked and commissioned. Site map recorded in about three hours. Acceptance test on
both docks passed ten out of ten attempts.

Day 2
First live shift. Robots moved 310 roll cages. Two robots got stuck on the ramp at gate 4;
the ramp is steeper than the drawing showed. Workaround: reduced payload profile on the ramp
route.

Day 3
Ramp measured at 5.5 percent. Agreed with the customer to route loaded robots through gate 6
instead. Throughput recovered in the afternoon.

Day 5
Dock D2 overheated in the afternoon and switched itself off. It is installed next to a heating
vent. Opened INC-2057. Moved the dock two metres along the wall the next morning.

Day 9
Best day so far: the fleet reached 142 picks per hour during the morning peak, against a target
of 120. The customer's shift lead asked whether the robots can also serve the packing area.

Day 12
Night shift added. Lights in the high-bay area switch off at 23:00, which does not bother the
robots, but the customer wants the robots to drive more quietly at night. Set night_mode_start
to 23:00 in the fleet profile.

Day 14
Pilot review with the customer. Availability over the two weeks: 98.9 percent. The customer
wants to extend the fleet; quote to follow.
"""

FAQ = """\
NORTHWIND SUPPORT - FREQUENTLY ASKED QUESTIONS (internal)
Last reviewed: October 2024

Q: A customer asks whether robots can use lifts (elevators) between floors.
A: Yes, with the lift integration kit LK-1, which talks to the lift controller over a relay box.
   The lift manufacturer must approve the integration. Quote it through sales engineering.

Q: How long is the standard warranty?
A: 24 months from the date of commissioning for the robot, 12 months for batteries. Wear parts
   such as drive wheels and contact plates are not covered.

Q: Can customers change the site map themselves?
A: Yes. Trained customer administrators can edit zones and stations in the map editor. Changes
   to walls or racks need a new map recording, which field service does.

Q: What do I do when a customer reports a robot that drives noticeably slower than usual?
A: Check first whether the robot is inside a zone with a zone speed profile (NWOS v2.15.0 and
   later), then check speed_limit_mps in the fleet profile. Worn drive wheels also reduce speed
   because the controller compensates for slip.

Q: How do I get remote access to a customer fleet manager?
A: Request a remote session in the support portal. The customer approves each session; the
   session closes automatically after 4 hours.

Q: Where are the error codes documented?
A: In the error code reference on the wiki. The operator manual only covers the most frequent
   codes.
"""


# ---------------------------------------------------------------------------------------------
# Email
# ---------------------------------------------------------------------------------------------


def _body(text: str) -> str:
    """Dedent and re-wrap paragraphs to 72 columns; keep quoted ('>') and indented lines."""
    out: list[str] = []
    for block in dedent(text).strip("\n").split("\n\n"):
        lines = block.splitlines()
        prose = any(len(ln) > 60 for ln in lines)  # short lines (greetings, signatures) stay
        if prose and all(not ln.startswith((">", " ", "-")) for ln in lines):
            out.append(fill(" ".join(" ".join(lines).split()), width=72))
        else:
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def _finish(msg: EmailMessage, path: Path, boundaries: list[str]) -> None:
    multiparts = [p for p in msg.walk() if p.is_multipart()]
    for part, b in zip(multiparts, boundaries, strict=True):
        part.set_boundary(b)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msg.as_bytes(policy=SMTP))


def _headers(msg: EmailMessage, **h: str) -> None:
    for key in ("From", "To", "Cc", "Date", "Subject", "Message-ID", "In-Reply-To", "References"):
        val = h.get("from_" if key == "From" else key.lower().replace("-", "_"))
        if val:
            msg[key] = val
    msg["MIME-Version"] = "1.0"


def emails(out: Path) -> None:
    # 1. simple text/plain support ticket reply
    m = EmailMessage()
    _headers(
        m,
        from_="Dana Whitfield <dana.whitfield@northwind.example>",
        to="Oliver Grant <o.grant@brightwell-logistics.example>",
        cc="support@northwind.example",
        date="Tue, 17 Sep 2024 10:42:05 +0200",
        subject="[Ticket #7731] Repeated ERR-0x2A at dock D3",
        message_id="<ticket-7731-r1@support.northwind.example>",
    )
    m.set_content(
        _body("""
        Hello Oliver,

        Thank you for the logs and the photos of dock D3 at your Leeds site. Here is what we
        found and what we recommend.

        What we see in the logs

        Over the past week, three different robots reported ERR-0x2A at D3, always on the first
        approach after a charge elsewhere. Each time the dock answered the handshake late, and
        the robot gave up after three attempts. The photos show a grey film on the lower half of
        the contact plate, which matches this pattern.

        Recommendation

        Please set dock_retry_limit to 5 and clean the contact plate with a dry cloth and
        isopropyl alcohol. The retry change gives the dock more time while the plate is being
        cleaned regularly; we do not recommend going above 5. You can change the key in the fleet
        manager under Site settings, or ask us and we will do it remotely.

        If the errors continue after a week, we will send a field engineer to replace the contact
        plate. The part number is NW-CP-220 and it is covered by your Standard service plan.

        Next steps

        - You: clean the plate and confirm when the retry limit has been changed.
        - Us: review the dock logs again on 24 September and update this ticket.

        Kind regards,
        Dana Whitfield
        Support Engineering, Northwind Robotics
        +31 10 555 0142
    """)
    )
    _finish(m, out / "mail/ticket-7731-dock-d3.eml", [])

    # 2. customer report (simple) that the reply below quotes
    original = _body("""
        Hello Northwind support,

        All of our robots in the Tilburg DC stopped at around 07:00 this morning. The screens show
        ERR-0x1F on every unit. 14 robots are stuck in the aisles and we are picking by hand. We
        restarted two of them, but they stopped again within a minute.

        This is the start of our busiest week. Please call me as soon as possible on
        +31 13 555 0199.

        Hendrik de Vries
        Operations Manager, Kestrel Foods Tilburg
    """)
    m = EmailMessage()
    _headers(
        m,
        from_="Hendrik de Vries <h.devries@kestrelfoods.example>",
        to="support@northwind.example",
        date="Tue, 03 Sep 2024 07:11:48 +0200",
        subject="URGENT: all robots stopped in Tilburg",
        message_id="<a3f9c2e1-0903@mail.kestrelfoods.example>",
    )
    m.set_content(original)
    _finish(m, out / "mail/kestrel-robots-stopped.eml", [])

    # 3. the reply, quoting the original with "> " lines
    quoted = "\n".join(("> " + ln) if ln else ">" for ln in original.rstrip("\n").splitlines())
    m = EmailMessage()
    _headers(
        m,
        from_="Priya Raman <priya.raman@northwind.example>",
        to="Hendrik de Vries <h.devries@kestrelfoods.example>",
        cc="customer-success@northwind.example",
        date="Mon, 09 Sep 2024 16:05:12 +0200",
        subject="Re: URGENT: all robots stopped in Tilburg",
        message_id="<inc2041-followup-1@northwind.example>",
        in_reply_to="<a3f9c2e1-0903@mail.kestrelfoods.example>",
        references="<a3f9c2e1-0903@mail.kestrelfoods.example>",
    )
    m.set_content(
        _body("""
        Dear Hendrik,

        As promised on the phone, here is our follow-up on last Tuesday's outage, which we track
        internally as INC-2041. The full postmortem is attached to your customer portal.

        What happened: a firewall change on your server network blocked time synchronisation for
        the fleet manager two days before the outage. Its clock drifted, and a stricter check in
        NWOS v2.14.2 treated every lidar heartbeat as too old, so all robots stopped safely.

        What we are doing: NWOS v2.14.3 no longer depends on the fleet manager clock for this
        check. We will install it on two of your robots tomorrow and on the rest of the fleet on
        10 September if the canary is clean. We have also added an alert for lost time
        synchronisation.

        To recognise the impact on your operation, we will apply a credit of 12 percent of the
        monthly service fee to your October invoice. Your account manager will confirm this in
        writing.

        I am sorry for the disruption during your busiest week.

        Best regards,
        Priya Raman
        SRE Lead, Northwind Robotics
    """)
        + "\nOn Tue, 3 Sep 2024 at 07:11, Hendrik de Vries wrote:\n"
        + quoted
        + "\n"
    )
    _finish(m, out / "mail/re-kestrel-robots-stopped.eml", [])

    # 4. multipart/alternative release announcement
    text = _body("""
        Hello everyone,

        NWOS v2.15.0 is released today. The highlights for customers are battery-aware
        dispatching, zone speed profiles and faster arm homing on the XR-6010.

        Rollout plan

        The staged rollout starts on 14 October 2024 with the internal test fleets and three
        pilot customers. All other customer sites follow in weekly waves until 15 November,
        unless a customer has asked to stay on v2.14.

        What support needs to know

        - dock_retry_count is deprecated; use dock_retry_limit in new profiles.
        - XR-3300 revision A robots stay on the v2.14 line.
        - The default charge threshold is 22 percent.

        Questions go to the release channel or to me directly.

        Tomasz Kowalczyk
        NWOS release manager
    """)
    html = dedent("""\
        <html><body>
        <p>Hello everyone,</p>
        <p><b>NWOS v2.15.0</b> is released today. The highlights for customers are battery-aware
        dispatching, zone speed profiles and faster arm homing on the XR-6010.</p>
        <h3>Rollout plan</h3>
        <p>The staged rollout starts on 14 October 2024 with the internal test fleets and three
        pilot customers. All other customer sites follow in weekly waves until 15 November,
        unless a customer has asked to stay on v2.14.</p>
        <h3>What support needs to know</h3>
        <ul>
        <li><code>dock_retry_count</code> is deprecated; use <code>dock_retry_limit</code> in new
        profiles.</li>
        <li>XR-3300 revision A robots stay on the v2.14 line.</li>
        <li>The default charge threshold is 22 percent.</li>
        </ul>
        <p>Questions go to the release channel or to me directly.</p>
        <p>Tomasz Kowalczyk<br>NWOS release manager</p>
        </body></html>
        """)
    m = EmailMessage()
    _headers(
        m,
        from_="Tomasz Kowalczyk <tomasz.kowalczyk@northwind.example>",
        to="all-engineering@northwind.example, support@northwind.example",
        date="Mon, 07 Oct 2024 11:30:00 +0200",
        subject="NWOS v2.15.0 released - rollout plan",
        message_id="<nwos-2.15.0-announce@northwind.example>",
    )
    m.set_content(text)
    m.add_alternative(html, subtype="html")
    _finish(m, out / "mail/nwos-v2.15.0-announcement.eml", ["=_nw_alt_2150_0001"])

    # 5. multipart/mixed with a PDF and a small text attachment
    m = EmailMessage()
    _headers(
        m,
        from_="Jonas Virtanen <jonas.virtanen@northwind.example>",
        to="Aino Laaksonen <aino.laaksonen@pohjolaparts.example>",
        date="Thu, 26 Sep 2024 09:15:33 +0300",
        subject="Quotation Q-2024-0917: extension of your XR-5200 fleet",
        message_id="<q-2024-0917@sales.northwind.example>",
    )
    m.set_content(
        _body("""
        Dear Aino,

        Thank you for the good pilot review last week. As discussed, please find attached our
        quotation Q-2024-0917 for extending your fleet in Vantaa with six more XR-5200 robots and
        two CD-2 charging docks.

        Because this order brings your fleet to twelve robots, we have applied a volume discount
        of 8 percent on the robots. The quotation is valid until 31 December 2024, so the prices
        are not affected by our 2025 price list.

        Delivery would take about six weeks from the order. Our field team can commission the new
        robots in two days, without stopping the existing fleet.

        I have also attached the short summary of the pilot figures that your management asked
        for.

        Best regards,
        Jonas Virtanen
        Sales Engineering Nordics, Northwind Robotics
    """)
    )
    m.add_attachment(pdf_quote_attachment(), maintype="application", subtype="pdf", filename="Q-2024-0917.pdf")
    m.add_attachment(
        dedent("""\
        Pilot summary, Pohjola Parts, Vantaa
        Duration: 2 July - 15 July 2024
        Fleet: 6 x XR-5200
        Peak throughput: 142 picks per hour
        Availability: 98.9 percent
        """),
        subtype="plain",
        filename="pilot-summary.txt",
    )
    _finish(m, out / "mail/quotation-q-2024-0917.eml", ["=_nw_mixed_0917_0001"])


# ---------------------------------------------------------------------------------------------
# DOCX
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Broken files
# ---------------------------------------------------------------------------------------------


def broken(out: Path) -> None:
    b = out / "broken"
    b.mkdir(parents=True, exist_ok=True)
    tmp = out / ".spare-parts.tmp.pdf"
    pdf_spare_parts(tmp)
    # Re-save with object streams: the page tree then lives near the end of the file, so the
    # truncated copy opens (after MuPDF's repair) with zero pages instead of a partial document.
    with pymupdf.open(tmp) as doc:
        full = doc.tobytes(garbage=3, deflate=True, no_new_id=True, use_objstms=1)
    tmp.unlink()
    (b / "truncated-spare-parts.pdf").write_bytes(full[: int(len(full) * 0.4)])
    rng = random.Random(20240917)
    blob = bytearray(rng.getrandbits(8) for _ in range(4096))
    for i in range(0, len(blob), 7):
        blob[i] = 0
    (b / "sensor-dump.txt").write_bytes(bytes(blob))
    (b / "empty.md").write_bytes(b"")


# ---------------------------------------------------------------------------------------------


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
    for rel, text in MARKDOWN.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text).lstrip("\n"), encoding="utf-8", newline="\n")
    notes = out / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "lyon-office-move.txt").write_bytes(LYON_NOTE.encode("latin-1"))
    (notes / "product-council-minutes-2024-09-12.txt").write_text(MINUTES, encoding="utf-8", newline="\n")
    (notes / "helsinki-pilot-log.txt").write_text(PILOT_LOG, encoding="utf-8", newline="\n")
    (out / "support").mkdir(exist_ok=True)
    (out / "support/support-faq.txt").write_text(FAQ, encoding="utf-8", newline="\n")
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
