"""The shipped policies' slim claims decide what their claims decided before slimming.

`pre_slim_policies/` holds the shipped policies as they were before (commit a8c1ea8): each condition its own
selector, a `'<name>' in device.attributes['<domain>']` selector beside the matchAttribute constraint on the same
alternative, a max-vram bound on every MIG alternative. For every pod and namespace of the shipped policy test files,
and for sized pods under several caps, both sets decide; each distinct pair of claims is then allocated again and
again (as many pods of it) on an empty node of every catalog shape, and on a static-MIG A100 as the driver publishes
it, until the node is full or four are placed: both claims must take the same devices through the same alternatives,
in the same order, and stop at the same point.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.allocator import AllocationError, Allocator, Unsatisfiable
from dra.gpus import all_models, device_classes, get, node_resource_slices, synthetic_node
from dra.shapes import DeviceShape, catalog_shapes, fold_shapes
from policyengine import PolicySet, load_policies, shipped_policies_dir

HERE = Path(__file__).resolve().parent
GOLDEN = shipped_policies_dir() / "tests"
SLIM = load_policies(shipped_policies_dir())
BEFORE = load_policies(HERE / "pre_slim_policies")
PLACEMENTS = 4  # pods of one claim placed on one node, one after the other
A100_STATIC = [("3g.40gb", 4), ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3)]  # benchmarks/scheduler_cost.py's


def _namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}


def _sized_pod(vram: str, gpus: int, cc: str | None) -> dict[str, Any]:
    annotations = {"gpudra.io/vram": vram, **({"gpudra.io/compute-capability": cc} if cc else {})}
    container = {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    if gpus > 1:
        container["args"] = ["--tensor-parallel-size", str(gpus)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"sized-{vram}-{gpus}", "annotations": annotations},
            "spec": {"containers": [container]}}  # fmt: skip


def _inputs() -> Iterator[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(label, pod, namespace): the test files' pods in each of their namespaces and none; sized pods under caps."""
    for path in sorted(GOLDEN.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        namespaces = [None, *(data.get("namespaces") or [])]
        for pod in data.get("pods") or []:
            for ns in namespaces:
                where = ns["metadata"]["name"] if ns else "-"
                name = pod["metadata"].get("name") or pod["metadata"].get("generateName")
                yield f"{path.stem}:{name}@{where}", pod, ns
    caps = [None, "16Gi", "40G", "40Gi", "80Gi", "160Gi", "320Gi"]
    for vram in ("4Gi", "8Gi", "11981Mi", "20Gi", "30Gi", "40Gi", "70Gi"):
        for gpus in (1, 2, 4):
            for cc in (None, "8.0", "9.0"):
                for cap in caps:
                    ns = _namespace("capped", {"gpudra.io/max-vram": cap}) if cap else None
                    yield f"{vram}x{gpus}/cc={cc}/cap={cap}", _sized_pod(vram, gpus, cc), ns


@functools.cache
def _claim_pairs() -> dict[tuple[str, str], tuple[str, dict[str, Any], dict[str, Any]]]:
    """Distinct (before, slim) claim pairs, keyed by their YAML, with one input that produced each."""
    pairs: dict[tuple[str, str], tuple[str, dict[str, Any], dict[str, Any]]] = {}
    for label, pod, ns in _inputs():
        before, slim = BEFORE.evaluate(pod, ns), SLIM.evaluate(pod, ns)
        assert (before.allowed, before.policy, before.message) == (slim.allowed, slim.policy, slim.message), label
        assert (before.claim is None) == (slim.claim is None), label
        if before.claim is None or slim.claim is None:
            continue
        key = (yaml.safe_dump(dict(before.claim)), yaml.safe_dump(dict(slim.claim)))
        pairs.setdefault(key, (label, copy.deepcopy(dict(before.claim)), copy.deepcopy(dict(slim.claim))))
    return pairs


def _static_a100() -> list[dict[str, Any]]:
    layouts = {i: list(A100_STATIC) for i in range(8)}
    node = synthetic_node(get("A100-SXM4-80GB"), "static-a100", 8, mig_layouts=layouts)
    return node_resource_slices(node, mig_mode="static")


@functools.cache
def _shapes() -> tuple[DeviceShape, ...]:
    return (*catalog_shapes().shapes, *fold_shapes(_static_a100(), device_classes()).shapes)


@functools.cache
def _allocator(key: str) -> Allocator:
    shape = next(s for s in _shapes() if s.key == key)
    return Allocator(slices=shape.slices, classes=device_classes())


def _placements(spec: Mapping[str, Any], shape: DeviceShape) -> list[Any]:
    """The allocation results of PLACEMENTS pods of this claim on an empty node of `shape`, one after the other;
    the last entry says why it stopped ("unsatisfiable", or the allocator's error)."""
    base = _allocator(shape.key)
    allocated: list[dict[str, Any]] = []
    out: list[Any] = []
    for i in range(PLACEMENTS):
        meta = {"name": f"c{i}", "namespace": "ns", "uid": f"uid-{i}"}
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": meta,
            "spec": copy.deepcopy(dict(spec)),
        }
        try:
            (allocation,) = base.with_allocated(allocated).allocate([claim], node=shape.node_name)
        except Unsatisfiable:
            out.append("unsatisfiable")
            break
        except AllocationError as err:
            out.append(f"error: {err}")
            break
        # a share's shareID is a fresh UUID per allocation: the device, the request and the capacity decide
        out.append([{k: v for k, v in r.items() if k != "shareID"} for r in allocation["devices"]["results"]])
        allocated.append({**claim, "status": {"allocation": allocation}})
    return out


