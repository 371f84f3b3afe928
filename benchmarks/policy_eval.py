"""Policy evaluation speed: per-pod decisions with the shipped policies, and compiled device-selector throughput.

    python benchmarks/policy_eval.py [--pods 10000] [--seed 7]

Prints one JSON object. Baselines measured in the same run: a one-policy set whose only expression is `true`
(the engine's fixed cost per pod), a trivial CEL expression, and cel-python's own runner on the same selectors.
`decision` is the engine as it serves (memo tables keyed by exactly the inputs each expression reads);
`decision_cold` the same policies with memoization off, every expression evaluated for every pod.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dra.cel import Environment, device_value  # noqa: E402
from policyengine import PolicySet, load_policies, load_policy_text  # noqa: E402
from policyengine.translate import translate  # noqa: E402

TRIVIAL_POLICY = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: trivial}
spec:
  matchConditions:
  - {name: always, expression: "true"}
"""

SELECTORS = [
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
    "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
    "device.allowMultipleAllocations",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('8Gi')) >= 0",
    "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('8.0', true)) >= 0",
]
TRIVIAL_EXPRESSION = "device.driver == 'gpu.nvidia.com'"

DEVICE = {
    "name": "gpu-0-mig-1g10gb-19-0",
    "attributes": {
        "type": {"string": "mig"},
        "profile": {"string": "1g.10gb"},
        "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        "architecture": {"string": "Ampere"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:15"},
    },
    "capacity": {"memory": {"value": "9856Mi"}, "multiprocessors": {"value": "14"}},
}


