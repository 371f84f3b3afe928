"""CEL speed: dra.cel's compiled closures vs celpy's InterpretedRunner vs cel-go (the Go oracle); parse speed.

    python benchmarks/cel.py [--seconds 0.3] [--oracle PATH]

Prints JSON: per selector, our µs/eval and evals/s, celpy's on the same expression (where celpy 0.5 can run
it: no Kubernetes library types), cel-go's through `tests/oracle` k8s-cel when its binary exists (`--oracle`,
`$GPUDRA_K8S_CEL`, or the build.sh cache), a trivial-expression baseline and a memoised (SelectorCache) hit,
all measured in this run, with ratios. "parse": our grammar (dra/cel/cel.lark) per expression and to build the
parser, against celpy's Lark grammar when cel-python is installed (it is no longer a dependency; without it
the celpy figures are absent).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dra.cel import Environment, SelectorCache, device_key, device_value  # noqa: E402

DRIVER = "gpu.nvidia.com"
DEVICE: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "type": {"string": "gpu"},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "architecture": {"string": "Hopper"},
        "memory": {"int": 80},
        "index": {"int": 0},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "550.54.15"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}
# The same device as plain JSON, for celpy (which has no Quantity/Semver types).
PLAIN_DEVICE = {
    "driver": DRIVER,
    "attributes": {
        DRIVER: {
            "type": "gpu",
            "productName": "NVIDIA H100 80GB HBM3",
            "architecture": "Hopper",
            "memory": 80,
            "index": 0,
        },
        "resource.kubernetes.io": {"pcieRoot": "pci0000:00"},
    },
    "capacity": {DRIVER: {"memory": 85899345920}},
    "allowMultipleAllocations": False,
}

# (name, expression, celpy can run it)
SELECTORS: list[tuple[str, str, bool]] = [
    (
        "issue-benchmark",
        'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"]["memory"] >= 40',
        True,
    ),
    ("string-equality", 'device.attributes["gpu.nvidia.com"].type == "gpu"', True),
    ("product-prefix", 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")', True),
    ("in-list", 'device.attributes["gpu.nvidia.com"].architecture in ["Ampere", "Hopper", "Blackwell"]', True),
    (
        "has-guard",
        'has(device.attributes["gpu.nvidia.com"].profile) && device.attributes["gpu.nvidia.com"].profile == "1g.10gb"',
        True,
    ),
    ("regex", 'device.attributes["gpu.nvidia.com"].productName.matches("H(100|200)")', True),
    ("quantity-compare", 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', False),
    (
        "semver-compare",
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
        False,
    ),
    (
        "typical-policy",
        'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" && '
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
        False,
    ),
    ("comprehension", 'device.attributes["gpu.nvidia.com"].exists(k, k == "profile")', True),
]
TRIVIAL = "true"


def per_call(fn: Callable[[], Any], seconds: float) -> float:
    """Best-of-3 seconds per call, each run long enough to last about `seconds`/3."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed > seconds / 30 or n > 10_000_000:
            break
        n *= 4
    target = max(1, int(n * (seconds / 3) / max(elapsed, 1e-9)))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(target):
            fn()
        best = min(best, (time.perf_counter() - t0) / target)
    return best


def find_oracle(explicit: str | None) -> Path | None:
    for candidate in (explicit, os.environ.get("GPUDRA_K8S_CEL")):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    try:
        from tests.controlplane.binaries import require

        return require("oracles")["k8s-cel"]
    except (Exception, SystemExit):
        return None


