"""gpudra's placement on the FGD paper's protocol, side by side with FGD as the peer simulator runs it.

Per openb trace and seed: `gpudra simulate --protocol fgd` with FGD (`simulator.peer_protocol`), gpudra as a
real cluster would place (the shipped policies, the scored allocator, kube-scheduler's least-allocated node
ranking) and gpudra with FGD's fragmentation score as the node ranking (`--node-score fragmentation`, a what-if
for a fragmentation-aware scheduler). FGD's model shares GPUs between pods, which DRA can only do with consumable
capacity: NVIDIA DRA driver 0.5 publishes it behind its ConsumableShares gate, so `gpudra` and
`gpudra-fragmentation` run with `--consumable-capacity` (that gate: every GPU shareable), and `gpudra-driver-exact`
on the driver's default slices (one claim per whole GPU; fractions fit only MIG devices, which the openb GPUs
lack). All run the same tuned workload; gpudra's GPU shares are bound by compute as well as memory (the
protocol's resource model).
Prints JSON: per trace the GPU allocation %, fragmentation and failed pods at 80/100/130 % arrived, the VRAM
waste, and gpudra's gap to FGD; the same-run baseline is FGD's own wall time (`wall_ratio`: each strategy's over FGD's).

    python benchmarks/fgd_gpudra.py [--traces DIR] [--names default,multigpu40] [--seeds 42] [--workers 0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.comparison import SimulationConfig, simulate  # noqa: E402
from simulator.driver import simulated_driver  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRACES = Path(os.path.relpath(ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"))
VARIANTS: dict[str, tuple[str, str | None, bool]] = {  # strategy, node score, consumable capacity
    "fgd": ("fgd", None, False),
    "gpudra": ("gpudra", None, True),
    "gpudra-fragmentation": ("gpudra", "fragmentation", True),
    "gpudra-driver-exact": ("gpudra", None, False),
}
NAMES = "cpu050,cpu100,cpu200,cpu250,default,gpushare100,gpushare40,gpushare80,gpuspec10,gpuspec20,gpuspec25"
NAMES += ",multigpu20,multigpu30,multigpu40"


def _job(args: tuple[Path, str, str, int]) -> dict[str, Any]:
    traces, trace, variant, seed = args
    strategy, node_score, consumable = VARIANTS[variant]
    result = simulate(
        SimulationConfig(
            traces / "openb_node_list_gpu_node.csv",
            traces / f"openb_pod_list_{trace}.csv",
            strategies=[strategy],
            seed=seed,
            protocol="fgd",
            node_score=node_score,
            driver=simulated_driver(consumable_capacity=consumable),
        )
    )
    row = result.summary()["strategies"][strategy]
    return {
        "trace": trace, "variant": variant, "seed": seed, "at_load": row["at_load"],
        "vram_waste_ratio": row["vram_waste_ratio"], "wall_seconds": round(result.runs[strategy].wall_seconds, 2),
    }  # fmt: skip


def _mean(rows: list[dict[str, Any]], load: str, key: str) -> float | None:
    values = [r["at_load"][load][key] for r in rows if r["at_load"][load][key] is not None]
    return round(sum(values) / len(values), 3) if values else None


def _plain_mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]  # None: not modelled (FGD's model has no VRAM)
    return round(sum(known) / len(known), 4) if known else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--names", default=NAMES)
    parser.add_argument("--seeds", default="42")
    parser.add_argument("--workers", type=int, default=0, help="0 = all cores")
    args = parser.parse_args()
    if not (args.traces / "openb_node_list_gpu_node.csv").is_file():
        sys.exit(f"error: {args.traces / 'openb_node_list_gpu_node.csv'} not found (pass --traces)")
    seeds = [int(s) for s in args.seeds.split(",")]
    names = [n for n in args.names.split(",") if n]
    jobs = [(args.traces, t, v, s) for t in names for v in VARIANTS for s in seeds]
    with ProcessPoolExecutor(max_workers=args.workers or os.cpu_count()) as pool:
        rows = list(pool.map(_job, jobs))
    out: dict[str, Any] = {"seeds": seeds, "cluster": "openb_node_list_gpu_node.csv", "traces": {}}
    for trace in names:
        entry: dict[str, Any] = {}
        for variant in VARIANTS:
            mine = [r for r in rows if r["trace"] == trace and r["variant"] == variant]
            entry[variant] = {
                load: {k: _mean(mine, load, k) for k in ("gpu_allocation_pct", "fragmentation_ratio", "failed_pods")}
                for load in ("80", "100", "130")
            } | {
                "vram_waste_ratio": _plain_mean([r["vram_waste_ratio"] for r in mine]),
                "wall_seconds": round(sum(r["wall_seconds"] for r in mine) / len(mine), 2),
            }
        base = entry["fgd"]["wall_seconds"] or 1.0
        for variant in VARIANTS:
            entry[variant]["wall_ratio"] = round(entry[variant]["wall_seconds"] / base, 2)
        entry["gap_to_fgd_at_100"] = {
            v: round((entry[v]["100"]["gpu_allocation_pct"] or 0) - (entry["fgd"]["100"]["gpu_allocation_pct"] or 0), 2)
            for v in VARIANTS
            if v != "fgd"
        }
        out["traces"][trace] = entry
    gaps = [e["gap_to_fgd_at_100"] for e in out["traces"].values()]
    out["mean_gap_to_fgd_at_100"] = {v: round(sum(g[v] for g in gaps) / len(gaps), 2) for v in VARIANTS if v != "fgd"}
    out["consumable_capacity"] = {v: c for v, (_, _, c) in VARIANTS.items() if v != "fgd"}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
