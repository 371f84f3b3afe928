"""The OLM bundle (bundle/) under the operator-framework's own validators (olm-validate, built from
github.com/operator-framework/api by tests/controlplane/build.sh), and what its CSV declares."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane import packaging_tools
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "bundle"
CSV = BUNDLE / "manifests" / "gpudra.clusterserviceversion.yaml"


def validate(bundle: Path) -> tuple[int, list[dict[str, Any]], str]:
    out = subprocess.run(
        [str(packaging_tools.require("olm-validate")), str(bundle)], capture_output=True, text=True, check=False
    )
    return out.returncode, [json.loads(line) for line in out.stdout.splitlines() if line.strip()], out.stderr


def _base(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / "manifests" / "base" / name).read_text()) if d]


def test_the_bundle_passes_the_operator_framework_validators() -> None:
    rc, findings, stderr = validate(BUNDLE)
    errors = [f for f in findings if f["level"] == "error"]
    assert rc == 0 and not errors, f"{errors}\n{stderr}"
    # Warnings are allowed by the validators, but none is expected of this bundle.
    assert not findings, findings


def test_the_validators_refuse_a_bundle_that_lost_its_owned_crd(tmp_path: Path) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(BUNDLE, copy)
    (copy / "manifests" / "gpudra.io_gpusizingrecommendations.yaml").unlink()
    rc, findings, stderr = validate(copy)
    assert rc == 1, stderr
    assert any("owned CRD" in f["detail"] and "GPUSizingRecommendation" in f["detail"] for f in findings), findings


def test_the_validators_refuse_an_example_of_an_api_the_bundle_does_not_provide(tmp_path: Path) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(BUNDLE, copy)
    csv = yaml.safe_load((copy / "manifests" / CSV.name).read_text())
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    examples[0]["kind"] = "GPUSizingPolicy"
    csv["metadata"]["annotations"]["alm-examples"] = json.dumps(examples)
    (copy / "manifests" / CSV.name).write_text(yaml.safe_dump(csv))
    rc, findings, stderr = validate(copy)
    assert rc == 1, stderr
    assert any("GPUSizingPolicy" in f["detail"] for f in findings if f["level"] == "error"), findings


def test_the_csv_declares_the_deployment_rbac_both_webhooks_and_the_owned_crd() -> None:
    csv = yaml.safe_load(CSV.read_text())
    spec = csv["spec"]
    (deployment,) = spec["install"]["spec"]["deployments"]
    (base_deployment,) = _base("deployment.yaml")
    assert deployment["name"] == base_deployment["metadata"]["name"]
    assert deployment["spec"]["replicas"] >= 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--cert=/apiserver.local.config/certificates/apiserver.crt" in container["args"]
    assert "--key=/apiserver.local.config/certificates/apiserver.key" in container["args"]
    assert "runAsUser" not in deployment["spec"]["template"]["spec"]["securityContext"]
    # The replicas' required spread over nodes is the base's (a drain or one node's loss never takes both).
    pod = deployment["spec"]["template"]["spec"]
    assert pod["topologySpreadConstraints"] == base_deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {"topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}.items() <= next(
        c for c in pod["topologySpreadConstraints"] if c["topologyKey"] == "kubernetes.io/hostname"
    ).items()
    # What a registry+v1 bundle cannot carry is named, with what to apply instead.
    for missing in ("ValidatingAdmissionPolicy", "admission-policies.yaml", "namespace-quota.yaml", "gpudra doctor"):
        assert missing in spec["description"], missing
    webhook_role = next(r for r in _base("rbac.yaml") if r["kind"] == "ClusterRole")
    assert spec["install"]["spec"]["clusterPermissions"] == [
        {"serviceAccountName": "gpudra-webhook", "rules": webhook_role["rules"]}
    ]
    hooks = {h["type"]: h for h in spec["webhookdefinitions"]}
    assert set(hooks) == {"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"}
    for kind, path, name in (
        ("MutatingAdmissionWebhook", "/mutate", "mutatingwebhook.yaml"),
        ("ValidatingAdmissionWebhook", "/validate", "validatingwebhook.yaml"),
    ):
        (base_hook,) = _base(name)[0]["webhooks"]
        hook = hooks[kind]
        assert hook["deploymentName"] == deployment["name"] and hook["webhookPath"] == path
        assert hook["targetPort"] == 8443 and hook["generateName"] == base_hook["name"]
        for key in ("rules", "failurePolicy", "sideEffects", "timeoutSeconds", "admissionReviewVersions"):
            assert hook[key] == base_hook[key], key
    (crd,) = _base("crd-gpusizingrecommendation.yaml")
    (owned,) = spec["customresourcedefinitions"]["owned"]
    assert (owned["name"], owned["kind"], owned["version"]) == (
        crd["metadata"]["name"],
        crd["spec"]["names"]["kind"],
        crd["spec"]["versions"][0]["name"],
    )
    modes = {m["type"]: m["supported"] for m in spec["installModes"]}
    assert modes == {"OwnNamespace": False, "SingleNamespace": True, "MultiNamespace": True, "AllNamespaces": False}
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    assert [e["kind"] for e in examples] == ["GPUSizingRecommendation"]


def test_the_bundle_metadata_names_the_package_and_channel() -> None:
    annotations = yaml.safe_load((BUNDLE / "metadata" / "annotations.yaml").read_text())["annotations"]
    assert annotations["operators.operatorframework.io.bundle.mediatype.v1"] == "registry+v1"
    assert annotations["operators.operatorframework.io.bundle.manifests.v1"] == "manifests/"
    assert annotations["operators.operatorframework.io.bundle.package.v1"] == "gpudra"
    dockerfile = (BUNDLE / "bundle.Dockerfile").read_text()
    for key, value in annotations.items():
        assert f"LABEL {key}={value}" in dockerfile, key


@pytest.mark.e2e
def test_what_olm_would_create_passes_a_server_side_dry_run(control_plane: ControlPlane, kube: Kube) -> None:
    """The CSV's Deployment and ClusterRole as OLM creates them, and the bundle's other manifests, on the real API
    server (the validators do not check a Deployment's pod spec)."""
    csv = yaml.safe_load(CSV.read_text())
    install = csv["spec"]["install"]["spec"]
    namespace = kube.create_namespace("olm")
    try:
        objects: list[dict[str, Any]] = [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "gpudra-webhook", "namespace": namespace},
            }
        ]
        for deployment in install["deployments"]:
            objects.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": deployment["name"], "namespace": namespace, "labels": deployment["label"]},
                    "spec": deployment["spec"],
                }
            )
        for i, permission in enumerate(install["clusterPermissions"]):
            objects.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": f"gpudra-olm-dry-run-{i}"},
                    "rules": permission["rules"],
                }
            )
        for path in sorted((BUNDLE / "manifests").glob("*.yaml")):
            doc = yaml.safe_load(path.read_text())
            if doc["kind"] in ("ClusterServiceVersion", "PrometheusRule"):
                continue  # OLM's and the Prometheus Operator's APIs are not served here
            if doc["kind"] != "CustomResourceDefinition":
                doc["metadata"]["namespace"] = namespace
            objects.append(doc)
        out = control_plane.kubectl(
            "apply",
            "--server-side",
            "--dry-run=server",
            "--field-manager=gpudra-olm-test",
            "-f",
            "-",
            input=yaml.safe_dump_all(objects),
            check=False,
        )
        assert out.returncode == 0, out.stderr
        applied = [line for line in out.stdout.splitlines() if "serverside-applied (server dry run)" in line]
        assert len(applied) == len(objects), out.stdout
    finally:
        kube.delete("Namespace", namespace)
