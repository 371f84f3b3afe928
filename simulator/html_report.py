"""The report a capacity planner reads: one HTML page, PNG plots (matplotlib, headless) and CSV time series.

Plots: GPU allocation (requested and held) over time, VRAM waste, FGD fragmentation, pending pods; for FGD
protocol runs the x axis is the arrived GPU demand as a share of capacity, as in the paper's figures. With
`--sizing observed:...`, the distribution of VRAM granted vs observed, and its table.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .comparison import SimulationResult  # noqa: E402
from .kpis import KPI_LOADS, Recorder  # noqa: E402
from .report_sections import (  # noqa: E402
    assumptions_section,
    breakdown_sections,
    cell,
    explanations_section,
    summary_table,
)

__all__ = ["SERIES_COLUMNS", "write_report", "write_series"]

SERIES_COLUMNS = (
    "time", "arrived_ratio", "allocation_ratio", "held_ratio", "vram_waste_ratio", "fragmentation_ratio",
    "pending", "pending_gpu",
)  # fmt: skip


def _rows(rec: Recorder) -> list[dict[str, Any]]:
    gpus = max(1, rec.total_gpus)
    vram = "vram_waste_ratio" not in rec.extra.get("unmodelled", ())  # e.g. the FGD paper's baselines: blank
    rows = []
    for s in rec.samples:
        rows.append(
            {
                "time": s.time,
                "arrived_ratio": round(s.arrived, 6),
                "allocation_ratio": round(s.allocated / gpus, 6),
                "held_ratio": round(s.held / gpus, 6),
                "vram_waste_ratio": _waste(s) if vram else "",
                "fragmentation_ratio": "" if s.fragmentation is None else round(s.fragmentation, 6),
                "pending": s.pending,
                "pending_gpu": s.pending_gpu,
            }
        )
    return rows


def _waste(s: Any) -> float:
    return round(1 - s.vram_needed / s.vram_held, 6) if s.vram_held else 0.0


def write_series(rec: Recorder, path: Path) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SERIES_COLUMNS)
        writer.writeheader()
        writer.writerows(_rows(rec))
    return path


# one style per strategy (by run order), so that curves on top of each other still show
_LINES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "x", "P", "*")


def _missing_reason(rec: Recorder, key: str) -> str:
    if key in rec.extra.get("unmodelled", ()):
        return "not in that simulator's model (the FGD paper's simulator keeps compute shares only, no VRAM)"
    return "the run recorded no value of it"


def _plot(result: SimulationResult, key: str, title: str, ylabel: str, path: Path) -> tuple[Path, list[str]]:
    """The plot, and sentences about the strategies not drawn on it or drawn on top of an identical curve."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=110)
    fgd = result.input.get("protocol") == "fgd"
    drawn: dict[tuple[Any, ...], str] = {}  # a curve already drawn -> the run that drew it
    captions: list[str] = []
    for index, (name, rec) in enumerate(result.runs.items()):
        rows = [r for r in _rows(rec) if r[key] != ""]
        if not rows:
            captions.append(f"{name} is not on this plot: {_missing_reason(rec, key)}.")
            continue
        xs = [r["arrived_ratio"] * 100 if fgd else r["time"] / 3600 for r in rows]
        ys = [r[key] for r in rows]
        same = drawn.setdefault((tuple(xs), tuple(ys)), name)
        label = name
        if same != name:  # identical to one drawn: its own style on top, and said in the legend and the caption
            label = f"{name} (same as {same})"
            captions.append(f"{name}'s curve is identical to {same}'s: drawn on top of it in its own style.")
        every = max(1, len(xs) // 8)
        ax.plot(
            xs, ys, label=label, drawstyle="default" if fgd else "steps-post",
            linestyle=_LINES[index % len(_LINES)], linewidth=2.2 - 0.4 * (index % 3),
            marker=_MARKERS[index % len(_MARKERS)], markersize=5, markevery=(index * every // 4 % every, every),
        )  # fmt: skip
    if fgd:  # where the summary reads the protocol's KPIs
        for load in KPI_LOADS:
            ax.axvline(load, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_title(title)
    ax.set_xlabel("arrived GPU demand (% of capacity)" if fgd else "time (hours)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path, captions


def _sizing_plot(result: SimulationResult, path: Path) -> Path | None:
    """`--sizing observed`: the distribution (CDF over placed GPU pods) of VRAM granted per device by each gpudra
    run, beside what the pods needed and what was observed for their owners."""
    if not result.sizing:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=110)

    def cdf(values: list[int], label: str, style: str = "-") -> None:
        if values:
            ordered = sorted(v / 1024 for v in values)
            ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], style, label=label, linewidth=1.4)

    first = next(iter(result.sizing.values()))["rows"]
    cdf([r["need_mib"] for r in first], "needed (VRAM model)", ":")
    cdf([r["observed_mib"] for r in first if r["observed_mib"] is not None], "observed peak (owners with data)", "--")
    for name, data in result.sizing.items():
        cdf([r["granted_mib"] for r in data["rows"]], f"granted: {name}")
    ax.set_xscale("log", base=2)
    ax.set_title("VRAM per device: granted vs observed (placed GPU pods)")
    ax.set_xlabel("GiB per device (log scale)")
    ax.set_ylabel("share of pods at or below")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _sizing_table(summary: dict[str, Any]) -> str:
    stats = summary.get("sizing") or {}
    if not stats:
        return ""
    keys = list(next(iter(stats.values())))
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join(
        f"<tr><th>{html.escape(name)}</th>" + "".join(f"<td>{cell(row[k])}</td>" for k in keys) + "</tr>"
        for name, row in stats.items()
    )
    source = html.escape(str((summary["input"].get("sizing") or {}).get("source", "")))
    return (
        f"<h2>Granted vs observed VRAM</h2><p>Observed usage: {source}. MiB per device; a pod's grant is its first "
        f"placement.</p><table><tr><th>run</th>{head}</tr>{body}</table>"
    )


def _allocation_title(result: SimulationResult) -> str:
    if result.input.get("protocol") == "fgd":  # the FGD paper's Fig. 9(a): allocation against arrived demand
        return "GPU allocation vs arrived GPU demand (FGD protocol)"
    return "GPU allocation (requested compute / GPUs)"


def write_report(result: SimulationResult, directory: str | Path) -> Path:
    """Write index.html, the PNGs, summary.json and one CSV series per strategy; returns index.html."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    summary = result.summary()
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    series = {name: write_series(rec, out / f"series-{name}.csv").name for name, rec in result.runs.items()}
    drawn = [
        _plot(result, "allocation_ratio", _allocation_title(result), "ratio", out / "allocation.png"),
        _plot(result, "vram_waste_ratio", "VRAM waste (1 - needed / held)", "ratio", out / "vram_waste.png"),
        _plot(result, "fragmentation_ratio", "GPU fragmentation (FGD measure)", "ratio", out / "fragmentation.png"),
        _plot(result, "pending", "Pods pending", "pods", out / "pending.png"),
    ]
    sizing = _sizing_plot(result, out / "sizing.png")
    if sizing is not None:
        drawn.append((sizing, []))
    index = out / "index.html"
    index.write_text(_html(summary, [(p.name, captions) for p, captions in drawn], series))
    return index


def _load_table(table: dict[str, Any]) -> str:
    """The FGD protocol's KPIs (allocation %, fragmentation, failed pods) at each arrived-demand load."""
    rows = {name: row["at_load"] for name, row in table.items() if "at_load" in row}
    if not rows:
        return ""
    loads = list(next(iter(rows.values())))
    kpis = [("gpu_allocation_pct", "GPU allocation %"), ("fragmentation_ratio", "fragmentation")]
    kpis.append(("failed_pods", "failed pods"))
    head = "".join(f"<th>{html.escape(t)} @{load}%</th>" for load in loads for _, t in kpis)
    body = "".join(
        f"<tr><th>{html.escape(name)}</th>"
        + "".join(f"<td>{cell(at[load][k])}</td>" for load in loads for k, _ in kpis)
        + "</tr>"
        for name, at in rows.items()
    )
    return f"<h2>At arrived demand (FGD protocol)</h2><table><tr><th>strategy</th>{head}</tr>{body}</table>"


def _figure(name: str, captions: list[str]) -> str:
    caption = "".join(f"<p>{html.escape(c)}</p>" for c in captions)
    return f'<figure id="plot-{name.removesuffix(".png")}"><img src="{name}" alt="{name}">' + (
        f"<figcaption>{caption}</figcaption></figure>" if caption else "</figure>"
    )


def _html(summary: dict[str, Any], plots: list[tuple[str, list[str]]], series: dict[str, str]) -> str:
    at_load = _load_table(summary["strategies"])
    images = "".join(_figure(name, captions) for name, captions in plots)
    links = " · ".join(f'<a href="{f}">{html.escape(n)}</a>' for n, f in series.items())
    info = html.escape(json.dumps(summary["input"], indent=2))
    notes = "".join(f"<p><strong>Note:</strong> {html.escape(n)}</p>" for n in summary.get("notes", ()))
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>gpudra simulation report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:right;font-size:.9em}}
figure{{display:inline-block;margin:.5em;max-width:52em}}figcaption{{font-size:.9em}}
pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head><body>
<h1>gpudra simulation report</h1>
<h2>Summary</h2>{summary_table(summary)}{notes}{explanations_section(summary)}{at_load}{_sizing_table(summary)}
<p>Ratios are in [0, 1]; definitions in docs/simulator.md.
Time series (CSV): {links} · <a href="summary.json">summary.json</a></p>
{breakdown_sections(summary)}
<h2>Plots</h2>{images}
{assumptions_section(summary)}
<h2>Input</h2><pre>{info}</pre>
</body></html>
"""
