"""Hypothesis strategies for whole allocation problems in the Go oracle's input shape.

A case has full GPUs (models, NVLink groups, taints), static-MIG-like devices, dynamic MIG as counter
sets in the 1.35 layout, shared devices with consumable capacity, odd node selection, generations and
incomplete pools; already-allocated claims; and 1-2 claims with exact/All/firstAvailable requests,
selectors, tolerations, capacity requests, matchAttribute/distinctAttribute constraints and configs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.dra.allocator._cases import DRIVER, NVLINK, claim, dclass, exact, first_available, rslice

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "labels": {"zone": "z1"}}}
CLASSES = [
    dclass("gpu", f"device.attributes['{DRIVER}'].type == 'gpu'"),
    dclass(
        "mig",
        f"device.attributes['{DRIVER}'].type == 'mig'",
        config=[{"opaque": {"driver": DRIVER, "parameters": {"kind": "MigDeviceConfig"}}}],
    ),
    dclass("shared", f"device.attributes['{DRIVER}'].type == 'shared'"),
    dclass("any"),
]
SELECTORS = [
    f"device.attributes['{DRIVER}'].model == 'a'",
    f"device.attributes['{DRIVER}'].model != 'a'",
    f"device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0",
    f"'profile' in device.attributes['{DRIVER}'] && device.attributes['{DRIVER}'].profile == '1g'",
]
TAINTS = [
    {"key": "maint", "value": "yes", "effect": "NoSchedule"},
    {"key": "maint", "value": "no", "effect": "NoExecute"},
    {"key": "info", "effect": "None"},
]
TOLERATIONS = [
    {"key": "maint", "operator": "Exists"},
    {"key": "maint", "operator": "Equal", "value": "yes", "effect": "NoSchedule"},
    {"operator": "Exists"},
    {"key": "maint", "value": "yes"},  # operator defaulted to Equal
]


def _attrs(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in values.items():
        key = NVLINK if k == "nvlink" else k
        out[key] = {"int": v} if isinstance(v, int) else {"string": v}
    return out


@st.composite
def full_gpu_pool(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 6))
    devices = []
    for i in range(n):
        d: dict[str, Any] = {
            "name": f"gpu-{i}",
            "attributes": _attrs(
                type="gpu", model=draw(st.sampled_from("ab")), nvlink=f"g{draw(st.integers(0, 1))}", numa=i % 2
            ),
            "capacity": {"memory": {"value": draw(st.sampled_from(["40Gi", "80Gi"]))}},
        }
        if draw(st.integers(0, 5)) == 0:
            d["taints"] = [draw(st.sampled_from(TAINTS))]
        devices.append(d)
    pool = f"p{index}-full"
    selection = draw(st.sampled_from(["node", "node", "all", "label", "label-miss", "other", "per-device"]))
    spec: dict[str, Any] = {}
    node: str | None = "node-a"
    if selection == "per-device":
        spec, node = {"perDeviceNodeSelection": True}, None
        for d in devices:
            where = draw(st.sampled_from(["node-a", "node-a", "node-b", "all"]))
            if where == "all":
                d["allNodes"] = True
            else:
                d["nodeName"] = where
    elif selection == "all":
        spec, node = {"allNodes": True}, None
    elif selection in ("label", "label-miss"):
        zone = "z1" if selection == "label" else "z2"
        sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}]}
        spec, node = {"nodeSelector": sel}, None
    elif selection == "other":
        node = "node-b"
    slices = [rslice(f"{pool}-s0", devices, pool=pool, node=node, **spec)]
    shape = draw(st.sampled_from(["ok"] * 5 + ["old-generation", "incomplete", "split", "split"]))
    if shape == "old-generation":
        slices.append(
            rslice(f"{pool}-old", [dict(devices[0], name="stale")], pool=pool, node=node, generation=0, **spec)
        )
    elif shape == "incomplete":
        slices[0]["spec"]["pool"]["resourceSliceCount"] = 2
    elif shape == "split" and len(devices) > 1:
        slices = [
            rslice(f"{pool}-s1", devices[1:], pool=pool, node=node, count=2, **spec),
            rslice(f"{pool}-s0", devices[:1], pool=pool, node=node, count=2, **spec),
        ]
    return slices


@st.composite
def dynamic_mig_pool(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    gpus = draw(st.integers(1, 2))
    pool = f"p{index}-dyn"
    counter_sets = []
    slices = []
    for g in range(gpus):
        cs = f"gpu-{g}-cs"
        counters = {f"memory-slice-{s}": {"value": "1"} for s in range(4)}
        counters["memory"] = {"value": "40Gi"}
        counter_sets.append({"name": cs, "counters": counters})
        devices = [
            {
                "name": f"gpu-{g}",
                "attributes": _attrs(type="gpu", model="a", nvlink=f"g{g}", numa=g),
                "capacity": {"memory": {"value": "40Gi"}},
                "consumesCounters": [{"counterSet": cs, "counters": dict(counters)}],
            }
        ]
        for size, starts, mem in ((1, (0, 1, 2, 3), "10Gi"), (2, (0, 2), "20Gi")):
            for start in starts:
                used = {f"memory-slice-{s}": {"value": "1"} for s in range(start, start + size)}
                used["memory"] = {"value": mem}
                devices.append(
                    {
                        "name": f"gpu-{g}-mig-{size}g-{start}",
                        "attributes": _attrs(type="mig", profile=f"{size}g", model="a", nvlink=f"g{g}", numa=g),
                        "capacity": {"memory": {"value": mem}},
                        "consumesCounters": [{"counterSet": cs, "counters": used}],
                    }
                )
        slices.append(rslice(f"{pool}-gpu-{g}", devices, pool=pool, count=gpus + 1))
    slices.insert(0, rslice(f"{pool}-counters", [], pool=pool, count=gpus + 1, counters=counter_sets))
    return slices


@st.composite
def static_mig_pool(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """Existing MIG devices (no counters): `parentUUID` and `memorySlice<i>` capacities, as the driver publishes."""
    layouts = [[(4, 0), (2, 4), (1, 6)], [(1, 0), (1, 1), (2, 2), (4, 4)], [(8, 0)]]
    devices = []
    for g in range(draw(st.integers(1, 2))):
        for size, start in draw(st.sampled_from(layouts)):
            capacity = {"memory": {"value": f"{10 * size}Gi"}}
            capacity.update({f"memorySlice{i}": {"value": "1"} for i in range(start, start + size)})
            devices.append(
                {
                    "name": f"gpu-{g}-mig-{size}g-{start}",
                    "attributes": _attrs(
                        type="mig", profile=f"{size}g", parentUUID=f"GPU-{index}-{g}", model="a", numa=g
                    ),
                    "capacity": capacity,
                }
            )
    return [rslice(f"p{index}-static-s0", devices, pool=f"p{index}-static")]


@st.composite
def shared_pool(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    policy = draw(
        st.sampled_from(
            [
                None,
                {"default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi"}},
                {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]},
                {"default": "8Gi", "validRange": {"min": "4Gi", "max": "20Gi"}},
            ]
        )
    )
    cap: dict[str, Any] = {"value": "40Gi"}
    if policy:
        cap["requestPolicy"] = policy
    devices = [
        {
            "name": f"shared-{i}",
            "allowMultipleAllocations": True,
            "attributes": _attrs(type="shared", model=draw(st.sampled_from("ab")), nvlink="g0"),
            "capacity": {"memory": cap},
        }
        for i in range(draw(st.integers(1, 2)))
    ]
    return [rslice(f"p{index}-shared-s0", devices, pool=f"p{index}-shared")]


@st.composite
def request(draw: st.DrawFn, name: str, with_sub: bool, classes: tuple[str, ...]) -> dict[str, Any]:
    def body() -> dict[str, Any]:
        cls = draw(st.sampled_from(classes))
        mode = draw(st.sampled_from(["ExactCount"] * 9 + ["All"]))
        extra: dict[str, Any] = {}
        if draw(st.integers(0, 3)) == 0:
            extra["selectors"] = [draw(st.sampled_from(SELECTORS))]
        if draw(st.integers(0, 3)) == 0:
            extra["tolerations"] = [draw(st.sampled_from(TOLERATIONS))]
        if cls == "shared" and draw(st.booleans()):
            extra["capacity"] = {"requests": {"memory": draw(st.sampled_from(["1Gi", "7Gi", "10Gi", "20Gi", "50Gi"]))}}
        return {"cls": cls, "mode": mode, "count": draw(st.sampled_from([1, 1, 1, 2, 2, 3])), **extra}

    if with_sub and draw(st.integers(0, 3)) == 0:
        subs = []
        for i in range(draw(st.integers(1, 3))):
            b = body()
            sub: dict[str, Any] = {"name": f"s{i}", "deviceClassName": b.pop("cls"), "allocationMode": b.pop("mode")}
            count = b.pop("count")
            if sub["allocationMode"] == "ExactCount":
                sub["count"] = count
            sub.update(b)
            subs.append(sub)
        return first_available(name, *subs)
    b = body()
    if draw(st.integers(0, 9)) == 0:
        b["adminAccess"] = True
    return exact(name, b.pop("cls"), b.pop("count"), b.pop("mode"), **b)


@st.composite
def a_claim(draw: st.DrawFn, index: int, classes: tuple[str, ...]) -> dict[str, Any]:
    names = [f"r{i}" for i in range(draw(st.sampled_from([1, 1, 1, 2, 2, 3])))]
    requests = [draw(request(n, True, classes)) for n in names]
    constraints = []
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
        kind = draw(st.sampled_from(["matchAttribute", "distinctAttribute"]))
        attr = draw(st.sampled_from(["model", "numa", "type"]))
        attr_name = NVLINK if attr == "nvlink" else f"{DRIVER}/{attr}"
        c: dict[str, Any] = {kind: attr_name}
        if len(names) > 1 and draw(st.booleans()):
            c["requests"] = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
        constraints.append(c)
    config = []
    if draw(st.booleans()):
        targets = draw(st.lists(st.sampled_from(names + [f"{names[0]}/s0"]), max_size=2, unique=True))
        config.append({"requests": targets, "opaque": {"driver": DRIVER, "parameters": {"n": index}}})
    return claim(f"claim-{index}", *requests, constraints=constraints or None, config=config or None)


@st.composite
def case(draw: st.DrawFn) -> dict[str, Any]:
    """One allocation problem as the oracle reads it."""
    slices: list[dict[str, Any]] = []
    kinds = draw(st.lists(st.sampled_from(["full", "full", "dyn", "static", "shared"]), min_size=1, max_size=3))
    for i, kind in enumerate(kinds):
        maker = {"full": full_gpu_pool, "dyn": dynamic_mig_pool, "static": static_mig_pool, "shared": shared_pool}[kind]
        slices.extend(draw(maker(i)))
    # Already-allocated claims: some devices of the node's slices, shared ones by shareID.
    allocated = []
    candidates = [
        (s["spec"]["pool"]["name"], d)
        for s in slices
        for d in s["spec"].get("devices") or []
        if s["spec"]["pool"]["generation"] > 0
    ]
    taken = (
        draw(st.lists(st.sampled_from(candidates), max_size=3, unique_by=lambda pd: (pd[0], pd[1]["name"])))
        if candidates
        else []
    )
    for n, (pool, d) in enumerate(taken):
        result: dict[str, Any] = {"request": "r", "driver": DRIVER, "pool": pool, "device": d["name"]}
        if d.get("allowMultipleAllocations"):
            result["shareID"] = f"00000000-0000-0000-0000-00000000000{n}"
            result["consumedCapacity"] = {"memory": draw(st.sampled_from(["10Gi", "20Gi"]))}
        allocated.append(claim(f"old-{n}", exact("r", "any"), allocation={"devices": {"results": [result]}}))
    classes = ["any"]
    if "full" in kinds or "dyn" in kinds:
        classes += ["gpu"] * 3
    if "dyn" in kinds or "static" in kinds:
        classes += ["mig"] * 2
    if "shared" in kinds:
        classes += ["shared"] * 2
    claims = [draw(a_claim(i, tuple(classes))) for i in range(draw(st.integers(1, 2)))]
    return {
        "deviceClasses": CLASSES,
        "resourceSlices": slices,
        "allocatedClaims": allocated,
        "claims": claims,
        "node": NODE,
    }
