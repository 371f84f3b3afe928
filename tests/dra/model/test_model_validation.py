"""Validation as k8s.io/kubernetes pkg/apis/resource/validation reports it: field paths and upstream messages."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.documents import load_objects
from dra.errors import InputError, ModelValidationError
from dra.model import KINDS, DeviceClass, K8sModel, Pod, ResourceClaim, ResourceClaimSpec, ResourceSlice
from dra.model.validation import LIMITS, validate

FIXTURES = Path(__file__).parent / "fixtures"
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
C_ID_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)

KINDS_TEXT = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"

Doc = dict[str, Any]

# The case tables were run against a kube-apiserver of the pinned release (dry-run creates): every rule here gave
# the same (path, message) there, except where noted (status is not validated on create; Go renders some bad values
# from its internal structs).


def claim() -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    }


def slice_() -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "node-a",
            "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }


def _errors(doc: Doc) -> list[tuple[str, str]]:
    model: type[K8sModel] = KINDS.get(doc["kind"], Pod)
    return model.from_k8s(doc).validation_errors()


def _with(base: Callable[[], Doc], change: Callable[[Doc], object]) -> Doc:
    doc = base()
    change(doc)
    return doc


def _req(doc: Doc, i: int = 0) -> Doc:
    req: Doc = doc["spec"]["devices"]["requests"][i]
    return req


def _dev(doc: Doc, i: int = 0) -> Doc:
    dev: Doc = doc["spec"]["devices"][i]
    return dev


def _many_requests(doc: Doc) -> None:
    doc["spec"]["devices"]["requests"] = [
        {"name": f"r{i}", "exactly": {"deviceClassName": "c"}} for i in range(LIMITS["DeviceRequestsMaxSize"] + 1)
    ]


def _sub_requests(n: int) -> Callable[[Doc], object]:
    def change(doc: Doc) -> None:
        _req(doc).pop("exactly")
        _req(doc)["firstAvailable"] = [{"name": f"s{i}", "deviceClassName": "c"} for i in range(n)]

    return change


CLAIM_CASES: list[tuple[str, Callable[[Doc], object], tuple[str, str]]] = [
    ("too many requests", _many_requests, ("spec.devices.requests", "Too many: 33: must have at most 32 items")),
    (
        "neither exactly nor firstAvailable",
        lambda d: _req(d).pop("exactly"),
        ("spec.devices.requests[0]", "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    ),
    (
        "both exactly and firstAvailable",
        lambda d: _req(d).update(firstAvailable=[{"name": "a", "deviceClassName": "c"}]),
        (
            "spec.devices.requests[0]",
            "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
            "but multiple fields are set",
        ),
    ),
    (
        "too many subrequests",
        _sub_requests(9),
        ("spec.devices.requests[0].firstAvailable", "Too many: 9: must have at most 8 items"),
    ),
    (
        "duplicate request names",
        lambda d: d["spec"]["devices"]["requests"].append(copy.deepcopy(_req(d))),
        (
            "spec.devices.requests[1]",
            'Duplicate value: {"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com",'
            '"allocationMode":"ExactCount","count":1}}',
        ),
    ),
    (
        "request name not a DNS label",
        lambda d: _req(d).update(name="GPU"),
        ("spec.devices.requests[0].name", f'Invalid value: "GPU": {LABEL_MSG}'),
    ),
    (
        "negative count",
        lambda d: _req(d)["exactly"].update(count=-2),
        ("spec.devices.requests[0].exactly.count", "Invalid value: -2: must be greater than zero"),
    ),
    (
        "count with All",
        lambda d: _req(d)["exactly"].update(allocationMode="All", count=2),
        (
            "spec.devices.requests[0].exactly.count",
            "Invalid value: 2: must not be specified when allocationMode is 'All'",
        ),
    ),
    (
        "unknown allocation mode",
        lambda d: _req(d)["exactly"].update(allocationMode="Some"),
        (
            "spec.devices.requests[0].exactly.allocationMode",
            'Unsupported value: "Some": supported values: "All", "ExactCount"',
        ),
    ),
    (
        "missing device class",
        lambda d: _req(d)["exactly"].update(deviceClassName=""),
        ("spec.devices.requests[0].exactly.deviceClassName", "Required value"),
    ),
    (
        "too many selectors",
        lambda d: _req(d)["exactly"].update(selectors=[{"cel": {"expression": "true"}}] * 33),
        ("spec.devices.requests[0].exactly.selectors", "Too many: 33: must have at most 32 items"),
    ),
    (
        "selector without cel",
        lambda d: _req(d)["exactly"].update(selectors=[{}]),
        ("spec.devices.requests[0].exactly.selectors[0].cel", "Required value"),
    ),
    (
        "CEL too long",
        lambda d: _req(d)["exactly"].update(selectors=[{"cel": {"expression": "true || " * 1281}}]),
        ("spec.devices.requests[0].exactly.selectors[0].cel.expression", "Too long: may not be more than 10240 bytes"),
    ),
    (
        "toleration Exists with a value",
        lambda d: _req(d)["exactly"].update(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        (
            "spec.devices.requests[0].exactly.tolerations[0].value",
            'Invalid value: "v": must be empty for operator `Exists`',
        ),
    ),
    (
        "toleration effect",
        lambda d: _req(d)["exactly"].update(tolerations=[{"key": "k", "effect": "PreferNoSchedule"}]),
        (
            "spec.devices.requests[0].exactly.tolerations[0].effect",
            'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"',
        ),
    ),
    (
        "constraint without kind",
        lambda d: d["spec"]["devices"].update(constraints=[{"requests": ["gpu"]}]),
        (
            "spec.devices.constraints[0]",
            'Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, '
            "but multiple fields are set",
        ),
    ),
    (
        "constraint attribute without domain",
        lambda d: d["spec"]["devices"].update(constraints=[{"matchAttribute": "pcieRoot"}]),
        (
            "spec.devices.constraints[0].matchAttribute",
            'Invalid value: "pcieRoot": a fully qualified name must be a domain and a name separated by a slash',
        ),
    ),
    (
        "constraint naming an unknown request",
        lambda d: d["spec"]["devices"].update(constraints=[{"requests": ["nope"], "matchAttribute": "a.b/c"}]),
        (
            "spec.devices.constraints[0].requests[0]",
            'Invalid value: "nope": must be the name of a request in the claim or the name of a request and a '
            "subrequest separated by '/'",
        ),
    ),
    (
        "too many constraints",
        lambda d: d["spec"]["devices"].update(constraints=[{"matchAttribute": "a.b/c"}] * 33),
        ("spec.devices.constraints", "Too many: 33: must have at most 32 items"),
    ),
    (
        "config without opaque",
        lambda d: d["spec"]["devices"].update(config=[{"requests": ["gpu"]}]),
        ("spec.devices.config[0].opaque", "Required value"),
    ),
    (
        "opaque parameters not an object",
        lambda d: d["spec"]["devices"].update(config=[{"opaque": {"driver": "gpu.nvidia.com", "parameters": [1]}}]),
        ("spec.devices.config[0].opaque.parameters", 'Invalid value: "<value omitted>": must be a valid JSON object'),
    ),
    (
        "opaque parameters too large",
        lambda d: d["spec"]["devices"].update(
            config=[{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"x": "a" * 10240}}}]
        ),
        ("spec.devices.config[0].opaque.parameters", "Too long: may not be more than 10240 bytes"),
    ),
    (
        "too many configs",
        lambda d: d["spec"]["devices"].update(config=[{"opaque": {"driver": "d.io", "parameters": {}}}] * 33),
        ("spec.devices.config", "Too many: 33: must have at most 32 items"),
    ),
    (
        "missing name",
        lambda d: d["metadata"].pop("name"),
        ("metadata.name", "Required value: name or generateName is required"),
    ),
    ("missing namespace", lambda d: d["metadata"].pop("namespace"), ("metadata.namespace", "Required value")),
    (
        "reservedFor without allocation",
        lambda d: d.update(status={"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}),
        ("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"),
    ),
    (
        "status for a device that is not allocated",
        lambda d: d.update(
            status={
                "allocation": {
                    "devices": {"results": [{"request": "gpu", "driver": "d.io", "pool": "p", "device": "x"}]}
                },
                "devices": [{"driver": "d.io", "pool": "p", "device": "y"}],
            }
        ),
        ("status.devices[0]", 'Invalid value: "d.io/p/y": must be an allocated device in the claim'),
    ),
    (
        "share ID not a UUID",
        lambda d: d.update(
            status={
                "allocation": {
                    "devices": {
                        "results": [{"request": "gpu", "driver": "d.io", "pool": "p", "device": "x", "shareID": "ABC"}]
                    }
                }
            }
        ),
        ("status.allocation.devices.results[0].shareID", 'Invalid value: "ABC": error validating uid'),
    ),
]


@pytest.mark.parametrize(("name", "change", "expected"), CLAIM_CASES, ids=[c[0] for c in CLAIM_CASES])
def test_claim_rules(name: str, change: Callable[[Doc], object], expected: tuple[str, str]) -> None:
    errors = _errors(_with(claim, change))
    path, message = expected
    assert any(p == path and m.startswith(message) for p, m in errors), errors


def _many_devices(n: int, taint: bool = False) -> Callable[[Doc], object]:
    def change(doc: Doc) -> None:
        doc["spec"]["devices"] = [{"name": f"d{i}"} for i in range(n)]
        if taint:
            doc["spec"]["devices"][0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]

    return change


def _counter_sets(n: int, counters: int = 1) -> Callable[[Doc], object]:
    def change(doc: Doc) -> None:
        doc["spec"].pop("devices")
        doc["spec"]["sharedCounters"] = [
            {"name": f"set-{i}", "counters": {f"c{j}": {"value": "1"} for j in range(counters)}} for i in range(n)
        ]

    return change


SLICE_CASES: list[tuple[str, Callable[[Doc], object], tuple[str, str]]] = [
    (
        "no node selection",
        lambda d: d["spec"].pop("nodeName"),
        (
            "spec",
            "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
            "is required",
        ),
    ),
    (
        "two node selections",
        lambda d: d["spec"].update(allNodes=True),
        (
            "spec",
            'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, '
            "`perDeviceNodeSelection` is required, but multiple fields are set",
        ),
    ),
    (
        "allNodes false",
        lambda d: (d["spec"].pop("nodeName"), d["spec"].update(allNodes=False)),
        ("spec.allNodes", "Invalid value: false: must be either unset or set to true"),
    ),
    (
        "node selector with two terms",
        lambda d: (
            d["spec"].pop("nodeName"),
            d["spec"].update(
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                        {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
                    ]
                }
            ),
        ),
        ("spec.nodeSelector.nodeSelectorTerms", "Invalid value: "),
    ),
    (
        "node selector In without values",
        lambda d: (
            d["spec"].pop("nodeName"),
            d["spec"].update(
                nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]}
            ),
        ),
        (
            "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
    ),
    (
        "devices and shared counters together (1.35)",
        lambda d: d["spec"].update(sharedCounters=[{"name": "s", "counters": {"c": {"value": "1"}}}]),
        ("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'),
    ),
    ("129 devices", _many_devices(129), ("spec.devices", "Too many: 129: must have at most 128 items")),
    (
        "65 devices with a taint",
        _many_devices(65, taint=True),
        ("spec.devices", "Too many: 65: must have at most 64 items"),
    ),
    (
        "duplicate device names",
        lambda d: d["spec"]["devices"].append({"name": "gpu-0"}),
        ("spec.devices[1]", 'Duplicate value: "gpu-0"'),
    ),
    (
        "slice count zero",
        lambda d: d["spec"]["pool"].update(resourceSliceCount=0),
        ("spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero"),
    ),
    (
        "negative generation",
        lambda d: d["spec"]["pool"].update(generation=-1),
        ("spec.pool.generation", "Invalid value: -1: must be greater than or equal to zero"),
    ),
    ("empty pool name", lambda d: d["spec"]["pool"].update(name=""), ("spec.pool.name", "Required value")),
    (
        "driver name not a subdomain",
        lambda d: d["spec"].update(driver="gpu_nvidia"),
        ("spec.driver", 'Invalid value: "gpu_nvidia": a lowercase RFC 1123 subdomain'),
    ),
    (
        "driver name too long",
        lambda d: d["spec"].update(driver="a" * 60 + ".com"),
        ("spec.driver", "Too long: may not be more than 63 bytes"),
    ),
    (
        "33 attributes and capacities",
        lambda d: _dev(d).update(
            attributes={f"a{i}": {"int": i} for i in range(20)}, capacity={f"c{i}": {"value": "1"} for i in range(13)}
        ),
        ("spec.devices[0]", "Invalid value: 33: the total number of attributes and capacities must not exceed 32"),
    ),
    (
        "attribute with two values",
        lambda d: _dev(d).update(attributes={"a": {"int": 1, "string": "x"}}),
        (
            "spec.devices[0].attributes[a]",
            f'Invalid value: "{{int, string}}": must specify exactly one of: {KINDS_TEXT}',
        ),
    ),
    (
        "attribute with no value",
        lambda d: _dev(d).update(attributes={"a": {}}),
        ("spec.devices[0].attributes[a]", f'Invalid value: "": must specify one of: {KINDS_TEXT}'),
    ),
    (
        "string attribute too long",
        lambda d: _dev(d).update(attributes={"a": {"string": "x" * 65}}),
        ("spec.devices[0].attributes[a].string", "Too long: may not be more than 64 bytes"),
    ),
    (
        "version attribute not semver",
        lambda d: _dev(d).update(attributes={"v": {"version": "v1.0"}}),
        (
            "spec.devices[0].attributes[v].version",
            'Invalid value: "v1.0": must be a string compatible with semver.org spec 2.0.0',
        ),
    ),
    (
        "attribute name not a C identifier",
        lambda d: _dev(d).update(attributes={"1abc": {"int": 1}}),
        ("spec.devices[0].attributes", f'Invalid value: "1abc": {C_ID_MSG}'),
    ),
    (
        "attribute name too long",
        lambda d: _dev(d).update(attributes={"x" * 33: {"int": 1}}),
        ("spec.devices[0].attributes", "Too long: may not be more than 32 bytes"),
    ),
    ("9 counter sets", _counter_sets(9), ("spec.sharedCounters", "Too many: 9: must have at most 8 items")),
    (
        "33 counters in a set",
        _counter_sets(1, 33),
        ("spec.sharedCounters[0].counters", "Too many: 33: must have at most 32 items"),
    ),
    (
        "3 counter consumptions",
        lambda d: _dev(d).update(
            consumesCounters=[{"counterSet": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(3)]
        ),
        ("spec.devices[0].consumesCounters", "Too many: 3: must have at most 2 items"),
    ),
    (
        "consumption without counters",
        lambda d: _dev(d).update(consumesCounters=[{"counterSet": "s"}]),
        ("spec.devices[0].consumesCounters[0].counters", "Required value"),
    ),
    (
        "request policy on a device that cannot be shared",
        lambda d: _dev(d).update(capacity={"memory": {"value": "80Gi", "requestPolicy": {"default": "1Gi"}}}),
        ("spec.devices[0].capacity[memory].requestPolicy", "Forbidden: allowMultipleAllocations must be true"),
    ),
    (
        "valid values and range together",
        lambda d: _dev(d).update(
            allowMultipleAllocations=True,
            capacity={
                "m": {"value": "8", "requestPolicy": {"default": "1", "validValues": ["1"], "validRange": {"min": "1"}}}
            },
        ),
        ("spec.devices[0].capacity[m].requestPolicy", "Forbidden: exactly one policy can be specified"),
    ),
    (
        "valid values unsorted",
        lambda d: _dev(d).update(
            allowMultipleAllocations=True,
            capacity={"m": {"value": "8", "requestPolicy": {"default": "4", "validValues": ["4", "2"]}}},
        ),
        (
            "spec.devices[0].capacity[m].requestPolicy.validValues[1]",
            'Invalid value: "2": values must be sorted in ascending order',
        ),
    ),
    (
        "default not among valid values",
        lambda d: _dev(d).update(
            allowMultipleAllocations=True,
            capacity={"m": {"value": "8", "requestPolicy": {"default": "3", "validValues": ["2", "4"]}}},
        ),
        (
            "spec.devices[0].capacity[m].requestPolicy.validValues",
            'Invalid value: "3": default value is not valid according to the requestPolicy',
        ),
    ),
    (
        "range max off the step grid",
        lambda d: _dev(d).update(
            allowMultipleAllocations=True,
            capacity={
                "m": {
                    "value": "80Gi",
                    "requestPolicy": {"default": "4Gi", "validRange": {"min": "4Gi", "max": "78Gi", "step": "4Gi"}},
                }
            },
        ),
        (
            "spec.devices[0].capacity[m].requestPolicy.validRange.step",
            'Invalid value: "78Gi": value is not a multiple of a given step (4Gi) from (4Gi)',
        ),
    ),
    (
        "range min above capacity",
        lambda d: _dev(d).update(
            allowMultipleAllocations=True,
            capacity={"m": {"value": "1Gi", "requestPolicy": {"default": "2Gi", "validRange": {"min": "2Gi"}}}},
        ),
        (
            "spec.devices[0].capacity[m].requestPolicy.validRange.min",
            'Invalid value: "2Gi": min is larger than capacity value: 1Gi',
        ),
    ),
    (
        "too many taints",
        lambda d: _dev(d).update(taints=[{"key": "k", "effect": "NoSchedule"}] * 17),
        ("spec.devices[0].taints", "Too many: 17: must have at most 16 items"),
    ),
    (
        "taint effect",
        lambda d: _dev(d).update(taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
        (
            "spec.devices[0].taints[0].effect",
            'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"',
        ),
    ),
    (
        "per-device node fields without perDeviceNodeSelection",
        lambda d: _dev(d).update(nodeName="node-b"),
        (
            "spec.devices[0]",
            "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ),
    ),
    (
        "perDeviceNodeSelection device without selection",
        lambda d: (d["spec"].pop("nodeName"), d["spec"].update(perDeviceNodeSelection=True)),
        (
            "spec.devices[0]",
            "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ),
    ),
    (
        "binding conditions without failure conditions",
        lambda d: _dev(d).update(bindingConditions=["a.io/ready"]),
        (
            "spec.devices[0].bindingFailureConditions",
            "Invalid value: null: bindingFailureConditions are required to use bindingConditions",
        ),
    ),
    (
        "too many binding conditions",
        lambda d: _dev(d).update(bindingConditions=[f"c{i}" for i in range(5)], bindingFailureConditions=["f"]),
        ("spec.devices[0].bindingConditions", "Too many: 5: must have at most 4 items"),
    ),
]


@pytest.mark.parametrize(("name", "change", "expected"), SLICE_CASES, ids=[c[0] for c in SLICE_CASES])
def test_slice_rules(name: str, change: Callable[[Doc], object], expected: tuple[str, str]) -> None:
    errors = _errors(_with(slice_, change))
    path, message = expected
    assert any(p == path and m.startswith(message) for p, m in errors), errors


def test_bare_bases_and_fixtures_are_valid() -> None:
    assert _errors(claim()) == []
    assert _errors(slice_()) == []
    assert _errors(_with(slice_, lambda d: d["spec"].update(driver="GPU.Example.com"))) == []  # 1.35: caseless
    assert _errors(_with(slice_, _many_devices(128))) == []
    assert _errors(_with(slice_, _counter_sets(8, 32))) == []
    for obj in load_objects(*sorted(FIXTURES.glob("*.yaml"))):
        model = obj if isinstance(obj, K8sModel) else Pod.from_k8s(obj)
        assert model.validation_errors() == []


ACCEPTED_BY_THE_API_SERVER: list[tuple[str, Callable[[], Doc], Callable[[Doc], object]]] = [
    (
        "17 request tolerations (no size check in validation.go)",
        claim,
        lambda d: _req(d)["exactly"].update(tolerations=[{"key": "k", "operator": "Exists"}] * 17),
    ),
    (
        "capacity requests are not validated",
        claim,
        lambda d: _req(d)["exactly"].update(capacity={"requests": {"1bad": "-1"}}),
    ),
    ("attribute names with two slashes", slice_, lambda d: _dev(d).update(attributes={"a.io/b/c": {"int": 1}})),
    (
        "matchAttribute with two slashes",
        claim,
        lambda d: d["spec"]["devices"].update(constraints=[{"matchAttribute": "a.io/b/c"}]),
    ),
    (
        "a namespace on a cluster-scoped object (the server drops it)",
        slice_,
        lambda d: d["metadata"].update(namespace="x"),
    ),
]


@pytest.mark.parametrize(
    ("name", "base", "change"), ACCEPTED_BY_THE_API_SERVER, ids=[c[0] for c in ACCEPTED_BY_THE_API_SERVER]
)
def test_accepted_as_by_the_api_server(name: str, base: Callable[[], Doc], change: Callable[[Doc], object]) -> None:
    assert _errors(_with(base, change)) == []


def test_zero_count_is_defaulted_not_rejected() -> None:
    # SetDefaults_ExactDeviceRequest turns count 0 (= unset in Go) into 1 before validation runs.
    assert _errors(_with(claim, lambda d: _req(d)["exactly"].update(count=0))) == []
    assert _errors(_with(claim, lambda d: _req(d)["exactly"].update(allocationMode="All", count=0))) == []


def test_subrequest_references() -> None:
    doc = _with(claim, _sub_requests(2))
    doc["spec"]["devices"]["constraints"] = [{"requests": ["gpu/s1"], "matchAttribute": "a.io/b"}]
    assert _errors(doc) == []
    doc["spec"]["devices"]["constraints"][0]["requests"] = ["gpu/s9"]
    assert [p for p, _ in _errors(doc)] == ["spec.devices.constraints[0].requests[0]"]


def test_cel_compile_errors_are_reported() -> None:
    doc = _with(claim, lambda d: _req(d)["exactly"].update(selectors=[{"cel": {"expression": "device.driver =="}}]))
    errors = _errors(doc)
    assert len(errors) == 1
    path, message = errors[0]
    assert path == "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert message.startswith('Invalid value: "device.driver ==": compilation failed')


def test_device_class_rules() -> None:
    base: Doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"extendedResourceName": "nvidia.com/gpu"},
    }
    assert DeviceClass.from_k8s(base).validation_errors() == []
    bad = copy.deepcopy(base)
    bad["spec"]["extendedResourceName"] = "gpu"
    bad["metadata"]["name"] = "Bad_Name"
    errors = DeviceClass.from_k8s(bad).validation_errors()
    message = "Invalid value: \"gpu\": a name must be a domain-prefixed path, such as 'example.com/my-prop'"
    assert ("spec.extendedResourceName", message) in errors
    assert [p for p, _ in errors].count("metadata.name") == 1


POD = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: a
    resources:
      claims:
      - {name: gpu, request: r}
      - {name: gpu, request: r}
      - {name: other}
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: t}
  - {name: both, resourceClaimName: c, resourceClaimTemplateName: t}
  - {name: neither}
  - {name: gpu, resourceClaimName: c}
"""


