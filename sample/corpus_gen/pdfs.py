"""The corpus PDFs: catalogue tables, manuals, postmortem, handbook, two-column newsletter.

Each builder writes one document under its folder of the corpus (catalog/, manuals/, reports/,
policies/); the layouts exercise grid tables, numbered headings, running headers and footers
and a two-column page.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from .pdf_layout import A4, MARGIN_X, FlowPdf, save_pdf, wrap

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
