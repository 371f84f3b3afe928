"""The model's whole-run figures against the spread of several real runs of the same sample (kube-scheduler picks
at random among tied nodes, so replays differ): per figure the replays' min, median and max, and whether the model's
value lies within them."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from dra.errors import InputError

__all__ = ["flatten", "spread"]


def flatten(found: Mapping[str, Any], prefix: str = "") -> dict[str, float | None]:
    """`{"pending_by_gpus": {"4": 12.0}, "unplaced_pods": 3}` -> `{"pending_by_gpus.4": 12.0, "unplaced_pods": 3}`."""
    out: dict[str, float | None] = {}
    for key, value in found.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif value is None or isinstance(value, int | float):
            out[name] = value
        else:
            raise InputError(f"whole-run figure {name}: {value!r} is not a number")
    return out


def spread(model: Mapping[str, Any], replays: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per figure (flattened: `pending_by_gpus.4`): the model's value, the replays' values with their min, median
    and max, and `within` (min <= model <= max; None where a side has no value); then which figures lie outside.
    `InputError` without replays, or when a replay lacks a figure the model has (or has one it lacks)."""
    if not replays:
        raise InputError("whole-run spread: no replays to compare the model with")
    ours = flatten(model)
    theirs = [flatten(found) for found in replays]
    for index, found in enumerate(theirs):
        if set(found) != set(ours):
            odd = sorted(set(found) ^ set(ours))
            raise InputError(f"whole-run spread: replay {index + 1} and the model differ in figures: {odd}")
    table: dict[str, dict[str, Any]] = {}
    for name, value in ours.items():
        values = [found[name] for found in theirs]
        known = sorted(v for v in values if v is not None)
        row: dict[str, Any] = {"model": value, "replays": values}
        if known:
            low, high = known[0], known[-1]
            row |= {"min": low, "median": statistics.median(known), "max": high}
            row["within"] = None if value is None else bool(low <= value <= high)
        else:
            row |= {"min": None, "median": None, "max": None, "within": None}
        table[name] = row
    outside = [name for name, row in table.items() if row["within"] is False]
    return {
        "replays": len(replays),
        "figures": table,
        "within": sum(1 for row in table.values() if row["within"]),
        "outside": outside,
    }
