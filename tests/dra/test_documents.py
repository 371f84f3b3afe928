"""dra.documents: YAML/JSON files and text, streams, Lists, typed DRA objects, and errors with file:line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dra.documents import Document, load_documents, load_objects, load_objects_by_kind, read_documents
from dra.errors import InputError
from dra.model import DeviceClass, ResourceClaim, ResourceSlice

FIXTURES = Path(__file__).parent / "model" / "fixtures"

STREAM = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: a
---
# a comment-only document is skipped
---
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata:
    name: s1
  spec:
    driver: d.example.com
    allNodes: true
    pool: {name: p, generation: 1, resourceSliceCount: 1}
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
"""


def test_stream_with_list_and_lines() -> None:
    docs = read_documents(STREAM)
    assert [(d.data["kind"], d.line) for d in docs] == [("DeviceClass", 1), ("ResourceSlice", 11), ("ConfigMap", 19)]
    assert all(d.source == "<string>" for d in docs)
    assert load_documents(STREAM)[0] == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "a"},
    }


def test_files_by_path_and_string(tmp_path: Path) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text(STREAM)
    by_path = read_documents(path)
    by_name = read_documents(str(path))
    assert by_path == by_name
    assert by_path[0] == Document(by_path[0].data, str(path), 1)


def test_json_objects_arrays_and_typed_lists(tmp_path: Path) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
    }
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimList", "items": [claim]}))
    assert load_documents(path) == [claim]
    assert load_documents(json.dumps([claim, claim])) == [claim, claim]
    objs = load_objects(path)
    assert isinstance(objs[0], ResourceClaim) and objs[0].metadata.name == "c"


def test_fixture_files_load_as_typed_models() -> None:
    objs = load_objects(*sorted(FIXTURES.glob("*.yaml")))
    by_kind = load_objects_by_kind(*sorted(FIXTURES.glob("*.yaml")))
    assert len(objs) == sum(len(v) for v in by_kind.values())
    assert all(isinstance(o, ResourceSlice) for o in by_kind["ResourceSlice"])
    assert all(isinstance(o, DeviceClass) for o in by_kind["DeviceClass"])
    assert all(isinstance(o, dict) for o in by_kind["Pod"])  # not a DRA kind: kept as a dict
    assert len(by_kind["ResourceSlice"]) == 8


def test_other_kinds_keep_skip_or_error() -> None:
    assert [type(o).__name__ for o in load_objects(STREAM)] == ["DeviceClass", "ResourceSlice", "dict"]
    assert [type(o).__name__ for o in load_objects(STREAM, others="skip")] == ["DeviceClass", "ResourceSlice"]
    with pytest.raises(InputError) as info:
        load_objects(STREAM, others="error")
    assert (info.value.line, "unsupported kind 'ConfigMap'" in info.value.message) == (19, True)


def test_restricting_kinds_names_the_offender() -> None:
    with pytest.raises(InputError) as info:
        load_objects(STREAM, kinds={"ResourceSlice"})
    assert info.value.line == 1
    assert "expected ResourceSlice, got kind 'DeviceClass'" in str(info.value)