def cel_go_ns(oracle: Path, expression: str, repeat: int = 20000) -> dict[str, Any]:
    device = {k: v for k, v in DEVICE.items() if k != "name"} | {"driver": DRIVER}
    case = {"expression": expression, "env": "dra-selector", "device": device, "repeat": repeat}
    out = subprocess.run([str(oracle)], input=json.dumps([case]), capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return {"error": out.stderr.strip()}
    result: dict[str, Any] = json.loads(out.stdout)[0]
    return result


def best_of(fn: Callable[[], Any], seconds: float, rounds: int = 7) -> float:
    """Seconds per call, the best of `rounds` short runs: a shared, loaded machine only ever adds time."""
    return min(per_call(fn, seconds / rounds) for _ in range(rounds))


# Parsed only (celpy's grammar cannot read the optional syntax, so it gets the selectors alone).
OPTIONAL_SYNTAX = "[?a.?b, 1,].size() + {?'k': m[?'k']}.size() + (x.?`a-b`.orValue(0) > 0 ? 1 : 2)"


def parse_figures(seconds: float) -> dict[str, Any]:
    """µs per parse of each selector (ours, celpy's), and the time to build each Lark parser."""
    import dra.cel.parse as ours

    texts = [expr for _, expr, _ in SELECTORS]
    ours_us = [best_of(lambda t=t: ours.parse(t), seconds) * 1e6 for t in texts]
    out: dict[str, Any] = {
        "ours_us_per_parse": [round(u, 1) for u in ours_us],
        "ours_mean_us": round(sum(ours_us) / len(ours_us), 1),
        "ours_optional_syntax_us": round(best_of(lambda: ours.parse(OPTIONAL_SYNTAX), seconds) * 1e6, 1),
    }
    start = time.perf_counter()
    ours._parser.cache_clear()
    ours._parser()
    out["ours_build_ms"] = round((time.perf_counter() - start) * 1e3, 1)
    try:
        from celpy.celparser import CELParser
    except ImportError:
        return out
    start = time.perf_counter()
    CELParser.CEL_PARSER = None
    theirs_parser = CELParser()
    out["celpy_build_ms"] = round((time.perf_counter() - start) * 1e3, 1)
    theirs_us = [best_of(lambda t=t: theirs_parser.parse(t), seconds) * 1e6 for t in texts]
    out["celpy_us_per_parse"] = [round(u, 1) for u in theirs_us]
    out["celpy_mean_us"] = round(sum(theirs_us) / len(theirs_us), 1)
    out["speedup_vs_celpy"] = round(sum(theirs_us) / sum(ours_us), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="measuring time per figure")
    parser.add_argument("--oracle", default=None, help="path of the k8s-cel oracle binary")
    args = parser.parse_args()

    try:
        import celpy
    except ImportError:
        celpy = None

    env = Environment.dra_selector()
    value = device_value(DRIVER, DEVICE)
    activation = {"device": value}
    celpy_env = celpy.Environment() if celpy is not None else None
    celpy_activation = {"device": celpy.json_to_cel(PLAIN_DEVICE)} if celpy is not None else {}
    oracle = find_oracle(args.oracle)

    trivial = env.compile(TRIVIAL)
    trivial_s = per_call(lambda: trivial.evaluate(activation), args.seconds)
    rows = []
    for name, expr, celpy_ok in SELECTORS:
        program = env.compile(expr)
        result = program.evaluate(activation)
        ours = per_call(lambda program=program: program.evaluate(activation), args.seconds)
        row: dict[str, Any] = {
            "name": name,
            "expression": expr,
            "result": result,
            "us_per_eval": round(ours * 1e6, 3),
            "evals_per_s": round(1 / ours),
            "vs_trivial": round(ours / trivial_s, 2),
        }
        if celpy_ok and celpy_env is not None:
            prog = celpy_env.program(celpy_env.compile(expr))
            assert bool(prog.evaluate(celpy_activation)) == result, f"celpy disagrees on {name}"
            theirs = per_call(lambda prog=prog: prog.evaluate(celpy_activation), args.seconds)
            row["celpy_us_per_eval"] = round(theirs * 1e6, 1)
            row["speedup_vs_celpy"] = round(theirs / ours, 1)
        if oracle is not None:
            go = cel_go_ns(oracle, expr)
            if "ns" in go and go.get("error") is None:
                row["cel_go_us_per_eval"] = round(go["ns"] / 1000, 3)
                row["ratio_vs_cel_go"] = round(ours / (go["ns"] / 1e9), 2)
            else:
                row["cel_go_error"] = go.get("error")
        rows.append(row)

    cache = SelectorCache()
    key = cache.key(value)
    typical = env.compile(SELECTORS[0][1])
    cache.evaluate(typical, key, value)
    hit = per_call(lambda: cache.evaluate(typical, key, value), args.seconds)
    key_s = per_call(lambda: device_key(value), args.seconds)
    compile_s = per_call(lambda: env.compile(SELECTORS[-2][1] + " ")._fn, args.seconds / 3)  # cached after first

    print(
        json.dumps(
            {
                "benchmark": "cel",
                "python": platform.python_version(),
                "machine": platform.machine(),
                "baseline_trivial": {"expression": TRIVIAL, "us_per_eval": round(trivial_s * 1e6, 3)},
                "selectors": rows,
                "selector_cache": {
                    "hit_us": round(hit * 1e6, 3),
                    "device_key_us": round(key_s * 1e6, 2),
                    "speedup_vs_eval": round(
                        next(r["us_per_eval"] for r in rows if r["name"] == "issue-benchmark") / (hit * 1e6), 2
                    ),
                },
                "compile_cached_us": round(compile_s * 1e6, 3),
                "parse": parse_figures(args.seconds),
                "cel_go": str(oracle) if oracle else None,
                "cel_go_note": "k8s-cel times DeviceMatches per call, which also converts the Device into CEL values",
                "target_us_per_eval": 10.0,
                "max_us_per_eval": max(r["us_per_eval"] for r in rows),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
