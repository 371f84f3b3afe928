"""`gpudra translate -R` output on the real components: `kubectl kustomize` builds the rewritten tree, the API server
accepts every workload and template, and the resourceclaim controller makes a claim from a translated Job's template.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from gpudra.commands.translate import translate_directory
from tests.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).parent / "fixtures" / "workloads"
BUILT_IN = [
    "deployment-vllm.yaml",
    "statefulset-triton.yaml",
    "daemonset-gpu-burn.yaml",
    "replicaset-embeddings.yaml",
    "job-vectoradd.yaml",
    "cronjob-batch-inference.yaml",
]


def test_a_translated_kustomize_tree_builds_and_the_api_server_takes_it(
    control_plane: ControlPlane, k8s_namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "app"
    root.mkdir()
    for name in BUILT_IN:
        shutil.copy(FIXTURES / name, root)
    listing = "".join(f"  - {name}\n" for name in BUILT_IN)
    (root / "kustomization.yaml").write_text(f"namespace: {k8s_namespace}\nresources:\n{listing}")
    outcome = translate_directory(root)
    assert outcome.code == 0, outcome.stderr

    built = control_plane.kubectl("kustomize", str(root), check=False)
    assert built.returncode == 0, built.stderr
    objects = [d for d in yaml.safe_load_all(built.stdout) if d]
    templates = {o["metadata"]["name"] for o in objects if o["kind"] == "ResourceClaimTemplate"}
    assert len(templates) == len(BUILT_IN), "one template per workload, every claims file listed"
    assert all(o["metadata"]["namespace"] == k8s_namespace for o in objects)

    applied = control_plane.kubectl(
        "apply", "--server-side", "--field-manager=gpudra-test", "-f", "-", input=built.stdout
    )
    assert applied.returncode == 0, applied.stderr

    deadline = time.monotonic() + 60
    claims: list[dict[str, object]] = []
    while time.monotonic() < deadline and not claims:
        listed = control_plane.kubectl("get", "resourceclaims", "-n", k8s_namespace, "-o", "json")
        claims = json.loads(listed.stdout)["items"]
        time.sleep(0.5)
    assert claims, "the resourceclaim controller made no claim from a translated template"
    made_from = {c["metadata"]["annotations"].get("resource.kubernetes.io/pod-claim-name") for c in claims}
    assert made_from == {"gpudra"}
