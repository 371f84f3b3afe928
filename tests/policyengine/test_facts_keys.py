"""The GPU facts are their own memo keys: changing any one field changes their equality, their hash and the token
the policy memo hands out for them, so no pod is ever served another pod's `gpu` value."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from dra.sizing import SizingDecision
from policyengine._memo import PolicyMemo
from policyengine.facts import DERIVED_FIELDS, ContainerFacts, FrozenCounts, PodFacts, pod_facts

SIZING = SizingDecision(
    8 * 2**30, "annotation", samples=3, window_seconds=60, reason="r", model_bytes=2**30, min_device_bytes=2**31,
    memory_utilization=0.9, server="vllm", model="m", pressure=True, warnings=("w",),
)  # fmt: skip
# Every field set away from its default, so that a change to any one is a change from something.
CONTAINER = ContainerFacts(
    name="main",
    kind="containers",
    index=1,
    sidecar=False,
    legacy=FrozenCounts({"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 1}),
    in_requests=("nvidia.com/gpu",),
    in_limits=("nvidia.com/gpu",),
    claims=("c",),
    hami=FrozenCounts({"nvidia.com/gpumem": 4000}),
    sizing=SIZING,
)
POD = PodFacts((CONTAINER,), ("pod-claim",), dra_devices=1, extended_resources=(("nvidia.com/gpu", "gpu.nvidia.com"),))

# Other values for each field, one at a time: a new field without one here fails the completeness check.
SIZING_CHANGES: dict[str, Sequence[Any]] = {
    "vram_bytes": [None, 4 * 2**30], "source": ["observed"], "samples": [4], "window_seconds": [61],
    "reason": ["s"], "model_bytes": [0], "min_device_bytes": [0], "memory_utilization": [0.8],
    "server": ["sglang"], "model": ["n"], "pressure": [False], "warnings": [(), ("w", "x")],
}  # fmt: skip
CONTAINER_CHANGES: dict[str, Sequence[Any]] = {
    "name": ["side"],
    "kind": ["initContainers"],
    "index": [0],
    "sidecar": [True],
    "legacy": [
        FrozenCounts({"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 1}),  # another count
        FrozenCounts({"nvidia.com/gpu": 2}),  # one resource fewer
        FrozenCounts(
            {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/gpu": 2}
        ),  # the same items in another order, as CEL sees
    ],
    "in_requests": [()],
    "in_limits": [("nvidia.com/gpu", "nvidia.com/mig-1g.10gb")],
    "claims": [(), ("d",)],
    "hami": [FrozenCounts(), FrozenCounts({"nvidia.com/gpumem": 4001}), FrozenCounts({"nvidia.com/gpucores": 4000})],
    "sizing": [dataclasses.replace(SIZING, **{name: values[0]}) for name, values in SIZING_CHANGES.items()],
    "reuses": ["app"],
    "also": [("app-2",)],
    "extra": [1],
}
POD_CHANGES: dict[str, Sequence[Any]] = {
    "containers": [(), (CONTAINER, CONTAINER), (dataclasses.replace(CONTAINER, legacy=FrozenCounts()),)],
    "pod_claims": [(), ("other",)],
    "dra_devices": [0, 2],
    "extended_resources": [(), (("nvidia.com/gpu", "other.example.com"),)],
    "pod_total": [4],
    "scheduler_name": ["kai-scheduler"],
}


def _token(memo: PolicyMemo, facts: PodFacts) -> int:
    return memo.gpu(facts)[0]


def assert_every_field_keys(
    base: Any, changes: Mapping[str, Sequence[Any]], derived: frozenset[str] = frozenset()
) -> None:
    """Each field of the dataclass `base` but the `derived` ones has changes listed, and each change makes a value
    that is unequal to `base`, hashes otherwise and, for pod facts, gets a memo token of its own."""
    names = {f.name for f in dataclasses.fields(base) if f.name not in derived}
    assert names == set(changes), f"list other values for: {sorted(names ^ set(changes))}"
    memo = PolicyMemo([])
    for name, values in changes.items():
        for value in values:
            changed = dataclasses.replace(base, **{name: value})
            assert changed != base and base != changed, (name, value)
            assert hash(changed) != hash(base), (name, value)
            if isinstance(base, PodFacts):
                assert _token(memo, changed) != _token(memo, base), (name, value)
    # An equal copy is the same key.
    copy = dataclasses.replace(base)
    assert copy == base and hash(copy) == hash(base)
    if isinstance(base, PodFacts):
        assert _token(memo, copy) == _token(memo, base)


def test_a_change_to_any_sizing_field_is_a_change_of_key() -> None:
    assert_every_field_keys(SIZING, SIZING_CHANGES)


def test_a_change_to_any_container_field_is_a_change_of_key() -> None:
    assert_every_field_keys(CONTAINER, CONTAINER_CHANGES)
    # and so of the pod's facts that hold it
    changed = [dataclasses.replace(CONTAINER, **{name: v}) for name, vs in CONTAINER_CHANGES.items() for v in vs]
    memo = PolicyMemo([])
    tokens = {_token(memo, dataclasses.replace(POD, containers=(c,))) for c in changed}
    assert len(tokens) == len(changed) and _token(memo, POD) not in tokens


def test_a_change_to_any_pod_field_is_a_change_of_key() -> None:
    assert_every_field_keys(POD, POD_CHANGES, DERIVED_FIELDS)


def test_only_derived_fields_are_left_out_of_the_comparison() -> None:
    for cls in (PodFacts, ContainerFacts, SizingDecision):
        params = getattr(cls, "__dataclass_params__")  # noqa: B009 (not in the classes' types)
        assert params.eq and params.frozen, cls
        derived = DERIVED_FIELDS if cls is PodFacts else frozenset()
        for f in dataclasses.fields(cls):
            assert f.compare == (f.name not in derived), (cls, f.name)
            assert f.init == f.compare, (cls, f.name)  # what is left out is computed, never given
    assert POD.legacy_containers == (CONTAINER,)


def test_the_check_fails_when_a_field_is_left_out_of_the_comparison() -> None:
    @dataclasses.dataclass(frozen=True)
    class Forgetful:
        kept: int
        forgotten: int = dataclasses.field(default=0, compare=False)

    with pytest.raises(AssertionError, match="forgotten"):
        assert_every_field_keys(Forgetful(1, 1), {"kept": [2], "forgotten": [2]})


def test_frozen_counts_compare_in_order_read_as_a_dict_and_refuse_change() -> None:
    counts = FrozenCounts({"a": 1, "b": 2})
    assert counts == FrozenCounts({"a": 1, "b": 2}) and hash(counts) == hash(FrozenCounts({"a": 1, "b": 2}))
    assert counts != FrozenCounts({"b": 2, "a": 1}) and counts != FrozenCounts({"a": 1})
    assert not counts != FrozenCounts({"a": 1, "b": 2})
    assert counts == {"a": 1, "b": 2} and dict(counts) == {"a": 1, "b": 2} and counts["b"] == 2 and "a" in counts
    assert len(counts) == 2 and list(counts.items()) == [("a", 1), ("b", 2)] and "c" not in counts
    assert pickle.loads(pickle.dumps(counts)) == counts and copy.deepcopy(counts) == counts
    changes: list[Callable[[], object]] = [
        lambda: counts.__setitem__("a", 2), lambda: counts.__delitem__("a"), lambda: counts.update(a=2),
        lambda: counts.pop("a"), lambda: counts.popitem(), lambda: counts.setdefault("c", 3), counts.clear,
    ]  # fmt: skip
    for change in changes:
        with pytest.raises(TypeError, match="cannot be changed"):
            change()
    with pytest.raises(TypeError, match="cannot be changed"):
        counts |= {"c": 3}
    assert counts == {"a": 1, "b": 2}


def test_pods_that_differ_in_a_fact_get_different_gpu_values_and_equal_pods_one() -> None:
    def pod(limits: dict[str, Any], name: str = "main") -> dict[str, Any]:
        return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": name, "resources": {"limits": limits}}]}}

    memo = PolicyMemo([])
    base = pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000})
    variants = [
        pod({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 4000}),
        pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4001}),
        pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}, name="other"),
        pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000, "nvidia.com/gpucores": 50}),
    ]
    token, gpu = memo.gpu(pod_facts(base))
    assert memo.gpu(pod_facts(pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}))) == (token, gpu)
    for variant in variants:
        other_token, other_gpu = memo.gpu(pod_facts(variant))
        assert other_token != token and other_gpu != gpu
    assert memo.gpu(pod_facts(base, dra_devices=1))[0] != token
    assert memo.gpu(pod_facts(base, extended_resources={"nvidia.com/gpu": "gpu.nvidia.com"}))[0] != token
