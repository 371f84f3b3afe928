"""Benchmark of dra.allocator: gpudra's upstream and scored modes against the Go allocator, in one run.

Scenarios: one 8-GPU node, 1,000 nodes, dynamic MIG on 8 GPUs with every placement published, a TP=8
request, and a pathological backtracking case (kubernetes/kubernetes#131730 style). Prints one JSON object
with per-scenario times (ms) and the ratios upstream/go and scored/upstream. The Go side is the
`dra-allocate` oracle (tests/controlplane/build.sh); without it the Go numbers are null.

    python benchmarks/allocator.py [--repeat N] [--oracle PATH]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dra.allocator import Allocator, Mode, Unsatisfiable  # noqa: E402
from dra.gpus.catalog import get  # noqa: E402
from dra.gpus.devices import synthetic_node  # noqa: E402
from dra.gpus.slices import device_classes, node_resource_slices  # noqa: E402

DRIVER = "gpu.nvidia.com"


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }


def request(name: str, cls: str, count: int, *selectors: str) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": body}


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def h100_slices(name: str, mig_mode: str = "none", *, gpudra_attributes: bool = False) -> list[dict[str, Any]]:
    """An HGX H100 node's slices as the driver publishes them; `gpudra_attributes` adds gpudra's own
    `gpu.gpudra.io/nvlinkGroup` (`gpudra inventory --gpudra-attributes`), which the driver does not publish."""
    node = synthetic_node(get("H100-SXM5-80GB"), name, 8)
    return node_resource_slices(node, mig_mode=mig_mode, gpudra_attributes=gpudra_attributes)  # type: ignore[arg-type]


def pathological() -> dict[str, Any]:
    """Request a (4 devices) and b (1 device of model b) must share `numa`; the 20 numa-0 devices come first
    and have no model-b device, so first-fit tries every 4-subset of them before reaching numa 1."""
    devices = []
    for i in range(26):
        numa = 0 if i < 20 else 1
        model = "b" if i == 25 else "a"
        devices.append(
            {
                "name": f"dev-{i:02d}",
                "attributes": {"type": {"string": "gpu"}, "numa": {"int": numa}, "model": {"string": model}},
                "capacity": {"memory": {"value": "80Gi"}},
            }
        )
    slices = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-0-devices"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "node-0",
                "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
    ]
    c = claim(
        "patho",
        request("a", "gpu.nvidia.com", 4),
        request("b", "gpu.nvidia.com", 1, f"device.attributes['{DRIVER}'].model == 'b'"),
        constraints=[{"matchAttribute": f"{DRIVER}/numa"}],
    )
    return {"slices": slices, "claims": [c], "node": node("node-0"), "allocated": []}


def scenarios() -> dict[str, dict[str, Any]]:
    one = h100_slices("node-0")
    many = [s for i in range(1000) for s in h100_slices(f"node-{i:04d}")]
    dyn = h100_slices("node-0", "dynamic")
    mig_claim = claim(
        "mig",
        request("big", "mig.nvidia.com", 1, f"device.attributes['{DRIVER}'].profile == '3g.40gb'"),
        request("small", "mig.nvidia.com", 2, f"device.attributes['{DRIVER}'].profile == '1g.10gb'"),
    )
    tp8 = claim(
        "tp8", request("gpus", "gpu.nvidia.com", 8), constraints=[{"matchAttribute": "gpu.gpudra.io/nvlinkGroup"}]
    )
    return {
        "one_node_8gpu": {
            "slices": one,
            "claims": [claim("one", request("gpu", "gpu.nvidia.com", 1))],
            "node": node("node-0"),
        },
        "nodes_1000": {
            "slices": many,
            "claims": [claim("one", request("gpu", "gpu.nvidia.com", 2))],
            "node": node("node-0500"),
        },
        "dynamic_mig_8gpu": {"slices": dyn, "claims": [mig_claim], "node": node("node-0")},
        # the NVLink constraint needs gpudra's attribute: opted in here, as a cluster running gpudra's inventory has it
        "tp8": {"slices": h100_slices("node-0", gpudra_attributes=True), "claims": [tp8], "node": node("node-0")},
        "pathological": pathological(),
    }


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time in ms of `fn` over `repeat` runs, and its last result."""
    times = []
    result: Any = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            result = fn()
        except Unsatisfiable as err:
            result = f"unsatisfiable: {err}"
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), result


