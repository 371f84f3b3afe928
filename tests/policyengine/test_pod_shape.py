"""Malformed pods (wrong JSON types, impossible device counts) are 400-style denials naming the field, never internal
errors, and never admitted; the fuzz part throws wrong types at every field of a real pod."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine import load_policies, shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from tests.webhook.test_admission_namespaces import _admission
from webhook.admission import Admission
from webhook.review import AdmissionDenied, BadReview, parse_review

POLICIES = load_policies(shipped_policies_dir())


@pytest.fixture(scope="module")
def admission() -> Admission:
    return _admission(RecordingApiServer())


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    pod = example("pod-legacy-vram.yaml")
    target: Any = pod
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return pod


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("metadata",), 7, "metadata must be an object"),
        (("metadata",), None, "metadata must be an object"),
        (("metadata", "annotations"), None, "metadata.annotations must be an object"),
        (("metadata", "labels"), {"a": 1}, "metadata.labels['a'] must be a string"),
        (("spec", "containers"), {"a": 1}, "spec.containers must be a list"),
        (("spec", "containers", 0, "name"), 7, "spec.containers[0].name must be a string"),
        (("spec", "containers", 0, "name"), "", "spec.containers[0].name is '': a container name must be"),
        (("spec", "containers", 0, "name"), "Main", "spec.containers[0].name is 'Main'"),
        (("spec", "containers", 0, "name"), "a" * 64, "must be a lowercase RFC 1123 label"),
        (("spec", "containers", 0, "resources"), "lots", "spec.containers[0].resources must be an object"),
        (("spec", "containers", 0, "resources", "limits"), [1], "resources.limits must be an object"),
    ],
)
def test_wrong_types_are_denied_400_naming_the_field(
    admission: Admission, path: tuple[str | int, ...], value: Any, field: str
) -> None:
    for decide in (admission.mutate, admission.validate):
        with pytest.raises(AdmissionDenied) as denied:
            decide(parse_review(review_body(_with(path, value))))
        assert denied.value.code == 400 and field in denied.value.message


@pytest.mark.parametrize("count", [2**70, 1e308, "2Ki", 9223372036854775807, "1e3", 33, "1500m", -1, "banana"])
def test_device_counts_beyond_a_claims_limit_are_refused_naming_it(admission: Admission, count: Any) -> None:
    pod = example("pod-legacy-vram.yaml")
    resources = pod["spec"]["containers"][0]["resources"]
    resources["limits"]["nvidia.com/gpu"] = count
    resources["requests"].pop("nvidia.com/gpu")
    with pytest.raises(AdmissionDenied) as denied:
        admission.mutate(parse_review(review_body(pod)))
    assert denied.value.code == 400 and "limits['nvidia.com/gpu']" in denied.value.message


@pytest.mark.parametrize("count", ["1", 1, "1000m", "1.0", "0.001k", "1e0", "1000e-3", 1.0])
def test_one_device_is_one_device_however_spelled(admission: Admission, count: Any) -> None:
    # A count is judged by the quantity's exact value: the API server (MilliValue() % 1000 == 0) accepts all of these
    # for an extended resource and hands the webhook the canonical "1". The webhook and the policy facts agree.
    pod = example("pod-legacy-vram.yaml")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": count}}
    response = admission.mutate(parse_review(review_body(pod)))["response"]
    assert response["allowed"] is True and response.get("patch")
    assert POLICIES.evaluate(pod).containers[0].replaces == {"nvidia.com/gpu": 1}


@pytest.mark.parametrize("count", ["1001m", "0.9999", "1500m", "0.0005k", "1e-9"])
def test_a_fraction_of_a_device_is_refused_however_spelled(admission: Admission, count: str) -> None:
    pod = example("pod-legacy-vram.yaml")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": count}}
    with pytest.raises(AdmissionDenied, match="a device count must be a whole number") as denied:
        admission.mutate(parse_review(review_body(pod)))
    assert denied.value.code == 400
    assert not POLICIES.evaluate(pod).allowed


def test_the_pods_total_is_bounded_too(admission: Admission) -> None:
    pod = example("pod-legacy-vram.yaml")
    first = pod["spec"]["containers"][0]
    first["resources"] = {"limits": {"nvidia.com/gpu": 20}}
    pod["spec"]["containers"].append({**copy.deepcopy(first), "name": "second"})
    with pytest.raises(AdmissionDenied, match="ask for 40 GPU devices in all.*at most 32"):
        admission.mutate(parse_review(review_body(pod)))


def test_thirty_two_is_fine(admission: Admission) -> None:
    pod = example("pod-legacy-vram.yaml")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "32"}}
    pod["metadata"]["annotations"] = {}
    assert admission.mutate(parse_review(review_body(pod)))["response"]["allowed"] is True


def _paths(obj: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if prefix:
        yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _paths(value, (*prefix, i))


_POD_PATHS = list(_paths(example("pod-legacy-vram.yaml")))
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(_POD_PATHS), value=_JSON)
def test_fuzz_any_wrong_value_anywhere_is_never_an_internal_error(
    admission: Admission, path: tuple[str | int, ...], value: Any
) -> None:
    body = review_body(_with(path, value))
    for decide in (admission.mutate, admission.validate):
        try:
            answer = decide(parse_review(body))
        except AdmissionDenied as denied:
            assert denied.code != 500 and denied.reason != "InternalError", denied.message
        except BadReview:
            pass
        else:
            assert answer["response"]["allowed"] is True


def test_a_pod_with_ten_thousand_containers_is_decided_in_linear_time(admission: Admission) -> None:
    """Found at 10k containers: 32.5 s (quadratic claim-memo lookups). Now every container is visited a fixed number
    of times, and 10k is well inside the deadline."""
    import itertools

    from tests.cpu_scaling import growth

    names = itertools.count()  # a new pod each time: a repeated one is answered from the decision cache

    def decide(n: int) -> None:
        containers = [
            {"name": f"c{i}", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1" if i < 2 else "0"}}}
            for i in range(n)
        ]
        name = f"wide-{n}-{next(names)}"
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": containers}}
        assert admission.mutate(parse_review(review_body(pod)))["response"]["allowed"] is True

    decide(1000)  # warm the compiled policies
    # Growth in this thread's CPU time from 2,500 to 10,000 containers: ~4 when linear, ~16 for the quadratic
    # lookups (10k took 32.5 s). Not a wall-clock bound, so a loaded CI machine cannot flake it.
    assert growth(decide, 2500) < 8
