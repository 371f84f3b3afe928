"""The model's whole-run figures against the spread of several real runs of the same sample (kube-scheduler picks
at random among tied nodes, so replays differ): per figure the replays' min, median and max, and whether the model's
value lies within them.

That test alone says little with few replays: where the model and the real scheduler are draws of one distribution,
the model lies within the [min, max] of K replays with probability (K - 1) / (K + 1), a third for two replays. Real
runs are dear and the model is cheap, so the model is also run under other tie-break seeds (it draws its random
choice among tied nodes from a seeded generator, as kube-scheduler draws from its own): with M model runs, each
replay lies within the model runs' [min, max] with probability (M - 1) / (M + 1) (0.82 for ten runs) when the two
agree, and a replay outside the model's own spread is evidence that they do not."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from dra.errors import InputError

__all__ = ["flatten", "model_spread", "spread"]


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


def spread(
    model: Mapping[str, Any], replays: Sequence[Mapping[str, Any]], model_runs: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Per figure (flattened: `pending_by_gpus.4`): the model's value, the replays' values with their min, median
    and max, and `within` (min <= model <= max; None where a side has no value); then which figures lie outside.

    `model_runs`: the model's runs under other tie-break seeds. With them each figure also gets the model's values
    (`model` first) with their `model_min`, `model_median`, `model_max`, and `replays_outside_model`, how many
    replays lie outside the model's [min, max] (None where a side has no value); the summary counts the figures no
    replay lies outside (`figures_within_model`) and names the others (`outside_model`).
    `InputError` without replays, or when a replay or model run lacks a figure the model has (or has one it lacks)."""
    if not replays:
        raise InputError("whole-run spread: no replays to compare the model with")
    ours = flatten(model)
    theirs = [flatten(found) for found in replays]
    others = [flatten(found) for found in model_runs]
    _same_figures(ours, theirs, "replay", 1)
    _same_figures(ours, others, "model run", 2)  # the model itself is model run 1
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
        if others:
            row |= _model_spread([value, *(found[name] for found in others)], known)
        table[name] = row
    outside = [name for name, row in table.items() if row["within"] is False]
    result: dict[str, Any] = {
        "replays": len(replays),
        "figures": table,
        "within": sum(1 for row in table.values() if row["within"]),
        "outside": outside,
    }
    if others:
        judged = {name: row["replays_outside_model"] for name, row in table.items()}
        result |= {
            "model_runs": 1 + len(others),
            "figures_within_model": sum(1 for outside in judged.values() if outside == 0),
            "outside_model": [name for name, outside in judged.items() if outside],
        }
    return result


def model_spread(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The model's runs alone: per figure (flattened) their values with `model_min`, `model_median`, `model_max`.
    `InputError` without runs or when they differ in figures."""
    if not runs:
        raise InputError("whole-run spread: no model runs")
    flat = [flatten(found) for found in runs]
    _same_figures(flat[0], flat[1:], "model run", 2)
    table = {}
    for name in flat[0]:
        row = _model_spread([found[name] for found in flat], [])
        del row["replays_outside_model"]  # no replays here
        table[name] = row
    return table


def _same_figures(model: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], what: str, first: int) -> None:
    """`InputError` naming the first of `runs` (numbered from `first`) whose figures are not the model's."""
    for number, found in enumerate(runs, start=first):
        if set(found) != set(model):
            odd = sorted(set(found) ^ set(model))
            raise InputError(f"whole-run spread: {what} {number} and the model differ in figures: {odd}")


def _model_spread(values: list[float | None], replays: list[float]) -> dict[str, Any]:
    """The model runs' values of one figure, their min / median / max, and how many of the known replay values lie
    outside them; None where no replay has a value or some model run has none."""
    known = sorted(v for v in values if v is not None)
    if not known or len(known) < len(values):
        return {"model_runs": values, "model_min": None, "model_median": None, "model_max": None,
                "replays_outside_model": None}  # fmt: skip
    low, high = known[0], known[-1]
    return {
        "model_runs": values,
        "model_min": low,
        "model_median": statistics.median(known),
        "model_max": high,
        "replays_outside_model": sum(1 for v in replays if not low <= v <= high) if replays else None,
    }
