"""Satisfiability against driver-shaped clusters: alternatives dropped, claims refused with their evidence."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.gpus import device_classes
from dra.model import ResourceClaimSpec
from dra.model.validation import validate
from dra.shapes import (
    DeviceShapes,
    SatisfiabilityChecker,
    ShapeFolder,
    SizeEvidence,
    claim_devices,
    explain,
    fold_shapes,
    memory_bounds,
    prune,
)
from policyengine import load_policies
from policyengine.translate import translate
from tests.dra.shapes._clusters import node_slices

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MIXED = ("h100-dynamic", "a100-static", "L40S")


def _cluster(*kinds: str) -> DeviceShapes:
    slices = [s for k, kind in enumerate(kinds) for s in node_slices(kind, f"{kind.split(':')[0].lower()}-{k}")]
    return fold_shapes(slices, device_classes())


def _key(shapes: DeviceShapes, product: str) -> str:
    (shape,) = [s for s in shapes.shapes if any(product in p for p in s.evidence.products)]
    return shape.key


@pytest.fixture(scope="module")
def policies() -> Any:
    return load_policies()


def _translated(policies: Any, pod: dict[str, Any], namespace: dict[str, Any] | None) -> tuple[dict[str, Any], Any]:
    decision = policies.evaluate(pod, namespace)
    (template,) = translate(pod, decision).templates
    return template, decision


def _vllm(args: list[str], gpus: int, namespace: str) -> dict[str, Any]:
    pod = yaml.safe_load((EXAMPLES / "pod-vllm-tp4.yaml").read_text())
    pod["metadata"]["namespace"] = namespace
    container = pod["spec"]["containers"][0]
    container["args"] = ["--model", "meta-llama/Llama-3.1-70B-Instruct", *args]
    container["resources"]["limits"]["nvidia.com/gpu"] = gpus
    return dict(pod)


def _claim(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        devices["constraints"] = constraints
    return {"metadata": {"name": "c"}, "spec": {"devices": devices}}


def _gpus(name: str, count: int, cls: str = "gpu.nvidia.com", *selectors: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def test_the_readme_tp4_example_in_team_a_is_refused_naming_the_cap(policies: Any) -> None:
    pod = yaml.safe_load((EXAMPLES / "pod-vllm-tp4.yaml").read_text())
    namespace = yaml.safe_load((EXAMPLES / "namespace-team-a.yaml").read_text())
    template, decision = _translated(policies, pod, namespace)
    shapes = _cluster(*MIXED)
    verdict = SatisfiabilityChecker().check(template, shapes)
    assert verdict.decided and not verdict.satisfiable
    (request,) = verdict.requests
    assert len(request.alternatives) >= 2 and request.survivors == ()
    cap = f"gpudra.io/max-vram={namespace['metadata']['labels']['gpudra.io/max-vram']} over 4 devices"
    sizes = {c: SizeEvidence(*text.split(" from ", 1)) for c, text in decision.sizing.items()}
    reason = explain(verdict, shapes, template, sizes=sizes, cap=cap)
    assert reason is not None
    (why,) = reason.requests
    assert why.contradictory  # every alternative: memory >= the model estimate and <= the cap per device
    assert all(b.low == 53634 * 2**20 and b.high == 40 * 2**30 for b in why.bounds)
    message = reason.message()
    assert "gpudra.io/max-vram=160Gi" in message
    assert "memory >= 53634Mi and memory <= 40Gi" in message
    assert "the largest device memory is 81152Mi" in message and "NVIDIA H100 80GB HBM3" in message
    assert why.closest is not None and why.closest.check and "closest: device " in message
    if sizes:  # the engine said where the size came from: the reason repeats it
        assert why.size is not None and why.size.source in message


def test_the_same_pod_without_a_cap_keeps_only_the_alternatives_this_cluster_has(policies: Any) -> None:
    template, _ = _translated(policies, _vllm(["--tensor-parallel-size", "4"], 4, "default"), None)
    shapes = _cluster("h100-dynamic", "L40S")
    verdict = SatisfiabilityChecker().check(template, shapes)
    assert verdict.satisfiable and verdict.together == (_key(shapes, "H100"),)
    dropped = set(verdict.dropped())
    # The driver publishes no partition4 and no gpudra NVLink group: those alternatives can never be satisfied.
    assert {"vllm/same-partition4", "vllm/same-nvlinkgroup"} <= dropped
    assert "vllm/any" not in dropped
    devices = claim_devices(template)
    pruned = prune(devices, verdict)
    names = [s["name"] for s in pruned["requests"][0]["firstAvailable"]]
    assert names and not set(f"vllm/{n}" for n in names) & dropped
    referenced = {n for c in pruned.get("constraints") or [] for n in c["requests"]}
    assert referenced <= {f"vllm/{n}" for n in names}
    assert validate(ResourceClaimSpec.from_k8s({"devices": pruned})) == []  # what the API server would accept
    assert devices == claim_devices(template)  # prune copies, never edits


def test_pruning_takes_dropped_alternatives_out_of_config_too() -> None:
    """An MPS config naming the share alternative (gpudra.io/share: mps) goes with it, or the claim is invalid."""
    devices = {
        "requests": [{"name": "main", "firstAvailable": [
            {"name": "shared", "deviceClassName": "gpu.nvidia.com"},
            {"name": "whole", "deviceClassName": "gpu.nvidia.com"},
        ]}],
        "config": [
            {"requests": ["main/shared"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "MPS"}}},
            {"requests": ["main/shared", "main/whole"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {}}},
        ],
    }  # fmt: skip

    class _Dropped:
        def removable(self) -> tuple[str, ...]:
            return ("main/shared",)

    pruned = prune(devices, _Dropped())  # type: ignore[arg-type]
    assert [s["name"] for s in pruned["requests"][0]["firstAvailable"]] == ["whole"]
    assert pruned["config"] == [{"requests": ["main/whole"], "opaque": devices["config"][1]["opaque"]}]
    assert validate(ResourceClaimSpec.from_k8s({"devices": pruned})) == []


def test_a_70b_model_on_one_gpu_fits_a_b200_only(policies: Any) -> None:
    template, _ = _translated(policies, _vllm(["--max-model-len", "8192"], 1, "default"), None)
    (low,) = {memory_bounds(a).low for a in claim_devices(template)["requests"][0]["firstAvailable"]}
    assert low is not None and low >= 159_589 * 2**20
    shapes = _cluster("H100-SXM5-80GB", "H200-SXM5-141GB", "B200-SXM6-180GB", "a100-static", "L40S")
    verdict = SatisfiabilityChecker().check(template, shapes)
    b200 = _key(shapes, "B200")
    assert verdict.together == (b200,)
    assert all(a.shapes in ((), (b200,)) for r in verdict.requests for a in r.alternatives)
    without = _cluster("H100-SXM5-80GB", "H200-SXM5-141GB")
    refused = SatisfiabilityChecker().check(template, without)
    reason = explain(refused, without, template)
    assert reason is not None and "the largest device memory is 143771Mi" in reason.message()


def test_mig_profiles_fit_where_the_driver_offers_them() -> None:
    shapes = _cluster(*MIXED)
    checker = SatisfiabilityChecker()
    h100, a100 = _key(shapes, "H100"), _key(shapes, "A100")
    profile = "device.attributes['gpu.nvidia.com'].profile == '{}'"
    seven = checker.check(_claim(_gpus("m", 1, "mig.nvidia.com", profile.format("7g.80gb"))), shapes)
    assert seven.together == (h100,)  # dynamic MIG offers every profile; the static A100 layout has no 7g
    three = checker.check(_claim(_gpus("m", 8, "mig.nvidia.com", profile.format("3g.40gb"))), shapes)
    assert set(three.together) == {a100, h100}  # one 3g.40gb on each static A100 GPU, two on each dynamic H100
    nine = checker.check(_claim(_gpus("m", 9, "mig.nvidia.com", profile.format("3g.40gb"))), shapes)
    assert nine.together == (h100,)
    too_many = checker.check(_claim(_gpus("m", 17, "mig.nvidia.com", profile.format("3g.40gb"))), shapes)
    assert not too_many.satisfiable
    (alternative,) = too_many.requests[0].alternatives
    assert alternative.closest is not None and alternative.closest.needed == 17


def test_firstavailable_alternatives_are_judged_one_by_one() -> None:
    shapes = _cluster("L40S")
    claim = _claim(
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "mig", "deviceClassName": "mig.nvidia.com"},
                {"name": "pair", "deviceClassName": "gpu.nvidia.com", "count": 2},
                {"name": "eight", "deviceClassName": "gpu.nvidia.com", "count": 8},
            ],
        },
        constraints=[{"requests": ["gpu/pair"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    )
    verdict = SatisfiabilityChecker().check(claim, shapes)
    assert verdict.dropped() == ("gpu/mig", "gpu/eight")
    assert [a.name for a in verdict.requests[0].survivors] == ["pair"]
    pruned = prune(claim_devices(claim), verdict)
    assert [s["name"] for s in pruned["requests"][0]["firstAvailable"]] == ["pair"]
    assert pruned["constraints"] == claim["spec"]["devices"]["constraints"]


def test_a_constraint_that_binds_an_alternative_counts() -> None:
    shapes = _cluster("L40S:8")  # two PCIe roots of four GPUs each
    roots = [
        d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"]
        for d in shapes.shapes[0].slices[0]["spec"]["devices"]
    ]
    assert sorted(roots.count(r) for r in set(roots)) == [4, 4]

    def claim(count: int) -> dict[str, Any]:
        return _claim(
            {
                "name": "g",
                "firstAvailable": [
                    {"name": "same-root", "deviceClassName": "gpu.nvidia.com", "count": count},
                    {"name": "any", "deviceClassName": "gpu.nvidia.com", "count": count},
                ],
            },
            constraints=[{"requests": ["g/same-root"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
        )

    checker = SatisfiabilityChecker()
    assert checker.check(claim(4), shapes).dropped() == ()
    five = checker.check(claim(5), shapes)
    assert five.dropped() == ("g/same-root",) and five.satisfiable
    (same_root, _) = five.requests[0].alternatives
    assert same_root.closest is not None and "matchAttribute" in same_root.closest.check
    pruned = prune(claim_devices(claim(5)), five)
    assert [s["name"] for s in pruned["requests"][0]["firstAvailable"]] == ["any"]
    assert pruned["constraints"] == []  # the constraint named only the dropped alternative
    assert validate(ResourceClaimSpec.from_k8s({"devices": pruned})) == []


def test_requests_that_fit_alone_may_fail_together() -> None:
    shapes = _cluster("H100-SXM5-80GB")
    verdict = SatisfiabilityChecker().check(_claim(_gpus("a", 5), _gpus("b", 5)), shapes)
    assert [r.survivors != () for r in verdict.requests] == [True, True]
    assert verdict.decided and not verdict.satisfiable and "not together" in verdict.note
    reason = explain(verdict, shapes, _claim(_gpus("a", 5), _gpus("b", 5)))
    assert reason is not None and reason.requests == () and "not together" in reason.message()
    fine = SatisfiabilityChecker().check(_claim(_gpus("a", 4), _gpus("b", 4)), shapes)
    assert fine.together == (shapes.shapes[0].key,)


def test_an_unknown_device_class_is_named() -> None:
    shapes = _cluster("L4")
    verdict = SatisfiabilityChecker().check(_claim(_gpus("a", 1, "no-such-class")), shapes)
    assert not verdict.satisfiable
    (alternative,) = verdict.requests[0].alternatives
    assert alternative.error is not None and "no-such-class" in alternative.error
    reason = explain(verdict, shapes, _claim(_gpus("a", 1, "no-such-class")))
    assert reason is not None and "no-such-class" in reason.message()


def test_verdicts_are_memoised_per_claim_and_generation() -> None:
    folder = ShapeFolder()
    folder.replace_classes(device_classes())
    folder.replace_slices(node_slices("L4", "n"))
    checker = SatisfiabilityChecker()
    claim = _claim(_gpus("a", 2))
    first = checker.check(claim, folder.shapes())
    assert checker.check(copy.deepcopy(claim), folder.shapes()) is first
    assert checker.check({}, folder.shapes(), key="mine") is not first  # an empty claim has no request
    assert checker.check(claim, folder.shapes(), key="mine").requests == ()  # the caller's key wins
    for s in node_slices("H100-SXM5-80GB", "h"):
        folder.apply_slice(s)
    again = checker.check(claim, folder.shapes())
    assert again is not first and len(again.together) == 2 and again.generation == first.generation + 1


def test_a_partial_or_empty_view_decides_nothing() -> None:
    claim = _claim(_gpus("a", 64))
    empty = SatisfiabilityChecker().check(claim, fold_shapes([], device_classes()))
    assert not empty.decided and empty.satisfiable and empty.dropped() == () and "no device shapes" in empty.note
    slices = node_slices("L4", "a") + node_slices("T4", "b")
    capped = fold_shapes(slices, device_classes(), max_shapes=1)
    verdict = SatisfiabilityChecker().check(claim, capped)
    assert not verdict.decided and verdict.satisfiable and "cap of 1" in verdict.note
    assert explain(verdict, capped, claim) is None


def test_memory_bounds_read_selectors_and_capacity_requests() -> None:
    bounds = memory_bounds(
        {
            "selectors": [
                {"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0"}},
                {"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('20Gi')) <= 0"}},
                {"cel": {"expression": "device.attributes['gpu.nvidia.com'].type == 'gpu'"}},
            ],
            "capacity": {"requests": {"gpu.nvidia.com/memory": "12Gi"}},
        }
    )
    assert (bounds.low, bounds.high, bounds.empty) == (12 * 2**30, 20 * 2**30, False)
    assert bounds.text() == "memory >= 12Gi and memory <= 20Gi"
    assert memory_bounds({}).text() == ""
