"""Dagster definitions, jobs, sensors, schedules, the instance, and the `bindery` CLI."""
