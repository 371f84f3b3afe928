"""`gpudra policy lint|test|explain` and `gpudra translate`: output contracts and exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
runner = CliRunner()


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_translate_prints_the_pod_and_its_template_as_a_yaml_stream() -> None:
    code, out, _ = _run("translate", str(EXAMPLES / "pod-legacy-vram.yaml"))
    assert code == 0
    pod, template = list(yaml.safe_load_all(out))
    assert pod["kind"] == "Pod" and template["kind"] == "ResourceClaimTemplate"
    name = template["metadata"]["name"]
    assert pod["spec"]["resourceClaims"] == [{"name": "gpudra", "resourceClaimTemplateName": name}]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpudra", "request": "jupyter"}]
    assert "nvidia.com/gpu" not in json.dumps(pod)
    alternatives = template["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"]
    assert alternatives[0]["deviceClassName"] == "mig.nvidia.com" and alternatives[-1]["name"] == "whole"


def test_translate_json_has_objects_templates_and_translations_with_patch_and_warnings() -> None:
    code, out, _ = _run("translate", str(EXAMPLES / "pod-init-sidecar.yaml"), "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["objects", "templates", "translations"]
    (translation,) = data["translations"]
    assert len(data["objects"]) == 1 and len(data["templates"]) == 1 and translation["patch"]
    assert translation["warnings"] == [
        "container metrics sets GPU resources in requests but not in limits; Kubernetes requires limits for "
        "extended resources (gpudra translated it to a DRA claim)"
    ]


def test_translate_exits_1_with_the_policy_message_when_denied() -> None:
    code, out, err = _run("translate", str(EXAMPLES / "pod-mixed.yaml"))
    assert code == 1 and out == ""
    assert err.startswith("denied: GPUClaimPolicy 'guardrails' denied the pod: container cuda asks for GPUs both")


def test_translate_with_a_namespace_applies_its_guardrails() -> None:
    code, _, err = _run(
        "translate", str(EXAMPLES / "pod-ray-train.yaml"), "--namespace-file", str(EXAMPLES / "namespace-team-a.yaml")
    )
    assert code == 1 and "allows at most 4 (label gpudra.io/max-gpus)" in err


def test_translate_reports_unreadable_input_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nspec: [\n")
    code, _, err = _run("translate", str(bad))
    assert code == 2 and err.startswith(f"error: {bad}:") and "invalid YAML" in err
    code, out, err = _run("translate", str(EXAMPLES / "namespace-team-a.yaml"))
    assert code == 0 and "note: " in err and "no Pod object in the file" in err, "an ordinary manifest is no error"
    assert "kind: Namespace" in out
    code, _, err = _run("translate", str(EXAMPLES / "pod-legacy-1gpu.yaml"), "-o", "xml")
    assert code == 2 and "-o must be yaml or json" in err


def test_translate_uses_another_policy_directory(tmp_path: Path) -> None:
    shutil.copy(ROOT / "policies" / "whole-gpu.yaml", tmp_path)
    code, out, _ = _run("translate", str(EXAMPLES / "pod-vllm-tp4.yaml"), "--policies", str(tmp_path), "-o", "json")
    assert code == 0
    claim = json.loads(out)["templates"][0]["spec"]["spec"]
    assert "constraints" not in claim["devices"], "without multi-gpu.yaml there is no topology constraint"


def test_lint_passes_on_the_shipped_policies_and_names_errors_otherwise(tmp_path: Path) -> None:
    code, out, _ = _run("policy", "lint")
    assert code == 0 and out.endswith("6 policies in 6 files, 0 errors\n")
    broken = tmp_path / "broken.yaml"
    text = (
        (ROOT / "policies" / "whole-gpu.yaml")
        .read_text()
        .replace("expression: gpu.legacy", "expression: gpu.legacy &&")
    )
    broken.write_text(text)
    code, out, err = _run("policy", "lint", str(broken))
    assert code == 1 and out == "0 policies in 1 files, 1 errors\n"
    line = text.splitlines().index("    expression: gpu.legacy &&") + 1
    assert (
        err.startswith(f"error: {broken}:{line}:28: spec.matchConditions[0].expression")
        and "expression: gpu.legacy &&" in err
    )


def test_policy_test_runs_the_shipped_tests_and_diffs_failures(tmp_path: Path) -> None:
    code, out, _ = _run("policy", "test")
    assert code == 0 and out.endswith(" passed, 0 failed\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(ROOT / "policies" / "whole-gpu.yaml", tmp_path)
    shutil.copy(ROOT / "policies" / "guardrails.yaml", tmp_path)
    case = (ROOT / "policies" / "tests" / "whole-gpu.yaml").read_text().replace("count: 2}", "count: 3}", 1)
    (tests / "whole-gpu.yaml").write_text(case)
    code, out, _ = _run("policy", "test", str(tmp_path))
    assert code == 1 and out.endswith(" passed, 1 failed\n")
    assert "FAIL" in out and "claim differs:" in out and "-      count: 3" in out and "+      count: 2" in out


def test_explain_shows_the_evaluation_and_json_the_decision() -> None:
    pod, namespace = str(EXAMPLES / "pod-vllm-tp4.yaml"), str(EXAMPLES / "namespace-team-a.yaml")
    code, out, _ = _run("policy", "explain", pod, "--namespace-file", namespace)
    assert code == 0
    assert "multi-gpu            priority 300   builds the claim (enforce)" in out
    assert "whole-gpu            priority 100   matched, shadowed by a higher-priority claim policy" in out
    assert "matchAttribute: gpu.gpudra.io/nvlinkGroup" in out
    assert "matchAttribute: resource.kubernetes.io/pcieRoot" in out
    code, out, _ = _run("policy", "explain", pod, "--namespace-file", namespace, "--json")
    data = json.loads(out)
    assert code == 0 and data["policy"] == "multi-gpu" and data["errors"] == []
    assert data["variables"]["multi-gpu"]["topologyAttribute"] == "gpu.gpudra.io/nvlinkGroup"
    code, out, _ = _run("policy", "explain", str(EXAMPLES / "pod-mixed.yaml"))
    assert code == 1 and "verdict: denied (Invalid)" in out


@pytest.mark.slow
def test_the_shipped_policies_are_installed_with_the_package(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", str(ROOT), "--target", str(target), "--no-deps", "-q"],
        check=True,
        capture_output=True,
    )
    assert sorted(p.name for p in (target / "policyengine" / "policies").glob("*.yaml")) == [
        "guardrails.yaml",
        "mig-single.yaml",
        "multi-gpu.yaml",
        "right-size.yaml",
        "shared-gpu.yaml",
        "whole-gpu.yaml",
    ]
    check = (
        "import policyengine as p, policyengine.testing as t;"
        "s = p.load_policies(); assert not s.errors, s.errors; print(p.__file__, len(s.policies),"
        " all(r.passed for r in t.run_tests()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env={"PYTHONPATH": str(target)}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(target / "policyengine" / "__init__.py"), "6", "True"]
