"""Driver-shaped node slices for the shape tests, and cheap clones of them onto other nodes."""

from __future__ import annotations

from typing import Any

from dra.gpus import get, node_resource_slices, synthetic_node
from dra.inventory import inventory_slices

# An A100 80GB node with static MIG on every GPU: 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb (all seven slices).
A100_LAYOUT = [("3g.40gb", 4), ("2g.20gb", 2), ("1g.10gb", 0), ("1g.10gb", 1)]


def node_slices(kind: str, node: str) -> list[dict[str, Any]]:
    """`h100-dynamic`, `a100-static`, or `<catalog model>[:count]` (whole GPUs), published for `node`."""
    if kind == "h100-dynamic":
        return inventory_slices(catalog_model="H100-SXM5-80GB", node_name=node, mig_mode="dynamic")
    if kind == "a100-static":
        gpus = synthetic_node(get("A100-SXM4-80GB"), node, 8, mig_layouts={i: A100_LAYOUT for i in range(8)})
        return node_resource_slices(gpus, mig_mode="static")
    model, _, count = kind.partition(":")
    return inventory_slices(catalog_model=model, node_name=node, count=int(count) if count else None, mig_mode="none")


def _device(device: dict[str, Any], node: str) -> dict[str, Any]:
    attributes = dict(device.get("attributes") or {})
    for name in ("uuid", "parentUUID"):
        if name in attributes:
            attributes[name] = {"string": f"{attributes[name]['string']}-{node}"}
    return {**device, "attributes": attributes}


def clone(slices: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    """The same slices published by `node`: new node, pool and slice names and new UUIDs, everything else shared."""
    out = []
    for j, s in enumerate(slices):
        spec = dict(s["spec"])
        spec["nodeName"] = node
        spec["pool"] = {**spec["pool"], "name": node}
        if "devices" in spec:
            spec["devices"] = [_device(d, node) for d in spec["devices"]]
        out.append({**s, "metadata": {"name": f"{node}-gpu.nvidia.com-{j}"}, "spec": spec})
    return out
