"""The engineering docs (Markdown): heading hierarchy, code fences and GFM tables.

MARKDOWN maps each path under the corpus to its text (dedented when written).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

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


def markdown_docs(out: Path) -> None:
    for rel, text in MARKDOWN.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text).lstrip("\n"), encoding="utf-8", newline="\n")
