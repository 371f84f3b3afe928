"""Scaling of the simulator with kube-scheduler's model: CPU time per strategy on the full openb trace, 1x-8x.

The openb GPU node list (1,213 nodes) and default pod list (8,152 pods), on the FGD protocol as `gpudra simulate`
runs them, copied k times (k = 1, 2, 4, 8: pods x nodes grows k^2). Scoring every feasible node class and the
percentageOfNodesToScore scan must keep the growth near linear in pods x classes, never quadratic in nodes.
Prints one JSON object: per strategy and scale the CPU seconds, and the ratios t(k)/t(1), t(k)/(k t(1)) and
t(k)/(k^2 t(1)) against the 1x run of the same process.

    python benchmarks/simulate_scaling.py [TRACE_DIR] [--strategies dra-whole,gpudra] [--scales 1,2,4,8]
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
from simulator.strategies import make_strategy  # noqa: E402
from simulator.traces import load_trace  # noqa: E402
from simulator.workload import SimPod  # noqa: E402

DEFAULT_DIR = str(Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "alibaba-gpu-v2023")


def scaled(cluster: ClusterSpec, pods: list[SimPod], k: int) -> tuple[ClusterSpec, list[SimPod]]:
    nodes = [replace(n, name=f"{n.name}-x{i}") for i in range(k) for n in cluster.nodes]
    copies = [replace(p, name=f"{p.name}-x{i}") for i in range(k) for p in pods]
    return ClusterSpec(name=f"{cluster.name}x{k}", nodes=nodes, source=cluster.source), copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace_dir", nargs="?", default=DEFAULT_DIR)
    parser.add_argument("--strategies", default="device-plugin,dra-whole,gpudra")
    parser.add_argument("--scales", default="1,2,4,8")
    args = parser.parse_args(argv)
    base = Path(args.trace_dir)
    cluster = load_cluster(base / "openb_node_list_gpu_node.csv")
    work = load_trace(base / "openb_pod_list_default.csv")
    scales = [int(s) for s in args.scales.split(",")]
    results: dict[str, Any] = {}
    for name in args.strategies.split(","):
        rows: dict[str, Any] = {}
        for k in scales:
            spec, pods = scaled(cluster, work.pods, k)
            options = {"compute_bound": True} if name == "gpudra" else {}  # as `gpudra simulate --protocol fgd`
            strategy = make_strategy(name, seed=0, **options)
            cpu = time.process_time()
            rec = run(spec, pods, strategy, EngineConfig(protocol="fgd", seed=0))
            rows[f"{k}x"] = {
                "cpu_s": round(time.process_time() - cpu, 3),
                "pods": rec.pods_total,
                "nodes": len(spec.nodes),
                "gpu_allocation_ratio": summarize(rec)["gpu_allocation_ratio"],
            }
            print(json.dumps({name: {f"{k}x": rows[f"{k}x"]}}), file=sys.stderr, flush=True)
        one = rows[f"{scales[0]}x"]["cpu_s"] or 1e-9
        for k in scales:
            row, factor = rows[f"{k}x"], k / scales[0]
            row["ratio_vs_1x"] = round(row["cpu_s"] / one, 3)
            row["ratio_vs_linear"] = round(row["cpu_s"] / (one * factor), 3)
            row["ratio_vs_quadratic"] = round(row["cpu_s"] / (one * factor**2), 3)
        results[name] = rows
    print(json.dumps({"trace": str(base), "protocol": "fgd", "strategies": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
