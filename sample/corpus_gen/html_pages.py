"""The wiki pages (HTML): article content inside site chrome repeated on every page.

The header, nav, sidebar and footer are the same boilerplate everywhere, so the pages test
that parsing keeps <main><article> (headings, lists, tables, code) and drops the chrome.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

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
