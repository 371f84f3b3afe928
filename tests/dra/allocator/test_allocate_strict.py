"""`gpudra allocate` reads DRA objects strictly: unknown fields and apiVersions are errors, v1beta1 is converted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.dra.allocator._cases import DRIVER, GPU_CLASS, dclass, device, rslice
from tests.dra.model._claim_inputs import BAD_CLAIMS, V1ALPHA2_CLAIM, V1BETA1_DEMOS

runner = CliRunner()


def run(tmp_path: Path, claim: Any, *, slices: Any = None, classes: Any = None) -> tuple[int, dict[str, Any], str]:
    paths = {"slices": tmp_path / "slices.yaml", "classes": tmp_path / "classes.yaml", "claim": tmp_path / "claim.yaml"}
    sl = slices if slices is not None else [rslice("s", [device(f"gpu-{i}") for i in range(2)])]
    paths["slices"].write_text(yaml.safe_dump_all(sl))
    paths["classes"].write_text(yaml.safe_dump_all(classes if classes is not None else [GPU_CLASS]))
    paths["claim"].write_text(yaml.safe_dump_all(claim if isinstance(claim, list) else [claim]))
    args = ["allocate", "--slices", str(paths["slices"]), "--classes", str(paths["classes"])]
    result = runner.invoke(app, [*args, "--claim", str(paths["claim"]), "--node", "node-a", "--json"])
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_a_misspelled_spec_devices_is_an_error_not_an_empty_allocation(tmp_path: Path) -> None:
    _, obj, _ = BAD_CLAIMS[0]
    code, out, _ = run(tmp_path, obj)
    assert code == 2
    assert out["error"] == (
        f"{tmp_path / 'claim.yaml'}:1: invalid ResourceClaim 'misspelled': strict decoding error: "
        'unknown field "spec.device"'
    )


def test_a_misspelled_count_is_an_error_not_one_device(tmp_path: Path) -> None:
    _, obj, _ = BAD_CLAIMS[1]
    code, out, _ = run(tmp_path, obj)
    assert code == 2 and 'unknown field "spec.devices.requests[0].exactly.cuont"' in out["error"]


def test_a_v1alpha2_claim_names_the_version_and_what_is_supported(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, V1ALPHA2_CLAIM)
    assert code == 2
    assert 'unsupported apiVersion "resource.k8s.io/v1alpha2" for ResourceClaim' in out["error"]
    assert "supported: resource.k8s.io/v1, resource.k8s.io/v1beta2, resource.k8s.io/v1beta1" in out["error"]


def test_a_v1alpha2_resource_class_is_not_silently_skipped(tmp_path: Path) -> None:
    old_class = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClass", "metadata": {"name": "gpu"}}
    code, out, _ = run(tmp_path, V1BETA1_DEMOS["single-gpu"], classes=[old_class])
    assert code == 2 and "unsupported kind 'ResourceClass' of resource.k8s.io/v1alpha2" in out["error"]


def test_unknown_fields_in_slices_and_classes_are_errors_too(tmp_path: Path) -> None:
    bad_slice = rslice("s", [device("gpu-0")])
    bad_slice["spec"]["devices"][0]["capacty"] = {}
    code, out, _ = run(tmp_path, V1BETA1_DEMOS["single-gpu"], slices=[bad_slice])
    assert (
        code == 2
        and "ResourceSlice 's': strict decoding error: unknown field \"spec.devices[0].capacty\"" in out["error"]
    )
    bad_class = dict(GPU_CLASS, spec={"selector": []})
    code, out, _ = run(tmp_path, V1BETA1_DEMOS["single-gpu"], classes=[bad_class])
    assert code == 2 and 'unknown field "spec.selector"' in out["error"]


def _beta(name: str) -> dict[str, Any]:
    """A demo claim asking the test driver's class `gpu` instead of the NVIDIA driver's."""
    text = json.dumps(V1BETA1_DEMOS[name]).replace('"gpu.nvidia.com"', '"gpu"')
    out: dict[str, Any] = json.loads(text)
    return out


def test_v1beta1_claims_are_converted_with_a_note(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, _beta("multiple-gpus"))
    assert code == 0, out
    results = out["allocation"]["devices"]["results"]
    assert [(r["request"], r["device"]) for r in results] == [("ts-gpu", "gpu-0"), ("mps-gpu", "gpu-1")]
    assert err == (
        f"note: {tmp_path / 'claim.yaml'}:1: ResourceClaimTemplate 'multiple-gpus' is resource.k8s.io/v1beta1; "
        "converted to resource.k8s.io/v1 as the API server converts it\n"
    )


def test_v1beta1_count_and_first_available(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, _beta("two-gpus-count"))
    assert code == 0 and len(out["allocation"]["devices"]["results"]) == 2
    mig = dclass("mig.nvidia.com", f"device.attributes['{DRIVER}'].type == 'mig'")
    code, out, _ = run(tmp_path, _beta("mig-or-gpu"), classes=[GPU_CLASS, mig])
    assert code == 0, out
    assert out["allocation"]["devices"]["results"][0]["request"] == "accel/gpu"


def test_v1beta1_slices_are_converted(tmp_path: Path) -> None:
    beta = rslice("s", [])
    beta["apiVersion"] = "resource.k8s.io/v1beta1"
    beta["spec"]["devices"] = [{"name": "gpu-0", "basic": device("gpu-0") | {"name": None}}]
    del beta["spec"]["devices"][0]["basic"]["name"]
    code, out, err = run(tmp_path, _beta("single-gpu"), slices=[beta])
    assert code == 0, out
    assert out["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert "ResourceSlice 's' is resource.k8s.io/v1beta1" in err


def test_unsatisfiable_says_why(tmp_path: Path) -> None:
    claim = _beta("two-gpus-count")
    claim["spec"]["devices"]["requests"][0]["count"] = 3
    code, out, _ = run(tmp_path, claim)
    assert code == 1
    assert (
        out["unsatisfiable"]
        == "claim two-gpus, request gpus: needs 3 device(s), 2 free device(s) match its class and selectors"
    )
    assert out["why"] == [
        "claim two-gpus, request gpus: needs 3 device(s), 2 fit; no device on this node to compare",
    ]


def test_unsatisfiable_names_the_false_selector(tmp_path: Path) -> None:
    claim = _beta("single-gpu")
    expr = f"device.attributes['{DRIVER}'].type == 'mig'"
    claim["spec"]["spec"]["devices"]["requests"][0]["selectors"] = [{"cel": {"expression": expr}}]
    code, out, _ = run(tmp_path, claim)
    assert code == 1
    assert out["why"] == [
        f"claim single-gpu, request gpu: needs 1 device(s), 0 fit; closest device {DRIVER}/node-a/gpu-0 "
        f"(passed 1 check(s)): request selector #0 is false: {expr}"
    ]


def test_a_cel_runtime_error_stays_an_error(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, _beta("all-h100-admin"))
    assert code == 2 and "CEL runtime error" in out["error"]
