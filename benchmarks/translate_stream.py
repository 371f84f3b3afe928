"""`gpudra translate FILE` on a long multi-document stream: wall time and peak memory, against reading the same
stream with plain `yaml.safe_load_all`, measured in the same run.

    python benchmarks/translate_stream.py [--mb 50] [--keep FILE]

The stream is generated: Deployments in the shape of a vLLM server (production-stack's engine Deployment, as in
tests/gpudra/fixtures/workloads/deployment-vllm.yaml), each with its own name and model, four in five asking for
GPUs, about 1 KB each. Each measurement runs in a child process of its own (its peak RSS is its own): `translate`
calls `gpudra.commands.translate.translate_file` (the CLI's code, output kept in memory as the CLI keeps it before
printing), `baseline` reads every document with `yaml.safe_load_all(text)` (PyYAML's pure-Python loader, the
plain way to read a stream; one document at a time) and `baseline_libyaml` the same with libyaml's `CSafeLoader`.
`translate` runs as the CLI does (worker processes for a long stream), `translate_one_process` with `--jobs 1`.
Prints one JSON object: seconds, CPU seconds and peak RSS of each (the workers' too), translate's ratios against
one process and both baselines, and issue 25's targets (<= 30 s, <= 500 MB for 50 MB). On a machine busy with
other work, wall time cannot show what the workers save; the CPU seconds can: with the parent's share small, N
free CPUs give about the one-process time divided by N.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_SECONDS = 30.0
TARGET_RSS_MB = 500.0
_MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3")


def deployment(n: int) -> str:
    """One Deployment's YAML (about 1 KB); every fifth asks for no GPU."""
    gpus = "" if n % 5 == 4 else f"\n            nvidia.com/gpu: {1 + n % 2}"
    return f"""---
# engine {n}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-engine-{n}
  namespace: llm
  labels:
    app.kubernetes.io/name: vllm-engine-{n}
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: vllm-engine-{n}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: vllm-engine-{n}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.5
        args: ["--model", "{_MODELS[n % 3]}", "--tensor-parallel-size", "{1 + n % 2}", "--port", "8000"]
        ports:
        - containerPort: 8000
        resources:
          requests:
            cpu: "8"
            memory: 32Gi
          limits:
            memory: 32Gi{gpus}
        volumeMounts:
        - name: shm
          mountPath: /dev/shm
      volumes:
      - name: shm
        emptyDir:
          medium: Memory
          sizeLimit: 8Gi
"""


def write_stream(path: Path, megabytes: float) -> int:
    target, size, n = int(megabytes * 1_000_000), 0, 0
    with path.open("w", encoding="utf-8") as handle:
        while size < target:
            text = deployment(n)
            handle.write(text)
            size += len(text)
            n += 1
    return n


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def child(kind: str, path: Path) -> dict[str, Any]:
    """One measurement, in this process (run as a child by `main`)."""
    start = time.perf_counter()
    if kind.startswith("translate"):
        from gpudra.commands import _translate_stream
        from gpudra.commands.translate import translate_file

        jobs = 1 if kind == "translate_one_process" else None
        seen: list[int] = []
        original = _translate_stream._jobs_for

        def counted(text: str, jobs: int | None) -> int:  # the processes translate_file chose
            seen.append(original(text, jobs))
            return seen[-1]

        _translate_stream._jobs_for = counted
        outcome = translate_file(path, jobs=jobs)
        result: dict[str, Any] = {"code": outcome.code, "output_mb": round(len(outcome.stdout) / 1e6, 1)}
        result["stderr_lines"] = outcome.stderr.count("\n")
        result["processes"] = seen[-1]
        if seen[-1] > 1:  # the workers' peak (each forked from this process, so sharing its pages until written)
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            result["worker_max_rss_mb"] = round(children.ru_maxrss / 1024, 1)
            result["worker_cpu_seconds"] = round(children.ru_utime + children.ru_stime, 2)
    else:
        import yaml

        loader = yaml.CSafeLoader if kind == "baseline_libyaml" else yaml.SafeLoader
        result = {"documents": sum(1 for _ in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader))}
    result["seconds"] = round(time.perf_counter() - start, 2)
    own = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_seconds"] = round(own.ru_utime + own.ru_stime, 2)
    result["max_rss_mb"] = round(_peak_rss_mb(), 1)
    return result


def _run_child(kind: str, path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the generated stream (MB)")
    parser.add_argument("--keep", type=Path, help="write the stream here (and keep it) instead of a temporary file")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or Path(folder) / "stream.yaml"
        documents = write_stream(path, args.mb)
        kinds = ("translate", "translate_one_process", "baseline", "baseline_libyaml")
        runs = {kind: _run_child(kind, path) for kind in kinds}
    report: dict[str, Any] = {"input_mb": round(path.stat().st_size / 1e6, 1) if args.keep else args.mb}
    report.update(documents=documents, **runs)
    translate, ok = runs["translate"], all("error" not in r for r in runs.values())
    report["cpus"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if ok:
        one = runs["translate_one_process"]
        report["seconds_ratio_workers_vs_one_process"] = round(translate["seconds"] / max(one["seconds"], 1e-9), 2)
        if "worker_cpu_seconds" in translate:  # on a loaded machine wall time hides it: the work as CPU time
            spread = translate["cpu_seconds"] + translate["worker_cpu_seconds"]
            report["cpu_ratio_workers_vs_one_process"] = round(spread / max(one["cpu_seconds"], 1e-9), 2)
            report["parent_cpu_share_with_workers"] = round(translate["cpu_seconds"] / max(spread, 1e-9), 2)
        for base in ("baseline", "baseline_libyaml"):
            report[f"seconds_ratio_vs_{base}"] = round(translate["seconds"] / max(runs[base]["seconds"], 1e-9), 2)
            report[f"rss_ratio_vs_{base}"] = round(translate["max_rss_mb"] / max(runs[base]["max_rss_mb"], 1e-9), 2)
        report["targets_for_50mb"] = {"seconds": TARGET_SECONDS, "max_rss_mb": TARGET_RSS_MB}
        report["meets_targets"] = {
            "seconds": translate["seconds"] <= TARGET_SECONDS if args.mb >= 50 else None,
            "max_rss_mb": translate["max_rss_mb"] <= TARGET_RSS_MB,
        }
    print(json.dumps(report, indent=2))
    return 0 if ok and translate["code"] == 0 and runs["translate_one_process"]["code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