def find_oracle(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    if os.environ.get("GPUDRA_DRA_ALLOCATE"):
        return os.environ["GPUDRA_DRA_ALLOCATE"]
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    found = sorted(glob.glob(os.path.join(cache, "gpudra/k8s/*/bin/dra-allocate")))
    return found[-1] if found else shutil.which("dra-allocate")


def go_times(oracle: str, sc: dict[str, Any], classes: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    payload = {
        "deviceClasses": classes,
        "resourceSlices": sc["slices"],
        "allocatedClaims": sc.get("allocated", []),
        "claims": sc["claims"],
        "node": sc["node"],
        "features": {"DRAListTypeAttributes": True, "DRAFractionalCapacityRange": True},
        "repeat": repeat,
    }
    proc = subprocess.run([oracle], input=json.dumps(payload), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[:300]}
    out = json.loads(proc.stdout)
    devices = [[r["device"] for r in a["devices"].get("results", [])] for a in out.get("allocations") or []]
    return {
        "ms": out["ns"] / 1e6,
        "allocate_ms": out["allocateNs"] / 1e6,
        "devices": devices or out.get("unsatisfiable"),
    }


def devices_of(result: Any) -> Any:
    if isinstance(result, list):
        return [[r["device"] for r in a["devices"].get("results", [])] for a in result]
    return result


def measure(sc: dict[str, Any], classes: list[dict[str, Any]], mode: Mode, reps: int) -> dict[str, Any]:
    """Cold (new Allocator + allocate) and warm (reused Allocator) median times of one mode."""

    def cold() -> Any:
        a = Allocator(slices=sc["slices"], classes=classes, allocated=sc.get("allocated", []))
        return a.allocate(sc["claims"], node=sc["node"], mode=mode)

    warm_alloc = Allocator(slices=sc["slices"], classes=classes, allocated=sc.get("allocated", []))
    warm_alloc.allocate(sc["claims"], node=sc["node"], mode=mode)
    cold_ms, _ = timed(cold, max(1, min(reps, 5)))
    warm_ms, result = timed(lambda: warm_alloc.allocate(sc["claims"], node=sc["node"], mode=mode), reps)
    return {"cold_ms": round(cold_ms, 3), "warm_ms": round(warm_ms, 3), "devices": devices_of(result)}


def run(repeat: int, oracle: str | None) -> dict[str, Any]:
    classes = device_classes()
    report: dict[str, Any] = {"oracle": oracle, "repeat": repeat, "scenarios": {}}
    for name, sc in scenarios().items():
        entry: dict[str, Any] = {"devices_in_slices": sum(len(s["spec"].get("devices") or []) for s in sc["slices"])}
        slow = name == "pathological"
        modes: tuple[Mode, Mode] = ("upstream", "scored")
        for mode in modes:
            reps = 1 if slow and mode == "upstream" else repeat
            entry[mode] = measure(sc, classes, mode, reps)
        if oracle:
            entry["go"] = go_times(oracle, sc, classes, repeat)
        up, sc_ = entry["upstream"], entry["scored"]
        ratios: dict[str, Any] = {"scored_over_upstream_warm": round(sc_["warm_ms"] / up["warm_ms"], 3)}
        go = entry.get("go") or {}
        if "ms" in go:
            ratios["upstream_warm_over_go_allocate"] = round(up["warm_ms"] / max(go["allocate_ms"], 1e-6), 3)
            ratios["upstream_cold_over_go"] = round(up["cold_ms"] / max(go["ms"], 1e-6), 3)
            ratios["scored_warm_over_go_allocate"] = round(sc_["warm_ms"] / max(go["allocate_ms"], 1e-6), 3)
            ratios["upstream_equals_go"] = up["devices"] == go["devices"]
        entry["ratios"] = ratios
        report["scenarios"][name] = entry
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--oracle", default=None, help="path of dra-allocate (default: the build cache)")
    args = parser.parse_args()
    print(json.dumps(run(args.repeat, find_oracle(args.oracle)), indent=2))


if __name__ == "__main__":
    main()