def test_the_baseline_is_the_policies_before_slimming_and_the_claims_differ() -> None:
    # The shipped set changed (else this test compares a set with itself) and decides the same pods the same way.
    assert isinstance(BEFORE, PolicySet) and not BEFORE.errors and BEFORE.names() == SLIM.names()
    pairs = _claim_pairs()
    changed = [label for (old, new), (label, _, _) in pairs.items() if old != new]
    assert len(pairs) > 100 and len(changed) > 50, (len(pairs), len(changed))


def test_every_catalog_model_has_a_shape() -> None:
    products = {p for s in _shapes() for p in s.evidence.products}
    assert {m.product_name for m in all_models()} <= products


@pytest.mark.parametrize("part", range(4))
def test_slim_claims_take_the_same_devices_as_before(part: int) -> None:
    pairs = sorted(_claim_pairs().items())
    differing = [(label, old, new) for (a, b), (label, old, new) in pairs if a != b]
    checked = 0
    for label, old, new in differing[part::4]:
        for shape in _shapes():
            before, slim = _placements(old, shape), _placements(new, shape)
            assert slim == before, f"{label} on {shape.describe()}:\nbefore {before}\nslim {slim}"
            checked += 1
    assert checked > 0


def test_a_mig_profile_keeps_the_cap_where_an_instance_of_it_can_exceed_it() -> None:
    # max-vram 40G (decimal): the 3g.40gb profile's name promises 40 GB, its instances hold 40192-40448 MiB (over
    # 42e9 bytes), so the bound still decides (and excludes them); a 35 GB profile's instances all fit under it.
    pod = _sized_pod("30Gi", 1, None)
    claim = SLIM.evaluate(pod, _namespace("capped", {"gpudra.io/max-vram": "40G"})).claim
    assert claim is not None
    selectors = {a["name"]: [s["cel"]["expression"] for s in a["selectors"]]
                 for a in claim["devices"]["requests"][0]["firstAvailable"]}  # fmt: skip
    bound = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40000000000')) <= 0"
    assert selectors["mig-1g-35gb"] == ["device.attributes['gpu.nvidia.com'].profile == '1g.35gb'"]
    assert selectors["mig-3g-40gb"] == [f"device.attributes['gpu.nvidia.com'].profile == '3g.40gb' && {bound}"]
    assert all(len(s) == 1 for s in selectors.values()), selectors


def test_the_profile_table_holds_the_catalog_memory_of_each_profile() -> None:
    # right-size's `mib` column decides whether a MIG alternative needs the cap bound: it must be the most memory an
    # instance of that profile has on any catalogued model.
    most: dict[str, int] = {}
    for model in all_models():
        for profile in model.mig.profiles if model.mig else ():
            most[profile.name] = max(most.get(profile.name, 0), profile.memory_mib)
    table = next(p for p in SLIM.policies if p.name == "right-size").params["migProfiles"]
    assert {p["profile"]: p["mib"] for p in table} == {p["profile"]: most[p["profile"]] for p in table}