def _container(rng: random.Random, name: str, gpus: int, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    where = rng.choice(["limits", "limits", "both", "requests"])
    resources: dict[str, Any] = {"requests": {"cpu": "1"}, "limits": {}}
    if where in ("limits", "both"):
        resources["limits"][resource] = gpus
    if where in ("requests", "both"):
        resources["requests"][resource] = gpus
    return {"name": name, "image": "registry.example.com/app:1", "resources": resources}


def generate_pods(count: int, seed: int) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Varied pods with their namespaces: the shapes the examples show, in random proportions."""
    rng = random.Random(seed)
    namespaces = [
        None,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a", "labels": {"gpudra.io/max-gpus": "8"}},
        },
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-b", "labels": {"gpudra.io/mode": "audit"}},
        },
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-c", "labels": {"gpudra.io/topology": "pcie"}},
        },
    ]
    out: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for i in range(count):
        kind = rng.choice(["whole", "whole", "vram", "vram", "vllm", "ray", "mig", "dra", "cpu", "init"])
        metadata: dict[str, Any] = {"name": f"pod-{i}", "namespace": "team-a"}
        spec: dict[str, Any] = {"containers": []}
        if kind == "whole":
            spec["containers"] = [_container(rng, "main", rng.choice([1, 1, 2, 4]))]
        elif kind == "vram":
            metadata["annotations"] = {"gpudra.io/vram": rng.choice(["4Gi", "8Gi", "20Gi", "40Gi", "100Gi"])}
            if rng.random() < 0.5:
                metadata["annotations"]["gpudra.io/compute-capability"] = rng.choice(["8.0", "9.0"])
            if rng.random() < 0.3:
                metadata["annotations"]["gpudra.io/share"] = rng.choice(["false", "mps", "time-slicing"])
            spec["containers"] = [_container(rng, "main", 1)]
        elif kind == "vllm":
            tp = rng.choice([2, 4, 8])
            container = _container(rng, "vllm", tp)
            container["args"] = ["--model", "m", "--tensor-parallel-size", str(tp)]
            spec["containers"] = [container]
        elif kind == "ray":
            metadata = {"generateName": "ray-worker-", "namespace": "team-a", "labels": {"ray.io/node-type": "worker"}}
            spec["containers"] = [_container(rng, "ray-worker", rng.choice([2, 8]))]
        elif kind == "mig":
            profile = rng.choice(["1g.10gb", "2g.20gb", "3g.40gb"])
            spec["containers"] = [_container(rng, "infer", 1, f"nvidia.com/mig-{profile}")]
        elif kind == "dra":
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
            spec["containers"] = [{"name": "main", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]
        elif kind == "cpu":
            spec["containers"] = [{"name": "web", "image": "nginx", "resources": {"limits": {"cpu": "1"}}}]
        else:
            spec["initContainers"] = [_container(rng, "warmup", 1)]
            spec["containers"] = [_container(rng, "main", 1), {"name": "logs", "image": "fluent-bit"}]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        out.append((pod, rng.choice(namespaces)))
    return out


def _per_call(fn: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def _decisions(policies: PolicySet, pods: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> dict[str, float]:
    """Wall time per pod (p50/p99/mean), and CPU time per pod, which a busy shared machine distorts less."""
    times: list[float] = []
    cpu_start = time.process_time()
    for pod, namespace in pods:
        start = time.perf_counter()
        policies.evaluate(pod, namespace)
        times.append(time.perf_counter() - start)
    cpu = (time.process_time() - cpu_start) / len(pods)
    times.sort()
    return {
        "mean_us": statistics.fmean(times) * 1e6,
        "p50_us": times[len(times) // 2] * 1e6,
        "p99_us": times[int(len(times) * 0.99)] * 1e6,
        "cpu_mean_us": cpu * 1e6,
    }


def _celpy_rate(expressions: list[str], device: dict[str, Any]) -> dict[str, Any]:
    try:
        import celpy
    except ImportError:
        return {"available": False}
    from celpy.adapter import json_to_cel

    activation = {"device": json_to_cel(_plain_device(device))}
    rates: dict[str, Any] = {}
    env = celpy.Environment()
    for text in expressions:
        try:
            program = env.program(env.compile(text))
            program.evaluate(activation)
        except Exception as exc:  # celpy lacks quantity() and semver(): report, do not fake
            rates[text] = {"error": f"{type(exc).__name__}: {exc}"[:120]}
            continue
        per = _per_call(functools.partial(program.evaluate, activation), 300)
        rates[text] = {"evals_per_s": 1 / per}
    return {"available": True, "runner": "InterpretedRunner", "expressions": rates}


def _plain_device(device: dict[str, Any]) -> dict[str, Any]:
    return {
        "driver": device["driver"],
        "allowMultipleAllocations": device["allowMultipleAllocations"],
        "attributes": {d: {k: str(v) for k, v in m.items()} for d, m in device["attributes"].items()},
        "capacity": {d: {k: str(v) for k, v in m.items()} for d, m in device["capacity"].items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    shipped = load_policies()
    trivial_list, errors = load_policy_text(TRIVIAL_POLICY, "<trivial>")
    assert not errors and not shipped.errors
    trivial = PolicySet.of(trivial_list)
    pods = generate_pods(args.pods, args.seed)
    for pod, namespace in pods[:200]:  # warm caches (compiled programs, claim validation)
        shipped.evaluate(pod, namespace)

    cold_set = PolicySet.of(shipped.policies, memoize=False)
    for (pod, namespace), _ in zip(pods[:200], range(200), strict=False):
        assert cold_set.evaluate(pod, namespace).to_json() == shipped.evaluate(pod, namespace).to_json()
    baseline = _decisions(trivial, pods)
    decision = _decisions(shipped, pods)
    cold = _decisions(cold_set, pods)
    start = time.perf_counter()
    for pod, namespace in pods:
        translate(pod, shipped.evaluate(pod, namespace))
    with_translation_us = (time.perf_counter() - start) / len(pods) * 1e6

    device = device_value("gpu.nvidia.com", DEVICE)
    env = Environment.dra_selector()
    activation = {"device": device}
    trivial_rate = 1 / _per_call(lambda: env.compile(TRIVIAL_EXPRESSION).evaluate(activation), 20_000)
    selectors: dict[str, Any] = {}
    for text in SELECTORS:
        program = env.compile(text)
        assert type(program.evaluate(activation)) is bool, text
        per = _per_call(functools.partial(program.evaluate, activation), 20_000)
        selectors[text] = {"evals_per_s": 1 / per, "us": per * 1e6}
    mean_rate = statistics.fmean(s["evals_per_s"] for s in selectors.values())
    celpy = _celpy_rate(SELECTORS, device)
    celpy_rates = [v["evals_per_s"] for v in celpy.get("expressions", {}).values() if "evals_per_s" in v]
    ours_same = [selectors[k]["evals_per_s"] for k, v in celpy.get("expressions", {}).items() if "evals_per_s" in v]

    sample = {"a": 1}
    calibration = _per_call(lambda: [sample.get("a") for _ in range(100)], 20_000)
    result = {
        "benchmark": "policy_eval",
        # A fixed pure-Python loop timed in the same run: how fast (or how shared) this machine is right now.
        "calibration_100_dict_gets_us": calibration * 1e6,
        "pods": len(pods),
        "policies": shipped.names(),
        "decision": decision,
        "decision_target_us": 200,
        "decision_meets_target": decision["cpu_mean_us"] < 200,
        "decision_cold": cold,
        "decision_cold_over_decision": cold["cpu_mean_us"] / decision["cpu_mean_us"],
        "memo_sizes": shipped.memo_sizes(),
        "baseline_trivial_policy": baseline,
        "decision_vs_trivial_policy": decision["cpu_mean_us"] / baseline["cpu_mean_us"],
        "decision_plus_translation_mean_us": with_translation_us,
        "selectors": selectors,
        "selector_mean_evals_per_s": mean_rate,
        "baseline_trivial_expression_evals_per_s": trivial_rate,
        "selector_vs_trivial_expression": mean_rate / trivial_rate,
        "celpy": celpy,
        "speedup_vs_celpy_same_expressions": (
            statistics.fmean(ours_same) / statistics.fmean(celpy_rates) if celpy_rates else None
        ),
    }
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
