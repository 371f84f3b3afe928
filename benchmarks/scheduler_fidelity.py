"""Benchmark of the simulator's fidelity to kube-scheduler: >= 1,000 real decisions over three workloads.

Each workload is replayed through a real control plane (etcd, kube-apiserver, kube-controller-manager and
kube-scheduler from tests/controlplane/build.sh, or --k8s-bin DIR) one settled event at a time, the model asked
before each decision in the same state (`simulator.verify.verify_scheduler`, as `gpudra simulate --verify-scheduler`
runs it):

- `default`: 8 nodes / 48 GPUs (HGX H100 with dynamic MIG, A100 with static MIG, L40S), generated seed 0, load 0.6;
- `most-allocated`: the same cluster and seed 1 under a KubeSchedulerConfiguration with NodeResourcesFit MostAllocated;
- `built-in`: `gpudra simulate`'s built-in cluster (14 nodes, 80 GPUs), generated seed 2, load 0.7.

Prints one JSON object: per workload the `verification` figures (decisions, feasibility agreement, real node in the
tie set, same devices, causes of disagreement), the model's and the whole replay's seconds, and the pooled figures.

    python benchmarks/scheduler_fidelity.py [--arrivals 200] [--k8s-bin DIR] [--only default,most-allocated,built-in]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.cluster import ClusterSpec, cluster_from_spec, default_cluster  # noqa: E402
from simulator.traces import GeneratorConfig, generate  # noqa: E402
from simulator.verify import verify_scheduler  # noqa: E402

POOLS = [
    {"name": "hgx", "count": 4, "gpu": "H100-SXM5-80GB", "gpus": 8, "cpu": 192, "memory": "2Ti", "mig": "dynamic"},
    {"name": "a100", "count": 2, "gpu": "A100-PCIE-80GB", "gpus": 4, "cpu": 64, "memory": "512Gi",
     "mig": ["3g.40gb", "2g.20gb", "1g.10gb"]},
    {"name": "l40s", "count": 2, "gpu": "L40S", "gpus": 4, "cpu": 64, "memory": "512Gi"},
]  # fmt: skip
MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - {name: cpu, weight: 1}
              - {name: memory, weight: 1}
"""
POOLED = ("feasibility_agreement", "node_in_top_set", "same_devices")


def workloads(config_dir: Path) -> dict[str, tuple[ClusterSpec, int, float, Path | None]]:
    """name -> (cluster, generator seed, load, scheduler configuration)."""
    small = cluster_from_spec({"name": "fidelity", "pools": POOLS}, None, Path("fidelity.yaml"))
    most = config_dir / "most-allocated.yaml"
    most.write_text(MOST_ALLOCATED)
    return {
        "default": (small, 0, 0.6, None),
        "most-allocated": (small, 1, 0.6, most),
        "built-in": (default_cluster(), 2, 0.7, None),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrivals", type=int, default=200, help="pods per workload (first by arrival)")
    parser.add_argument("--k8s-bin", type=Path, default=None)
    parser.add_argument("--only", default="default,most-allocated,built-in")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gpudra-fidelity-") as scratch:
        for name, (spec, seed, load, config) in workloads(Path(scratch)).items():
            if name not in args.only.split(","):
                continue
            pods = generate(GeneratorConfig(pods=args.arrivals, seed=seed, load=load), spec.total_gpus).pods
            found = verify_scheduler(
                spec, pods, sample=args.arrivals, bin_dir=args.k8s_bin, scheduler_config=config, seed=seed
            )
            found["disagreements"] = found["disagreements"][:20]
            results[name] = {"cluster": spec.summary()["gpu_models"], "seed": seed, "load": load, **found}
    decisions = sum(r["decisions"] for r in results.values())
    bound = sum(r["bound"] for r in results.values())
    pooled: dict[str, Any] = {"decisions": decisions, "bound": bound, "workloads": len(results)}
    for key in POOLED:
        weight = "decisions" if key == "feasibility_agreement" else "bound"
        total = sum(r[weight] for r in results.values())
        agreed = sum(round((r[key] or 0.0) * r[weight]) for r in results.values())
        pooled[key] = round(agreed / total, 4) if total else None
    pooled["kube_scheduler_version"] = next(iter(results.values()))["kube_scheduler_version"] if results else None
    print(json.dumps({"pooled": pooled, "workloads": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
