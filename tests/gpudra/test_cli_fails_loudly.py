"""The CLI fails loudly (issue 40, point 5): a policy set that cannot translate is exit 2, `-o json` has one shape,
`--version`, the renamed `--namespace-file` with its deprecated alias, and the exit codes of the README's table."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra import __version__
from gpudra.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
POD = EXAMPLES / "pod-legacy-1gpu.yaml"
NAMESPACE = EXAMPLES / "namespace-team-a.yaml"
runner = CliRunner()

SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"ports": [{"port": 80}]},
}
NO_CLAIM_POLICY = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata:
  name: checks-only
spec:
  matchConditions:
  - name: asks-for-gpus
    expression: gpu.legacy
  validations:
  - expression: "true"
    message: never denies
"""


def _run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _pod(name: str) -> dict[str, Any]:
    limits = {"limits": {"nvidia.com/gpu": 1}}
    container = {"name": "c", "image": "cuda", "resources": limits}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


@pytest.mark.parametrize("recursive", [False, True])
def test_a_missing_policy_path_is_exit_2_naming_it(tmp_path: Path, recursive: bool) -> None:
    missing = tmp_path / "no-such-policies"
    target = EXAMPLES if recursive else POD
    code, out, err = _run("translate", target, "--policies", missing, *(["-R", "--dry-run"] if recursive else []))
    assert (code, out) == (2, "")
    assert err == f"error: --policies {missing}: no such file or directory\n"


def test_an_empty_policy_directory_is_exit_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("not a policy\n")
    code, out, err = _run("translate", POD, "--policies", tmp_path)
    assert (code, out) == (2, "")
    assert err == f"error: --policies {tmp_path}: no policy file (*.yaml, *.yml) in the directory\n"
    code, _, err = _run("policy", "explain", POD, "--policies", tmp_path)
    assert code == 2 and str(tmp_path) in err


def test_a_policy_set_without_a_claim_or_with_a_broken_file_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "checks.yaml").write_text(NO_CLAIM_POLICY)
    code, out, err = _run("translate", POD, "--policies", tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: --policies {tmp_path}: no policy has a claim, so no pod is ever translated")
    shutil.copy(ROOT / "policies" / "whole-gpu.yaml", tmp_path / "whole-gpu.yaml")
    assert _run("translate", POD, "--policies", tmp_path)[0] == 0
    (tmp_path / "broken.yaml").write_text("apiVersion: gpudra.io/v1alpha1\nkind: GPUClaimPolicy\nspec: [\n")
    code, out, err = _run("translate", POD, "--policies", tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: --policies {tmp_path}: 1 policy error(s):\nerror: {tmp_path / 'broken.yaml'}")


def test_json_is_one_shape_whatever_the_file_holds(tmp_path: Path) -> None:
    """One Pod, a Service and a Pod, two Pods, or nothing to translate: always objects, templates, translations."""
    files: dict[str, list[dict[str, Any]]] = {
        "one-pod": [_pod("p")],
        "service-and-pod": [SERVICE, _pod("p")],
        "two-pods": [_pod("p"), _pod("q")],
        "service-only": [SERVICE],
    }
    for name, objects in files.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        code, out, _ = _run("translate", path, "-o", "json")
        assert code == 0, name
        data = json.loads(out)
        assert list(data) == ["objects", "templates", "translations"], name
        assert [o["kind"] for o in data["objects"]] == [o["kind"] for o in objects], name  # the Service is kept
        pods = [o for o in objects if o["kind"] == "Pod"]
        assert [t["name"] for t in data["translations"]] == [p["metadata"]["name"] for p in pods], name
        assert [t["kind"] for t in data["templates"]] == ["ResourceClaimTemplate"] * len(pods), name  # one per pod


def test_version_is_the_distributions() -> None:
    code, out, _ = _run("--version")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (code, out) == (0, f"gpudra {__version__}\n") and __version__ == project["version"]


@pytest.mark.parametrize("command", [["translate"], ["policy", "explain"]])
def test_namespace_file_is_the_option_and_namespace_a_deprecated_alias(command: list[str]) -> None:
    pod = EXAMPLES / "pod-ray-train.yaml"  # 8 GPUs: team-a's gpudra.io/max-gpus of 4 denies it
    code, new_out, new_err = _run(*command, pod, "--namespace-file", NAMESPACE)
    assert code == 1 and "allows at most 4 (label gpudra.io/max-gpus)" in new_out + new_err
    assert "deprecated" not in new_err
    code, old_out, old_err = _run(*command, pod, "--namespace", NAMESPACE)
    assert code == 1 and old_out == new_out
    assert old_err == "warning: --namespace is deprecated and will be removed: use --namespace-file\n" + new_err
    code, _, err = _run(*command, pod, "--namespace", NAMESPACE, "--namespace-file", NAMESPACE)
    assert code == 2 and "--namespace is the deprecated spelling of --namespace-file" in err
    help_text = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).stdout
    assert "--namespace-file" in help_text and not re.search(r"--namespace(?![-\w])", help_text)


def test_the_readme_table_gives_the_exit_codes_the_commands_use() -> None:
    """The codes this issue added or moved, as the README's command table states them."""
    readme = (ROOT / "README.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in readme.splitlines() if line.startswith("| `gpudra ")}
    translate = next(row for key, row in rows.items() if key.startswith("`gpudra translate FILE"))
    assert "2 for unreadable input or a policy set that cannot translate" in translate
    assert '`{"objects", "templates", "translations"}`' in translate
    inventory = next(row for key, row in rows.items() if key.startswith("`gpudra inventory"))
    assert "2 on bad input" in inventory and "ambiguous" in inventory
    simulate = next(row for key, row in rows.items() if key.startswith("`gpudra simulate"))
    assert "pip install 'gpudra[report]'" in simulate
    assert "`gpudra --version`" in readme
