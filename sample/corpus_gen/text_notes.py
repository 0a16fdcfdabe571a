"""The plain-text files: office notes (one in latin-1), minutes, a pilot log, the support FAQ.

The latin-1 note checks that a non-UTF-8 text file is decoded, not dead-lettered.
"""

from __future__ import annotations

from pathlib import Path

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


def text_notes(out: Path) -> None:
    notes = out / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "lyon-office-move.txt").write_bytes(LYON_NOTE.encode("latin-1"))
    (notes / "product-council-minutes-2024-09-12.txt").write_text(MINUTES, encoding="utf-8", newline="\n")
    (notes / "helsinki-pilot-log.txt").write_text(PILOT_LOG, encoding="utf-8", newline="\n")
    (out / "support").mkdir(exist_ok=True)
    (out / "support/support-faq.txt").write_text(FAQ, encoding="utf-8", newline="\n")
