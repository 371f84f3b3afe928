"""Fixtures for the CLI tests: the small openb files the simulator's tests use, for `gpudra simulate`."""

from __future__ import annotations

from tests.simulator.conftest import node_csv, pod_csv

__all__ = ["node_csv", "pod_csv"]
