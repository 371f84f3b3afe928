"""Benchmark of `gpudra plan`: its wall time against one `simulate` of the same inputs (every strategy, one after the
other, on the pools at their max), measured in the same process, and the simulations each strategy's search took.
CPU seconds are given beside (plan's: this process and its workers), which a loaded machine moves less than wall time.

Issue 42's bound: on the full openb trace, <= 12 simulations per strategy and plan <= 10x one simulate on 2 cores:

    python benchmarks/plan.py examples/plan/openb.yaml --trace TRACES/openb_pod_list_default.csv --workers 2

    python benchmarks/plan.py POOLS [--trace CSV] [--pods N] [--target T] [--workers N] [--driver-gates G]
                              [--no-early-stop]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.comparison import SimulationConfig, simulate  # noqa: E402
from simulator.driver import simulated_driver  # noqa: E402
from simulator.plan import PLAN_STRATEGIES, PlanConfig, plan, plan_workload  # noqa: E402
from simulator.plan_inputs import load_pools, parse_target  # noqa: E402


def main() -> None:
    """Print one JSON object: simulate_seconds, plan_seconds, their ratio and the simulations per strategy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pools")
    parser.add_argument("--trace")
    parser.add_argument("--cluster")
    parser.add_argument("--pods", type=int, default=1200)
    parser.add_argument("--target", default="p95-pending<=10m")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--driver-gates", default="")
    parser.add_argument("--no-early-stop", action="store_true", help="run every probe to its end (for comparison)")
    args = parser.parse_args()
    pools = load_pools(args.pools)
    workload = plan_workload(args.trace, args.cluster, args.pods, 0)
    driver = simulated_driver(args.driver_gates)
    high = tuple(p.high for p in pools.pools)
    started, cpu = time.perf_counter(), _cpu()
    simulate(SimulationConfig(pools.cluster(high), workload, PLAN_STRATEGIES, 0, "replay", driver=driver))
    simulate_seconds, simulate_cpu = time.perf_counter() - started, _cpu() - cpu
    config = PlanConfig(pools, parse_target(args.target), workload, PLAN_STRATEGIES, 0, driver=driver,
                        workers=args.workers, early_stop=not args.no_early_stop)  # fmt: skip
    started, cpu = time.perf_counter(), _cpu()
    result = plan(config)
    plan_seconds, plan_cpu = time.perf_counter() - started, _cpu() - cpu
    print(json.dumps({
        "pools": args.pools, "trace": args.trace or f"generated ({args.pods} pods)", "target": args.target,
        "workers": args.workers, "early_stop": not args.no_early_stop,
        "simulate_seconds": round(simulate_seconds, 2), "plan_seconds": round(plan_seconds, 2),
        "ratio": round(plan_seconds / simulate_seconds, 2),
        "simulate_cpu_seconds": round(simulate_cpu, 2), "plan_cpu_seconds": round(plan_cpu, 2),
        "cpu_ratio": round(plan_cpu / simulate_cpu, 2),
        "simulations": {name: found.simulations for name, found in result.plans.items()},
        "nodes": {name: list(found.counts) for name, found in result.plans.items()},
    }, indent=2))  # fmt: skip


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (plan's worker pool ends with the plan)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
