"""`gpudra translate -R DIR`: a GitOps tree rewritten in place or into `--out`, kustomize-friendly (issue 11)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.commands.translate import translate_directory
from manifest_translation.tree import add_resource

FIXTURES = Path(__file__).parent / "fixtures" / "workloads"

KUSTOMIZATION = """\
# team-a's inference apps
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: llm
resources:
  - deployment-vllm.yaml   # the server
  - service.yaml
commonLabels:
  team: a
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: vllm   # keep this comment
spec:
  selector: {app.kubernetes.io/name: vllm}
  ports: [{port: 80, targetPort: 8000}]
"""

README = "# not a manifest\nplain text stays as it is\n"


def _tree(root: Path) -> Path:
    apps = root / "apps" / "vllm"
    apps.mkdir(parents=True)
    shutil.copy(FIXTURES / "deployment-vllm.yaml", apps)
    (apps / "service.yaml").write_text(SERVICE)
    (apps / "kustomization.yaml").write_text(KUSTOMIZATION)
    (apps / "README.md").write_text(README)
    ray = root / "ray"
    ray.mkdir()
    shutil.copy(FIXTURES / "raycluster.yaml", ray)
    (root / ".git").mkdir()
    (root / ".git" / "config.yaml").write_text("kind: Pod\nspec: [\n")  # hidden directories are not scanned
    return root


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _objects(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def test_in_place_rewrites_the_workloads_writes_claims_beside_them_and_updates_the_kustomization(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path / "repo")
    before = _digests(root)
    outcome = translate_directory(root)
    assert outcome.code == 0, outcome.stderr
    after = _digests(root)
    untouched = ["apps/vllm/service.yaml", "apps/vllm/README.md", ".git/config.yaml"]
    assert {k: after[k] for k in untouched} == {k: before[k] for k in untouched}, "byte-identical"
    assert set(after) - set(before) == {
        "apps/vllm/deployment-vllm.gpudra-claims.yaml",
        "ray/raycluster.gpudra-claims.yaml",
    }
    deployment = root / "apps/vllm/deployment-vllm.yaml"
    assert deployment.read_text().startswith("# vLLM OpenAI-compatible server"), "leading comments kept"
    (workload,) = _objects(deployment)
    name = workload["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    (claim,) = _objects(root / "apps/vllm/deployment-vllm.gpudra-claims.yaml")
    assert claim["kind"] == "ResourceClaimTemplate" and claim["metadata"]["name"] == name
    kustomization = (root / "apps/vllm/kustomization.yaml").read_text()
    assert kustomization == KUSTOMIZATION.replace(
        "  - deployment-vllm.yaml   # the server\n",
        "  - deployment-vllm.yaml   # the server\n  - deployment-vllm.gpudra-claims.yaml\n",
    ), "one line added after the workload, comments and layout kept"
    ray_claims = _objects(root / "ray/raycluster.gpudra-claims.yaml")
    assert [c["metadata"]["name"].rsplit("-", 1)[0] for c in ray_claims] == [
        "raycluster-gpu-gpu-group",
        "raycluster-gpu-big-gpu-group",
    ]
    assert "files scanned" in outcome.stdout and "translated apps/vllm/deployment-vllm.yaml: Deployment" in (
        outcome.stdout
    )


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    assert translate_directory(root).code == 0
    digests = _digests(root)
    times = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    outcome = translate_directory(root, output="json")
    assert outcome.code == 0, outcome.stderr
    report = json.loads(outcome.stdout)
    assert report["changed"] == [] and report["claim_files"] == [] and report["kustomizations"] == []
    assert report["scanned"] == 5, "three manifests and the two claims files; not README.md or kustomization.yaml"
    assert _digests(root) == digests
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == times, "no file was rewritten"


def test_out_copies_the_whole_tree_and_leaves_the_source_alone(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    before = _digests(root)
    out = tmp_path / "converted"
    outcome = translate_directory(root, out=out)
    assert outcome.code == 0, outcome.stderr
    assert _digests(root) == before
    copied = _digests(out)
    assert copied["apps/vllm/README.md"] == before["apps/vllm/README.md"]
    assert copied["apps/vllm/service.yaml"] == before["apps/vllm/service.yaml"]
    assert copied["apps/vllm/deployment-vllm.yaml"] != before["apps/vllm/deployment-vllm.yaml"]
    assert "apps/vllm/deployment-vllm.gpudra-claims.yaml" in copied
    assert ".git/config.yaml" not in copied, "hidden directories are neither scanned nor copied"
    again = translate_directory(root, out=out)
    assert again.code == 2 and "--out must be a new or empty directory" in again.stderr
    inside = translate_directory(root, out=root / "sub")
    assert inside.code == 2 and "--out must be outside the directory" in inside.stderr


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    before = _digests(root)
    outcome = translate_directory(root, dry_run=True)
    assert outcome.code == 0 and "would translate apps/vllm/deployment-vllm.yaml" in outcome.stdout
    assert "dry run: nothing written" in outcome.stdout
    assert _digests(root) == before


def test_a_multi_document_file_keeps_the_documents_that_did_not_change(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    job = (FIXTURES / "job-vectoradd.yaml").read_text()
    text = SERVICE + "---\n# the batch job\n" + job + "---\n" + SERVICE.replace("vllm", "other")
    (root / "app.yaml").write_text(text)
    assert translate_directory(root).code == 0
    new = (root / "app.yaml").read_text()
    first, second, third = new.split("\n---\n")
    assert first + "\n" == SERVICE and third == SERVICE.replace("vllm", "other"), "verbatim, comments included"
    assert second.startswith("# the batch job\n") and "nvidia.com/gpu" not in second
    assert [d["kind"] for d in _objects(root / "app.yaml")] == ["Service", "Job", "Service"]


def test_a_list_file_keeps_its_wrapper(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    items = [yaml.safe_load((FIXTURES / f).read_text()) for f in ("job-vectoradd.yaml", "statefulset-triton.yaml")]
    (root / "list.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items})
    )
    (root / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "DeploymentList", "items": []}))
    assert translate_directory(root).code == 0
    (listing,) = _objects(root / "list.yaml")
    assert listing["kind"] == "List" and [i["kind"] for i in listing["items"]] == ["Job", "StatefulSet"]
    assert '"nvidia.com/gpu":' not in json.dumps(listing)
    assert len(_objects(root / "list.gpudra-claims.yaml")) == 2


def test_a_json_manifest_is_written_back_as_json(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "job.json").write_text(json.dumps(yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())))
    assert translate_directory(root).code == 0
    job = json.loads((root / "job.json").read_text())
    assert job["spec"]["template"]["spec"]["resourceClaims"][0]["name"] == "gpudra"
    assert (root / "job.gpudra-claims.yaml").is_file()


def test_files_with_errors_are_left_alone_and_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    (root / "broken.yaml").write_text("kind: Job\nspec: [\n")
    rollout = "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: r}\nspec:\n  template:\n"
    rollout += "    spec: {containers: [{name: a, image: a, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
    (root / "rollout.yaml").write_text(rollout)
    outcome = translate_directory(root, output="json")
    assert outcome.code == 2
    report = json.loads(outcome.stdout)
    assert len(report["errors"]) == 1 and sorted(report["changed"]) == [
        "apps/vllm/deployment-vllm.yaml",
        "ray/raycluster.yaml",
    ]
    assert f"error: {root / 'broken.yaml'}:3: invalid YAML" in outcome.stderr
    # a kind gpudra cannot rewrite is a warning: its pods are translated at admission
    assert "warning: " in outcome.stderr and "CloneSet 'r' (apps.kruise.io/v1alpha1): not a kind" in outcome.stderr
    assert "`gpudra serve` translates its pods" in outcome.stderr
    assert (root / "rollout.yaml").read_text() == rollout and not (root / "rollout.gpudra-claims.yaml").exists()


def test_a_denied_workload_is_left_alone_with_exit_1(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    job = yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    job["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    assert limits == {"nvidia.com/gpu": 1}
    text = yaml.safe_dump(job)
    (root / "job.yaml").write_text(text)
    outcome = translate_directory(root)
    assert outcome.code == 1 and "denied: job.yaml: Job default/cuda-vectoradd spec.template:" in outcome.stderr
    assert (root / "job.yaml").read_text() == text


def test_an_existing_claims_file_is_extended_not_duplicated(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(FIXTURES / "pytorchjob.yaml", root)
    assert translate_directory(root).code == 0
    claims = root / "pytorchjob.gpudra-claims.yaml"
    original = (FIXTURES / "pytorchjob.yaml").read_text()
    (root / "pytorchjob.yaml").write_text(original)  # the workload reverted (say, by a merge), its claims kept
    first = claims.read_text()
    assert translate_directory(root).code == 0
    assert claims.read_text() == first, "both templates were there already"
    (root / "pytorchjob.yaml").write_text(original.replace("nvidia.com/gpu: 2", "nvidia.com/gpu: 4"))
    assert translate_directory(root).code == 0
    assert claims.read_text().startswith(first) and len(_objects(claims)) == 3


def test_a_kustomization_elsewhere_is_found_and_flow_style_is_left_to_the_user(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "base" / "jobs").mkdir(parents=True)
    shutil.copy(FIXTURES / "job-vectoradd.yaml", root / "base" / "jobs")
    (root / "base" / "kustomization.yaml").write_text("resources:\n- jobs/job-vectoradd.yaml\n")
    assert translate_directory(root).code == 0
    assert (root / "base" / "kustomization.yaml").read_text() == (
        "resources:\n- jobs/job-vectoradd.yaml\n- jobs/job-vectoradd.gpudra-claims.yaml\n"
    )
    flow = tmp_path / "flow"
    flow.mkdir()
    shutil.copy(FIXTURES / "job-vectoradd.yaml", flow)
    (flow / "kustomization.yaml").write_text("resources: [job-vectoradd.yaml]\n")
    outcome = translate_directory(flow)
    assert outcome.code == 0
    assert "could not add job-vectoradd.gpudra-claims.yaml to resources" in outcome.stderr
    assert (flow / "kustomization.yaml").read_text() == "resources: [job-vectoradd.yaml]\n"


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        ("resources:\n  - a.yaml\n  - b.yaml\n", "a.yaml", "resources:\n  - a.yaml\n  - c.yaml\n  - b.yaml\n"),
        ("resources:\n- 'a.yaml'  # x\nkind: K\n", "a.yaml", "resources:\n- 'a.yaml'  # x\n- c.yaml\nkind: K\n"),
        ("resources:\n- a.yaml", "a.yaml", "resources:\n- a.yaml\n- c.yaml\n"),
        ("resources: [a.yaml]\n", "a.yaml", None),
        ("resources:\n- b.yaml\n", "a.yaml", None),
        ("patches:\n- a.yaml\n", "a.yaml", None),
    ],
)
def test_add_resource_edits_only_the_resources_list(text: str, after: str, expected: str | None) -> None:
    assert add_resource(text, after, "c.yaml") == expected


def test_the_command_line_runs_the_tree_mode(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    result = CliRunner().invoke(app, ["translate", "-R", str(root), "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert "would translate ray/raycluster.yaml: RayCluster ml/raycluster-gpu spec.workerGroupSpecs[0]" in (
        result.stdout
    )
    result = CliRunner().invoke(app, ["translate", "-R", str(root / "ray" / "raycluster.yaml")])
    assert result.exit_code == 2 and "not a directory (-R takes a directory of manifests)" in result.stderr


def test_permissions_of_rewritten_files_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(FIXTURES / "job-vectoradd.yaml", root)
    os.chmod(root / "job-vectoradd.yaml", 0o640)
    assert translate_directory(root).code == 0
    assert (root / "job-vectoradd.yaml").stat().st_mode & 0o777 == 0o640
    assert (root / "job-vectoradd.gpudra-claims.yaml").stat().st_mode & 0o777 == 0o640
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")], "no temporary file left behind"


def test_crlf_streams_keep_their_unchanged_documents(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    service = SERVICE.replace("\n", "\r\n")
    job = (FIXTURES / "job-vectoradd.yaml").read_text().replace("\n", "\r\n")
    (root / "app.yaml").write_bytes((service + "---\r\n" + job).encode())
    assert translate_directory(root).code == 0
    text = (root / "app.yaml").read_bytes().decode()
    assert text.startswith(service + "---\r\n"), "the Service's bytes are kept"
    assert "\n" not in text.replace("\r\n", ""), "the rewritten Job keeps the file's CRLF line ends"
    assert [d["kind"] for d in _objects(root / "app.yaml")] == ["Service", "Job"]


def test_a_symbolic_link_is_reported_not_replaced(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    target = tmp_path / "job.yaml"
    shutil.copy(FIXTURES / "job-vectoradd.yaml", target)
    (root / "job.yaml").symlink_to(target)
    outcome = translate_directory(root)
    assert outcome.code == 2 and "a symbolic link; not read" in outcome.stderr
    assert "translated" not in outcome.stdout, "a refused link is never reported as translated"
    assert (root / "job.yaml").is_symlink() and target.read_text() == (FIXTURES / "job-vectoradd.yaml").read_text()
