"""Benchmark of `gpudra plan`: its wall time against one `simulate` of the same inputs (every strategy, one after the
other, on the pools at their max), measured in the same process, and the simulations each strategy's search took.

Issue 42's bound: on the full openb trace, <= 12 simulations per strategy and plan <= 10x one simulate on 2 cores.

    python benchmarks/plan.py POOLS [--trace CSV] [--pods N] [--target T] [--workers N] [--driver-gates G]
"""

from __future__ import annotations

import argparse
import json
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
    args = parser.parse_args()
    pools = load_pools(args.pools)
    workload = plan_workload(args.trace, args.cluster, args.pods, 0)
    driver = simulated_driver(args.driver_gates)
    high = tuple(p.high for p in pools.pools)
    started = time.perf_counter()
    simulate(SimulationConfig(pools.cluster(high), workload, PLAN_STRATEGIES, 0, "replay", driver=driver))
    simulate_seconds = time.perf_counter() - started
    config = PlanConfig(pools, parse_target(args.target), workload, PLAN_STRATEGIES, 0, driver=driver,
                        workers=args.workers)  # fmt: skip
    started = time.perf_counter()
    result = plan(config)
    plan_seconds = time.perf_counter() - started
    print(json.dumps({
        "pools": args.pools, "trace": args.trace or f"generated ({args.pods} pods)", "target": args.target,
        "simulate_seconds": round(simulate_seconds, 2), "plan_seconds": round(plan_seconds, 2),
        "ratio": round(plan_seconds / simulate_seconds, 2),
        "simulations": {name: found.simulations for name, found in result.plans.items()},
        "nodes": {name: list(found.counts) for name, found in result.plans.items()},
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
