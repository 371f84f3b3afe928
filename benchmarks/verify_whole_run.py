"""Benchmark of `gpudra simulate --verify-scheduler --whole-run`: the first --sample pods of the built-in cluster's
generated workload (one per --seeds) submitted in bulk to a real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler from tests/controlplane/build.sh, or --k8s-bin DIR) --replays times,
kube-scheduler's own queue deciding, and the model's runs of the same sample (--model-runs of them, each with its own
tie-break seed) set against the replays' spread and the replays against the model's, both cut at the last arrival
(`simulator.verify.verify_whole_run`).

Prints one JSON object at the end, and each seed's on one line of stderr as soon as it is done: per seed the cut,
each replay's figures (allocation, pending by GPUs per pod, unplaced pods, scheduling attempts, departures, clock
steps, wall seconds), the model's, the spread (min / median / max, within or not, and the model's own) and the wall
seconds of the whole verification, of the model's first run alone (the baseline, same machine) and of all its runs.

    python benchmarks/verify_whole_run.py [--sample 1000] [--replays 2] [--seeds 0] [--parallel] [--model-runs 10]
                                         [--k8s-bin DIR] [--model-only]

`--model-only` runs no control plane: per seed the model's figures under each tie-break seed and their min / median
/ max (`simulator.verify.model_whole_runs`), to set real runs measured before against.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.verify import model_whole_runs, verification_inputs, verify_whole_run  # noqa: E402


def one_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    spec, pods = verification_inputs(None, None, seed=seed)
    if args.model_only:
        started = time.perf_counter()
        found = model_whole_runs(spec, pods, sample=args.sample, model_runs=args.model_runs, seed=seed)
        return found | {"model_runs_seconds": round(time.perf_counter() - started, 1)}
    found = verify_whole_run(
        spec, pods, sample=args.sample, replays=args.replays, bin_dir=args.k8s_bin, seed=seed, parallel=args.parallel,
        model_runs=args.model_runs,
        progress=lambda done, total: print(f"seed {seed}: {done}/{total} arrivals", file=sys.stderr, flush=True)
        if done % 100 == 0 else None,
    )  # fmt: skip
    found["ratio_wall_to_model"] = round(found["wall_seconds"] / max(found["model_seconds"], 0.1), 1)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--replays", type=int, default=2)
    parser.add_argument("--seeds", default="0", help="comma-separated generator seeds")
    parser.add_argument("--parallel", action="store_true", help="the replays of a seed side by side")
    parser.add_argument("--model-runs", type=int, default=10, help="the model's runs, each with its own tie seed")
    parser.add_argument("--model-only", action="store_true", help="no control plane: the model's runs and spread")
    parser.add_argument("--k8s-bin", type=Path, default=None)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    started = time.perf_counter()
    out: dict[str, Any] = {}
    for seed in seeds:
        out[f"seed {seed}"] = found = one_seed(seed, args)
        # each seed's figures on one line as soon as they are known: a long run stopped later keeps them
        print(json.dumps({"seed": seed, **found}), file=sys.stderr, flush=True)
    print(json.dumps({"sample": args.sample, "replays": args.replays, "by_seed": out,
                      "wall_seconds": round(time.perf_counter() - started, 1)}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
