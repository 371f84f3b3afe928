"""The HTML sections of the report that state what its figures mean, built from the summary alone: the summary table
(waits "n/a" where the protocol has no time), what the run measures (`explanations`), the breakdowns per GPU model and
per pod size, and the assumptions the figures rest on. `simulator.html_report` assembles the page."""

from __future__ import annotations

import html
from typing import Any

__all__ = [
    "BREAKDOWN_KEYS", "TIMELESS_KEYS", "assumptions_section", "breakdown_sections", "cell", "explanations_section",
    "summary_table",
]  # fmt: skip

TIMELESS_KEYS = ("mean_pending_seconds", "pending_by_gpus")  # no value under the FGD protocol: shown as n/a
BREAKDOWN_KEYS = ("by_gpu_model", "by_pod_size", "at_load")  # tables of their own, not columns of the summary's
NOT_APPLICABLE = "n/a"


def cell(value: Any, *, timeless: bool = False) -> str:
    """A table cell's text: `n/a` for what the protocol has no time for, `-` for what a run does not model."""
    if value is None:
        return NOT_APPLICABLE if timeless else "-"
    if isinstance(value, dict):
        return html.escape(", ".join(f"{k}: {v}" for k, v in value.items()) or "none")
    return html.escape(str(value))


def _fgd(summary: dict[str, Any]) -> bool:
    return bool(summary["input"].get("protocol") == "fgd")


def summary_table(summary: dict[str, Any]) -> str:
    table = summary["strategies"]
    keys = list(dict.fromkeys(k for row in table.values() for k in row if k not in BREAKDOWN_KEYS))
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    fgd = _fgd(summary)
    body = "".join(
        f"<tr><th>{html.escape(name)}</th>"
        + "".join(f'<td data-key="{k}">{cell(row.get(k), timeless=fgd and k in TIMELESS_KEYS)}</td>' for k in keys)
        + "</tr>"
        for name, row in table.items()
    )
    return f'<table id="summary"><tr><th>strategy</th>{head}</tr>{body}</table>'


def explanations_section(summary: dict[str, Any]) -> str:
    """What the protocol measures, the demand it submitted and what `unallocated_gpus` counts (with the GPUs unused
    and partly held at the end, where the run recorded them)."""
    found = summary.get("explanations")
    if not found:
        return ""
    parts = [f'<p id="time">{html.escape(found["time"])}</p>']
    demand = found.get("demand")
    if demand:
        parts.append(f'<p id="demand">{html.escape(demand["text"])}</p>')
    parts.append(f'<p id="unallocated">{html.escape(found["unallocated_gpus"])}</p>')
    occupancy = [
        f"{html.escape(name)}: {row['gpus_unused']} unused, {row['gpus_partly_held']} partly held"
        for name, row in summary["strategies"].items()
        if "gpus_unused" in row
    ]
    if occupancy:
        parts.append(f'<p id="occupancy">GPUs at the end of the run: {"; ".join(occupancy)}.</p>')
    return '<section id="explanations"><h2>What this run measures</h2>' + "".join(parts) + "</section>"


def _breakdown(summary: dict[str, Any], key: str, title: str, label: str, section: str) -> str:
    rows = {name: row[key] for name, row in summary["strategies"].items() if row.get(key)}
    missing = [name for name, row in summary["strategies"].items() if not row.get(key)]
    if not rows:
        return ""
    fgd = _fgd(summary)
    columns = list(next(iter(next(iter(rows.values())).values())))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        f'<tr><th>{html.escape(name)}</th><th data-key="{label}">{html.escape(group)}</th>'
        + "".join(f'<td data-key="{c}">{cell(values.get(c), timeless=fgd and c in TIMELESS_KEYS)}</td>'
                  for c in columns)
        + "</tr>"
        for name, groups in rows.items()
        for group, values in groups.items()
    )  # fmt: skip
    note = ""
    if missing:
        note = (
            f"<p>Not recorded for {html.escape(', '.join(missing))} (the FGD paper's simulator keeps totals only).</p>"
        )
    return (
        f'<section id="{section}"><h2>{title}</h2><table><tr><th>strategy</th><th>{label}</th>{head}</tr>{body}'
        f"</table>{note}</section>"
    )


def breakdown_sections(summary: dict[str, Any]) -> str:
    """Per GPU model: allocation and held ratios of its GPUs, VRAM waste, pods; per pod size (GPUs per pod, VRAM per
    GPU bucket): pods, placed, never placed, mean wait, share of the cluster's GPUs, VRAM waste."""
    model = _breakdown(summary, "by_gpu_model", "By GPU model", "model", "by-gpu-model")
    size = _breakdown(summary, "by_pod_size", "By pod size (GPUs per pod, VRAM per GPU)", "size", "by-pod-size")
    if model:
        model += (
            "<p>Ratios of that model's GPUs; pods_never_placed_restricted_to_it counts GPU pods never placed that "
            "may run on a few models only, this one among them (pods allowed any model are not attributed).</p>"
        )
    if size:
        size += "<p>gpu_allocation_ratio: that size's requested GPU compute / all the cluster's GPUs.</p>"
    return model + size


def assumptions_section(summary: dict[str, Any]) -> str:
    found = summary.get("assumptions")
    if not found:
        return ""
    scheduler = found["scheduler"]
    score = f"NodeResourcesFit {scheduler['scoring']}; gpudra's node score {scheduler['node_score']}"
    items = [
        ("gpu-model-mapping", "GPU models", found["gpu_model_mapping"]["text"]),
        ("vram-model", "VRAM model", found["vram_model"]["text"]),
        ("driver", "Driver", found["driver"]["text"]),
        ("scheduler", "Scheduler profile",
         f"{scheduler['source']}; {score}"),
        ("allocator-mode", "Allocator mode", str(found["allocator_mode"])),
    ]  # fmt: skip
    body = "".join(
        f'<li id="assume-{ident}"><strong>{html.escape(title)}:</strong> {html.escape(text)}</li>'
        for ident, title, text in items
    )
    return f'<section id="assumptions"><h2>Assumptions</h2><ul>{body}</ul></section>'