def test_invalid_object_reports_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: ok}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: broken}\n"
        "spec:\n  devices:\n  - name: gpu-0\n    capacity:\n      memory: {value: 80GB}\n"
    )
    with pytest.raises(InputError) as info:
        load_objects(path)
    err = info.value
    assert (err.source, err.line) == (str(path), 5)
    assert "invalid ResourceSlice 'broken'" in err.message
    assert "spec.devices[0].capacity[memory].value" in err.message
    assert str(err).startswith(f"{path}:5: ")


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("kind: A\nmetadata:\n  name: x\n   bad: indent\n", 4, "invalid YAML"),
        ("a: b: c\n", 1, "mapping values are not allowed"),
        ("kind: A\nkind: B\n", 2, "duplicate key 'kind'"),
        ("kind: A\nspec: [1, 2\n", 3, "invalid YAML"),
        ("- 1\n- 2\n", 1, "expected a Kubernetes object"),
        ("kind: FooList\nitems:\n- 3\n", 3, "items[0] of FooList"),
        ('{"kind": "A", "kind": "B"}', 1, "duplicate key 'kind'"),
    ],
)
def test_malformed_input(text: str, line: int | None, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        read_documents(text)
    assert info.value.line == line
    assert fragment in info.value.message


def test_malformed_json_file_reports_line(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{\n  "kind": "A",\n  "spec": {\n}\n')
    with pytest.raises(InputError) as info:
        read_documents(path)
    assert info.value.source == str(path) and info.value.line == 5 and "invalid JSON" in info.value.message


def test_timestamps_stay_strings() -> None:
    doc = load_documents("kind: X\nmetadata:\n  creationTimestamp: 2026-05-04T10:11:12Z\n")[0]
    assert doc["metadata"]["creationTimestamp"] == "2026-05-04T10:11:12Z"


def test_missing_file_and_missing_kind(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_documents("does-not-exist.yaml")
    with pytest.raises(InputError, match="cannot read file"):
        read_documents(tmp_path / "absent.yaml")
    with pytest.raises(InputError, match="is a directory"):
        read_documents(str(tmp_path))
    with pytest.raises(InputError, match="object has no kind"):
        load_objects("metadata: {name: x}\n")


def test_dash_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: A\n---\nkind: B\n"))
    docs = read_documents("-")
    assert [(d.data["kind"], d.source, d.line) for d in docs] == [("A", "<stdin>", 1), ("B", "<stdin>", 3)]


def test_empty_input_has_no_documents() -> None:
    assert load_documents("") == []
    assert load_documents("---\n---\n") == []


def test_deep_nesting_is_an_input_error() -> None:
    # Deep enough for Python's recursion limit; libyaml would recurse in C (and crash at ~50000 levels).
    for text in ("a: " + "[" * 3000 + "]" * 3000, "- " * 3000 + "x", "a: " + "{b: " * 3000 + "}" * 3000):
        with pytest.raises(InputError, match="nested too deeply"):
            read_documents(text)
    # Brackets inside a string only look deep: the careful (pure-Python) path still reads them.
    assert load_documents('kind: X\nexpr: "' + "[" * 400 + '"\n')[0]["expr"] == "[" * 400
    nested = load_documents("a: " + "[" * 150 + "]" * 150)[0]["a"]
    depth = 1
    while nested:
        nested, depth = nested[0], depth + 1
    assert depth == 150
    with pytest.raises(InputError, match="nested too deeply"):
        read_documents('{"a": ' + "[" * 30000 + "]" * 30000 + "}")


CLAIM_V1BETA1 = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: old}
spec:
  devices:
    requests: [{name: gpu, deviceClassName: gpu.nvidia.com, count: 2}]
"""


def test_strict_reads_as_the_api_server_with_field_validation_strict() -> None:
    """The CLI's loader: unknown fields and unknown resource.k8s.io kinds are errors naming file and line, older
    versions are converted with a note, kinds gpudra does not model follow `others`; the lenient read keeps all."""
    notes: list[str] = []
    (claim,) = load_objects(CLAIM_V1BETA1, strict=True, notes=notes)
    assert isinstance(claim, ResourceClaim)
    assert claim.to_k8s()["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert notes == [
        "note: <string>:1: ResourceClaim 'old' is resource.k8s.io/v1beta1; "
        "converted to resource.k8s.io/v1 as the API server converts it"
    ]
    misspelled = STREAM.replace("allNodes: true", "allNodes: true\n    alNodes: true")
    assert len(load_objects(misspelled)) == 3
    with pytest.raises(InputError) as info:
        load_objects(misspelled, strict=True)
    assert (info.value.line, info.value.message) == (
        11,
        "invalid ResourceSlice 's1': strict decoding error: unknown field \"spec.alNodes\"",
    )
    taint_rule = "apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\nmetadata: {name: t}\n"
    assert load_objects(STREAM + "---\n" + taint_rule, strict=True, others="skip")[-1].metadata.name == "s1"  # type: ignore[union-attr]
    resource_class = "apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClass\nmetadata: {name: gpu}\n"
    with pytest.raises(InputError, match=r"<string>:1: unsupported kind 'ResourceClass' of resource.k8s.io/v1alpha2"):
        load_objects(resource_class, strict=True, others="skip")
    assert load_objects(resource_class, others="skip") == []
