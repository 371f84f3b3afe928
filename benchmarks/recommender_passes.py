"""The recommender's compute step over 10,000 pods x 7 days of 30 s framebuffer samples (20,161 per pod, 201.6M
in all), generated in memory one owner at a time (5 replicas per Deployment, 2,000 owners), so memory stays at one
owner's samples. Reports the time of `recommender.recommend` (pooling, p99 by partition, headroom, the device
from the catalog) and, in the same run over the same arrays, a plain numpy max as the baseline; JSON on stdout.

    python3 benchmarks/recommender_passes.py [--pods 10000] [--replicas 5] [--days 7]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from recommender import ContainerUsage, Settings, recommend


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--replicas", type=int, default=5)
    parser.add_argument("--days", type=float, default=7)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    points = int(args.days * 86400 / 30) + 1
    owners = args.pods // args.replicas
    rng = np.random.default_rng(args.seed)
    settings = Settings(window_seconds=args.days * 86400)
    compute = baseline = generate = 0.0
    recommended = 0
    for _ in range(owners):
        t0 = time.perf_counter()
        base = rng.uniform(1000, 70000)
        arrays = [(base + rng.normal(0, 200, points)).clip(0).astype(np.float32) for _ in range(args.replicas)]
        t1 = time.perf_counter()
        usage = ContainerUsage()
        for a in arrays:
            usage.add(a, pod="p", granted_mib=81559, model_name="NVIDIA H100 80GB HBM3")
        result = recommend("server", usage, settings)
        recommended += not isinstance(result, str)
        t2 = time.perf_counter()
        peak = max(float(a.max()) for a in arrays)
        t3 = time.perf_counter()
        assert peak > 0
        generate, compute, baseline = generate + t1 - t0, compute + t2 - t1, baseline + t3 - t2
    print(json.dumps({
        "pods": args.pods, "owners": owners, "samples": args.pods * points,
        "recommendations": recommended,
        "compute_seconds": round(compute, 3),
        "baseline_numpy_max_seconds": round(baseline, 3),
        "ratio_vs_baseline": round(compute / baseline, 2),
        "samples_per_second": round(args.pods * points / compute),
        "generate_seconds": round(generate, 3),
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
