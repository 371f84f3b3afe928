"""A simulation's comparison for the terminal: one line about the inputs, then one metric per row."""

from __future__ import annotations

from typing import Any

from rich.table import Table

__all__ = ["COLUMNS", "LOAD_COLUMNS", "comparison", "metric_text", "notes_text"]

# (summary key, row title), in the order the table shows them
COLUMNS = [
    ("pods_placed", "placed"),
    ("pods_pending", "pending"),
    ("gpu_allocation_ratio", "GPU alloc"),
    ("vram_waste_ratio", "VRAM waste"),
    ("fragmentation_ratio", "frag"),
    ("unallocated_gpus", "unalloc GPUs"),
    ("nvlink_satisfied_ratio", "NVLink ok"),
    ("mig_reconfigurations", "MIG reconf"),
    ("drained_node_hours", "drained h"),
    ("mean_pending_seconds", "wait s"),
]


# the FGD protocol's KPIs, read at each load in the summary's `at_load`
LOAD_COLUMNS = [("gpu_allocation_pct", "alloc %"), ("fragmentation_ratio", "frag"), ("failed_pods", "failed")]


def metric_text(value: Any) -> str:
    """Ratios with three decimals, large numbers whole, `-` for what a run does not model."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.0f}"
    return str(value)


def comparison(summary: dict[str, Any]) -> tuple[str, Table]:
    """The inputs line and the metrics table (a column per strategy) of a `SimulationResult.summary()`."""
    info = summary["input"]
    skipped = info["workload"]["skipped"] + info["cluster"]["skipped"]
    noted = sum(n["count"] for n in info["workload"].get("kept_notes", {}).values())
    heading = (
        f"cluster {info['cluster']['name']}: {info['cluster']['nodes']} nodes, {info['cluster']['gpus']} GPUs; "
        f"workload {info['workload']['source']}: {info['workload']['pods']} pods"
        + (f" ({skipped} skipped, see --json)" if skipped else "")
        + (f" ({noted} kept with notes, see --json)" if noted else "")
    )
    demand = summary.get("explanations", {}).get("demand")
    if demand:  # the FGD protocol submits more pods than the workload has
        load = info["load"]
        heading += f"; FGD protocol: {demand['submitted_pods']} pods submitted (demand tuned to {load:g}x the GPUs)"
    table = Table(show_edge=False)
    table.add_column("metric")
    for name in summary["strategies"]:
        table.add_column(name, justify="right")
    rows = list(summary["strategies"].values())
    timeless = info["protocol"] == "fgd"  # no time: no wait to show
    for key, title in COLUMNS:
        cells = ["n/a" if timeless and key == "mean_pending_seconds" else metric_text(row[key]) for row in rows]
        table.add_row(title, *cells)
    loads = rows[0].get("at_load", {}) if rows else {}
    for load in loads:  # the FGD protocol's KPIs at each arrived-demand load
        for key, title in LOAD_COLUMNS:
            cells = [row.get("at_load", {}).get(load, {}).get(key) for row in rows]
            shown = ["-" if v is None else f"{v:.2f}" if key == "gpu_allocation_pct" else metric_text(v) for v in cells]
            table.add_row(f"{title} @{load}%", *shown)
    return heading, table


def notes_text(summary: dict[str, Any]) -> str:
    """The summary's notes (identical results, and what in the cluster made them so), one line each."""
    return "".join(f"note: {note}\n" for note in summary.get("notes", ()))