def test_pod_rules() -> None:
    errors = Pod.from_k8s(yaml.safe_load(POD)).validation_errors()
    paths = [p for p, _ in errors]
    assert ("spec.resourceClaims[3].name", 'Duplicate value: "gpu"') in errors
    assert any(p == "spec.resourceClaims[1]" and "at most one of `resourceClaimName`" in m for p, m in errors)
    assert any(p == "spec.resourceClaims[2]" and "must specify one of:" in m for p, m in errors)
    assert ("spec.containers[0].resources.claims[1]", 'Duplicate value: "gpu/r"') in errors
    assert (
        "spec.containers[0].resources.claims[2]",
        'Not found: "other": must be one of the names in pod.spec.resourceClaims: both, gpu, neither',
    ) in errors
    assert len(paths) == 5


def test_long_pod_names_are_fine_with_claim_templates() -> None:
    # The API server names generated claims with generateName (truncated), so only the pod's own name limit applies.
    pod = {
        "metadata": {"name": "p" * 250},
        "spec": {"containers": [], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
    }
    assert Pod.from_k8s(pod).validation_errors() == []


def test_validate_k8s_raises_with_all_errors() -> None:
    doc = _with(claim, lambda d: (_req(d).update(name="Bad"), _req(d)["exactly"].update(count=-1)))
    with pytest.raises(ModelValidationError) as info:
        ResourceClaim.from_k8s(doc).validate_k8s()
    assert [p for p, _ in info.value.errors] == [
        "spec.devices.requests[0].name",
        "spec.devices.requests[0].exactly.count",
    ]
    assert info.value.field == "spec.devices.requests[0].name"
    assert str(info.value).startswith('spec.devices.requests[0].name: Invalid value: "Bad"')
    ok = ResourceClaim.from_k8s(claim())
    assert ok.validate_k8s() is ok


def test_specs_validate_on_their_own() -> None:
    spec = ResourceClaimSpec.from_k8s({"devices": {"requests": [{"name": "x"}]}})
    assert [p for p, _ in spec.validation_errors()] == ["devices.requests[0]"]
    device = ResourceSlice.from_k8s(_with(slice_, lambda d: _dev(d).update(name="Bad"))).spec.devices or []
    assert [p for p, _ in device[0].validation_errors()] == ["name"]
    with pytest.raises(TypeError, match="no validation for"):
        validate(ResourceSlice.from_k8s(slice_()).spec.pool)


def test_load_objects_can_validate(tmp_path: Path) -> None:
    doc = _with(slice_, lambda d: d["spec"]["pool"].update(resourceSliceCount=0))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert len(load_objects(path)) == 1
    with pytest.raises(InputError) as info:
        load_objects(path, validate=True)
    assert info.value.line == 1
    assert "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero" in info.value.message
