"""Tenant isolation renders onto an overlay and passes the real API server's dry run: the opt-in client-auth
component (`gpudra serve --client-ca` with the API server's client CA mounted) and, in the base, the namespace quota
(`gpudra quota` as a CronJob with only the rights it needs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane import binaries
from tests.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _render(tmp_path: Path) -> list[dict[str, Any]]:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    manifests = ROOT / "manifests"
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": "gpudra-system",
        "resources": [os.path.relpath(manifests / "base", overlay)],
        "components": [os.path.relpath(manifests / "components" / c, overlay)
                       for c in ("client-auth",)],
    }))  # fmt: skip
    kubectl = binaries.require("components")["kubectl"]
    out = subprocess.run([str(kubectl), "kustomize", str(overlay)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_the_components_render_and_the_api_server_accepts_them(tmp_path: Path, control_plane: ControlPlane) -> None:
    docs = _render(tmp_path)
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "--client-ca=/etc/gpudra/client-ca/ca.crt" in container["args"]
    assert {"name": "client-ca", "mountPath": "/etc/gpudra/client-ca", "readOnly": True} in container["volumeMounts"]
    assert {"name": "client-ca", "configMap": {"name": "gpudra-apiserver-client-ca"}} in pod["volumes"]
    # The probes stay plain HTTPS GETs: no client certificate is needed for them.
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpudra-namespace-quota"]
    assert {(r["resources"][0], tuple(r["verbs"]), tuple(r.get("resourceNames", ()))) for r in role["rules"]} == {
        ("namespaces", ("list",), ()),
        ("resourcequotas", ("create",), ()),  # held to gpudra-gpu-cap by the gpudra-managed-objects policy
        ("resourcequotas", ("list", "patch", "delete"), ("gpudra-gpu-cap",)),
        ("deviceclasses", ("list",), ()),  # a class that maps a legacy GPU resource is capped too (KEP-5004)
    }
    (cronjob,) = [d for d in docs if d["kind"] == "CronJob" and d["metadata"]["name"] == "gpudra-namespace-quota"]
    job = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == "gpudra-namespace-quota" and job["containers"][0]["args"] == [
        "quota",
        "--in-cluster",
    ]
    control_plane.kubectl("create", "namespace", "gpudra-system", check=False)
    out = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=gpudra-test", "-f", "-",
        input=yaml.safe_dump_all(docs), check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
