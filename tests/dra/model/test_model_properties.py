"""Properties: generated slices and claims round-trip exactly, and validation reports rather than crashes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dra.documents import read_documents
from dra.errors import InputError, ModelValidationError
from dra.model import ResourceClaim, ResourceSlice
from dra.quantity import Quantity

# Mostly valid names with some invalid ones mixed in, so that both paths are exercised.
names = st.one_of(
    st.from_regex(r"[a-z]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True),
    st.text(alphabet="aZ_-./0", min_size=0, max_size=6),
)
qualified = st.one_of(
    st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True),
    st.builds(lambda d, n: f"{d}/{n}", st.sampled_from(["gpu.nvidia.com", "resource.kubernetes.io", "a..b"]), names),
)
quantities = st.builds(
    lambda n, s: f"{n}{s}", st.integers(min_value=-5, max_value=10**6), st.sampled_from(["", "m", "k", "Mi", "Gi", "G"])
).map(lambda t: str(Quantity(t)))
attributes = st.one_of(
    st.builds(lambda v: {"int": v}, st.integers(min_value=-(2**40), max_value=2**40)),
    st.builds(lambda v: {"bool": v}, st.booleans()),
    st.builds(lambda v: {"string": v}, st.text(max_size=70)),
    st.builds(lambda v: {"version": v}, st.sampled_from(["1.2.3", "v1", "9.0.0-rc.1+b", "01.0.0"])),
    st.just({}),
    st.just({"int": 1, "string": "x"}),
)
devices = st.builds(
    lambda name, attrs, caps, multi: {
        "name": name,
        **({"attributes": attrs} if attrs else {}),
        **({"capacity": {k: {"value": v} for k, v in caps.items()}} if caps else {}),
        **({"allowMultipleAllocations": multi} if multi is not None else {}),
    },
    names,
    st.dictionaries(qualified, attributes, max_size=5),
    st.dictionaries(qualified, quantities, max_size=3),
    st.one_of(st.none(), st.booleans()),
)
node_selection: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
    [{"nodeName": "node-a"}, {"allNodes": True}, {"allNodes": False}, {}, {"nodeName": "n", "allNodes": True}]
)


@st.composite
def slices(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": draw(st.sampled_from(["gpu.nvidia.com", "Bad_Driver", ""])),
        "pool": {
            "name": draw(names),
            "generation": draw(st.integers(min_value=-1, max_value=5)),
            "resourceSliceCount": draw(st.integers(min_value=0, max_value=3)),
        },
        **draw(node_selection),
        "devices": draw(st.lists(devices, max_size=4)),
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": draw(names)},
        "spec": spec,
    }


@given(slices())
@settings(max_examples=60, deadline=None)
def test_generated_slices_round_trip_and_validate(doc: dict[str, Any]) -> None:
    model = ResourceSlice.from_k8s(doc)
    assert model.to_k8s() == doc
    errors = model.validation_errors()
    assert all(isinstance(path, str) and isinstance(message, str) and message for path, message in errors)
    assert all(path == "metadata.name" or path.startswith("spec") for path, _ in errors)


requests = st.builds(
    lambda name, count, mode, selector: {
        "name": name,
        "exactly": {
            "deviceClassName": "gpu.nvidia.com",
            **({"count": count} if count is not None else {}),
            **({"allocationMode": mode} if mode else {}),
            **({"selectors": [{"cel": {"expression": selector}}]} if selector else {}),
        },
    },
    names,
    st.one_of(st.none(), st.integers(min_value=-1, max_value=3)),
    st.sampled_from([None, "ExactCount", "All", "Some"]),
    st.sampled_from([None, "device.driver == 'gpu.nvidia.com'", "device.driver ==", "true"]),
)


@given(st.lists(requests, max_size=4))
@settings(max_examples=60, deadline=None)
def test_generated_claims_round_trip_and_validate(reqs: list[dict[str, Any]]) -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": reqs}},
    }
    model = ResourceClaim.from_k8s(doc)
    assert model.to_k8s() == doc
    errors = model.validation_errors()
    names_seen = [r["name"] for r in reqs]
    if len(set(names_seen)) < len(names_seen):
        assert any(m.startswith("Duplicate value") for _, m in errors)
    try:
        model.validate_k8s()
    except ModelValidationError as err:
        assert err.errors == errors
    else:
        assert errors == []


@given(st.text(max_size=200).filter(lambda t: t != "-"))  # "-" reads stdin
@settings(max_examples=200, deadline=None)
def test_any_text_loads_or_raises_input_error(text: str) -> None:
    try:
        docs = read_documents(text)
    except InputError as err:
        assert err.source in ("<string>", text)  # a one-line text may name a file or directory
    else:
        assert all(isinstance(d.data, dict) and d.line >= 1 for d in docs)
