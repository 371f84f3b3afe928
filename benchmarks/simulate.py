"""Benchmark of the simulator: wall and CPU time per strategy on the full openb default trace, scaled 1x/2x/4x.

The trace's 1,523 nodes and 8,152 pods run on the engine's FGD protocol (the workload tuned to 1.3 x the
cluster's GPU compute, `simulator.tuning`; the paper's baselines here are the replay engine's carry-overs, the
peer-exact ones are timed by `benchmarks/fgd_peer_table.py`); the 2x and 4x inputs copy every node and pod k
times, so pods x nodes grows k^2. Prints one JSON object: seconds per (strategy, scale), and the ratios t(k)/t(1) and
t(k)/(k^2 t(1)) against the 1x run measured in the same process (<= 1 means at most linear in pods x nodes).
Target: < 10 s per strategy at 1x.

    python benchmarks/simulate.py [TRACE_DIR] [--strategies a,b] [--scales 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.cluster import ClusterSpec  # noqa: E402
from simulator.cluster_sources import load_cluster  # noqa: E402
from simulator.engine import EngineConfig, run  # noqa: E402
from simulator.kpis import summarize  # noqa: E402
from simulator.strategies import STRATEGY_NAMES, make_strategy  # noqa: E402
from simulator.traces import load_trace  # noqa: E402
from simulator.workload import SimPod  # noqa: E402

# ../shared beside the checkout, as the project lays it out; pass TRACE_DIR elsewhere.
DEFAULT_DIR = str(Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "alibaba-gpu-v2023")


def scaled(cluster: ClusterSpec, pods: list[SimPod], k: int) -> tuple[ClusterSpec, list[SimPod]]:
    nodes = [replace(n, name=f"{n.name}-x{i}") for i in range(k) for n in cluster.nodes]
    copies = [replace(p, name=f"{p.name}-x{i}") for i in range(k) for p in pods]
    return ClusterSpec(name=f"{cluster.name}x{k}", nodes=nodes, source=cluster.source), copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace_dir", nargs="?", default=DEFAULT_DIR)
    parser.add_argument("--strategies", default=",".join(STRATEGY_NAMES))
    parser.add_argument("--scales", default="1,2,4")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    base = Path(args.trace_dir)
    cluster = load_cluster(base / "openb_node_list_all_node.csv")
    work = load_trace(base / "openb_pod_list_default.csv")
    scales = [int(s) for s in args.scales.split(",")]
    results: dict[str, Any] = {}
    for name in args.strategies.split(","):
        rows: dict[str, Any] = {}
        for k in scales:
            spec, pods = scaled(cluster, work.pods, k)
            wall, cpu = time.perf_counter(), time.process_time()
            options = {"compute_bound": True} if name == "gpudra" else {}  # as `gpudra simulate --protocol fgd`
            strategy = make_strategy(name, seed=args.seed, **options)
            rec = run(spec, pods, strategy, EngineConfig(protocol="fgd", seed=args.seed))
            rows[f"{k}x"] = {
                "wall_s": round(time.perf_counter() - wall, 3),
                "cpu_s": round(time.process_time() - cpu, 3),
                "pods": rec.pods_total,
                "nodes": len(spec.nodes),
                "gpu_allocation_ratio": summarize(rec)["gpu_allocation_ratio"],
            }
        one = rows[f"{scales[0]}x"]["cpu_s"] or 1e-9
        for k in scales:
            row = rows[f"{k}x"]
            row["ratio_vs_1x"] = round(row["cpu_s"] / one, 3)
            row["ratio_vs_linear_pods_x_nodes"] = round(row["cpu_s"] / (one * (k / scales[0]) ** 2), 3)
        rows["under_10s_at_1x"] = rows[f"{scales[0]}x"]["cpu_s"] < 10
        results[name] = rows
        print(json.dumps({name: rows}), file=sys.stderr, flush=True)
    print(json.dumps({"trace": str(base), "protocol": "fgd", "strategies": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
