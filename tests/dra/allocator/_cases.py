"""Small builders of resource.k8s.io/v1 dicts for allocator tests (driver `gpu.example.com`)."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.example.com"
NVLINK = "gpu.gpudra.io/nvlinkGroup"


def attrs(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        key = NVLINK if name == "nvlink" else name
        if isinstance(value, bool):
            out[key] = {"bool": value}
        elif isinstance(value, int):
            out[key] = {"int": value}
        else:
            out[key] = {"string": value}
    return out


def device(name: str, *, memory: str = "80Gi", taints: list[dict[str, Any]] | None = None, **a: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "attributes": attrs(type="gpu", **a), "capacity": {"memory": {"value": memory}}}
    if taints:
        d["taints"] = taints
    return d


def rslice(
    name: str,
    devices: list[dict[str, Any]],
    *,
    pool: str = "node-a",
    node: str | None = "node-a",
    generation: int = 1,
    count: int = 1,
    counters: list[dict[str, Any]] | None = None,
    driver: str = DRIVER,
    **spec: Any,
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        **spec,
    }
    if node is not None and not any(k in spec for k in ("allNodes", "nodeSelector", "perDeviceNodeSelection")):
        s["nodeName"] = node
    if devices:
        s["devices"] = devices
    if counters:
        s["sharedCounters"] = counters
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": s}


def dclass(name: str, *exprs: str, config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if exprs:
        spec["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    if config:
        spec["config"] = config
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def exact(name: str, cls: str = "gpu", count: int = 1, mode: str = "ExactCount", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode, **extra}
    if mode == "ExactCount":
        body["count"] = count
    if "selectors" in body:
        body["selectors"] = [{"cel": {"expression": e}} for e in body["selectors"]]
    return {"name": name, "exactly": body}


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    out = []
    for sub in subs:
        s = dict(sub)
        s.setdefault("allocationMode", "ExactCount")
        if s["allocationMode"] == "ExactCount":
            s.setdefault("count", 1)
        if "selectors" in s:
            s["selectors"] = [{"cel": {"expression": e}} for e in s["selectors"]]
        out.append(s)
    return {"name": name, "firstAvailable": out}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    allocation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    c: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }
    if allocation is not None:
        c["status"] = {"allocation": allocation}
    return c


def allocated(name: str, *devices: tuple[str, str], driver: str = DRIVER, **extra: Any) -> dict[str, Any]:
    """A claim already allocated to (pool, device) pairs."""
    results = [{"request": "r", "driver": driver, "pool": p, "device": d, **extra} for p, d in devices]
    return claim(name, exact("r"), allocation={"devices": {"results": results}})


def node(name: str = "node-a", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


GPU_CLASS = dclass("gpu", f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'")
MIG_CLASS = dclass("mig", f"device.attributes['{DRIVER}'].type == 'mig'")
ANY_CLASS = dclass("any")


def picked(allocations: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    """(request, device) per claim, in result order."""
    return [[(r["request"], r["device"]) for r in a["devices"].get("results", [])] for a in allocations]


def dynamic_mig_gpu(i: int, slices: int = 8) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A counter set and its devices: the full GPU, 1-slice partitions at 0..6, 2-slice at 0,2,4,6, 4-slice at 0,4."""
    cs = f"gpu-{i}-counter-set"
    counters = {f"memory-slice-{s}": {"value": "1"} for s in range(slices)}
    counters["memory"] = {"value": "80Gi"}
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": attrs(type="gpu", index=i),
            "capacity": {"memory": {"value": "80Gi"}},
            "consumesCounters": [{"counterSet": cs, "counters": dict(counters)}],
        }
    ]
    for size, starts, mem in ((1, range(7), "10Gi"), (2, (0, 2, 4, 6), "20Gi"), (4, (0, 4), "40Gi")):
        for start in starts:
            used = {f"memory-slice-{s}": {"value": "1"} for s in range(start, start + size)}
            used["memory"] = {"value": mem}
            devices.append(
                {
                    "name": f"gpu-{i}-mig-{size}g-{start}",
                    "attributes": attrs(type="mig", profile=f"{size}g", index=i),
                    "capacity": {"memory": {"value": mem}},
                    "consumesCounters": [{"counterSet": cs, "counters": used}],
                }
            )
    return {"name": cs, "counters": counters}, devices
