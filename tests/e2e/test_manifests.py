"""The install manifests: every overlay renders with `kubectl kustomize`, meets the deployment rules, and is
accepted by the real API server in a server-side dry-run apply."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane import binaries
from tests.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = ["base", "overlays/kubernetes", "overlays/openshift"]

# Just enough of cert-manager's API for a dry run of the kubernetes overlay (the real CRDs come with cert-manager).
CERT_MANAGER_CRDS = [
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }
    for plural, kind in (("certificates", "Certificate"), ("issuers", "Issuer"))
]


def render(overlay: str) -> list[dict[str, Any]]:
    kubectl = binaries.require("components")["kubectl"]
    out = subprocess.run(
        [str(kubectl), "kustomize", str(ROOT / "manifests" / overlay)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_with_the_deployment_rules(overlay: str) -> None:
    docs = render(overlay)
    (deployment,) = by_kind(docs, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] >= 2 and "podAntiAffinity" in spec["affinity"]
    # Never both replicas on one node while another schedulable node is there; a spread (not required anti-affinity)
    # so a one-node cluster, a rolling update's surge pod (maxUnavailable 0) and a drain still schedule.
    (hostname,) = [c for c in spec["topologySpreadConstraints"] if c["topologyKey"] == "kubernetes.io/hostname"]
    assert hostname["whenUnsatisfiable"] == "DoNotSchedule" and hostname["nodeTaintsPolicy"] == "Honor"
    assert hostname["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    (container,) = spec["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"] and sc["capabilities"]["drop"] == ["ALL"]
    assert (
        spec["securityContext"]["runAsNonRoot"]
        and spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    )
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert by_kind(docs, "PodDisruptionBudget") and by_kind(docs, "Service") and by_kind(docs, "ConfigMap")
    (mutating,) = by_kind(docs, "MutatingWebhookConfiguration")
    hook = mutating["webhooks"][0]
    assert hook["sideEffects"] == "NoneOnDryRun" and hook["reinvocationPolicy"] == "IfNeeded"
    assert hook["failurePolicy"] == "Fail" and hook["timeoutSeconds"] <= 10 and hook["matchConditions"]
    excluded = hook["namespaceSelector"]["matchExpressions"][0]["values"]
    assert "kube-system" in excluded and "gpudra-system" in excluded
    (validating,) = by_kind(docs, "ValidatingWebhookConfiguration")
    for config in (mutating, validating):
        # A pod's creator sets its labels: an objectSelector opt-out would let anyone skip the guardrails.
        assert all("objectSelector" not in h for h in config["webhooks"])
    (netpol,) = by_kind(docs, "NetworkPolicy")
    assert netpol["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert netpol["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert [p["port"] for rule in netpol["spec"]["ingress"] for p in rule["ports"]] == [8443]
    assert {str(e["name"]) for e in container["env"]} >= {"POD_NAMESPACE"}
    roles = {r["metadata"]["name"]: r for r in by_kind(docs, "ClusterRole")}
    assert set(roles) == {"gpudra-webhook", "gpudra-template-gc", "gpudra-namespace-quota"}

    def verbs(role: dict[str, Any]) -> set[tuple[str, tuple[str, ...]]]:
        return {(resource, tuple(r["verbs"])) for r in role["rules"] for resource in r["resources"]}

    assert verbs(roles["gpudra-webhook"]) == {
        ("resourceclaimtemplates", ("create", "get", "patch")),
        ("resourceclaims", ("get",)),
        ("namespaces", ("get",)),
        ("gpusizingrecommendations", ("list", "watch")),  # the sizing cache (webhook/sizing_cache.py)
        ("deviceclasses", ("list", "watch")),  # KEP-5004's mapping (kubeapi/deviceclasses.py)
        ("resourceslices", ("list", "watch")),  # the cluster's device shapes (kubeapi/deviceshapes.py)
        ("pods", ("list",)),  # the review-source check (kubeapi/pods.py, webhook/review_sources.py)
    }
    assert verbs(roles["gpudra-template-gc"]) == {("resourceclaimtemplates", ("list", "delete")), ("pods", ("list",))}
    # The quota job may read, patch and delete only its own quota by name; a create cannot be named in RBAC, so the
    # admission policy holds it (below).
    assert roles["gpudra-namespace-quota"]["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["resourcequotas"], "resourceNames": ["gpudra-gpu-cap"],
         "verbs": ["list", "patch", "delete"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ["list"]},
    ]  # fmt: skip
    _assert_writes_are_held_to_managed_objects(docs)
    cronjobs = {c["metadata"]["name"]: c for c in by_kind(docs, "CronJob")}
    assert set(cronjobs) == {"gpudra-template-gc", "gpudra-namespace-quota"}  # the quota: on by default
    quota_pod = cronjobs["gpudra-namespace-quota"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert quota_pod["serviceAccountName"] == "gpudra-namespace-quota"
    assert quota_pod["containers"][0]["args"] == ["quota", "--in-cluster"]
    cronjob = cronjobs["gpudra-template-gc"]
    job_pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert job_pod["serviceAccountName"] == "gpudra-template-gc" and cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    (gc_container,) = job_pod["containers"]
    assert gc_container["args"][0] == "gc" and gc_container["securityContext"]["readOnlyRootFilesystem"]
    assert job_pod["securityContext"]["runAsNonRoot"]
    if overlay == "overlays/openshift":
        assert "runAsUser" not in spec["securityContext"]
        assert "runAsUser" not in job_pod["securityContext"]
        assert "runAsUser" not in quota_pod["securityContext"]
        assert mutating["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"] == "true"
        (service,) = by_kind(docs, "Service")
        assert service["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
    if overlay == "overlays/kubernetes":
        assert by_kind(docs, "Certificate") and mutating["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    if overlay != "base":
        assert {d["metadata"]["name"] for d in by_kind(docs, "DeviceClass")} == {"gpu.nvidia.com", "mig.nvidia.com"}


WRITES = {"create", "update", "patch", "delete", "deletecollection", "*"}


def _assert_writes_are_held_to_managed_objects(docs: list[dict[str, Any]]) -> None:
    """Every write gpudra's ServiceAccounts get on templates or quotas is either named (resourceNames) or held by the
    gpudra-managed-objects admission policy to objects carrying gpudra's label, for exactly those accounts."""
    accounts = {f"system:serviceaccount:gpudra-system:{a['metadata']['name']}" for a in by_kind(docs, "ServiceAccount")}
    policies = {p["metadata"]["name"]: p for p in by_kind(docs, "ValidatingAdmissionPolicy")}
    bindings = {b["metadata"]["name"]: b for b in by_kind(docs, "ValidatingAdmissionPolicyBinding")}
    assert set(policies) == set(bindings) == {"gpudra-managed-objects", "gpudra-namespace-caps"}
    for name, binding in bindings.items():
        assert binding["spec"] == {"policyName": name, "validationActions": ["Deny"]}
        assert policies[name]["spec"]["failurePolicy"] == "Fail"
    managed = policies["gpudra-managed-objects"]["spec"]
    (condition,) = managed["matchConditions"]
    named = {a for a in accounts if f"'{a}'" in condition["expression"]}
    assert named == accounts - {"system:serviceaccount:gpudra-system:gpudra-recommender"}
    held = {(r["apiGroups"][0], resource) for r in managed["matchConstraints"]["resourceRules"]
            for resource in r["resources"] if set(r["operations"]) == {"CREATE", "UPDATE", "DELETE"}}  # fmt: skip
    assert held == {("resource.k8s.io", "resourceclaimtemplates"), ("", "resourcequotas")}
    for role in by_kind(docs, "ClusterRole"):
        for rule in role["rules"]:
            for resource in rule["resources"]:
                if resource in ("resourceclaimtemplates", "resourcequotas") and WRITES & set(rule["verbs"]):
                    assert rule.get("resourceNames") or (rule["apiGroups"][0], resource) in held, (role, rule)


def test_every_overlay_passes_a_server_side_dry_run(control_plane: ControlPlane) -> None:
    setup = [*CERT_MANAGER_CRDS, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpudra-system"}}]
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(setup))
    control_plane.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        *[f"crd/{crd['metadata']['name']}" for crd in CERT_MANAGER_CRDS],
    )
    for overlay in OVERLAYS:
        manifest = yaml.safe_dump_all(render(overlay))
        out = control_plane.kubectl(
            "apply",
            "--server-side",
            "--dry-run=server",
            "--field-manager=gpudra-test",
            "-f",
            "-",
            input=manifest,
            check=False,
        )
        assert out.returncode == 0, f"{overlay}: {out.stderr}"
        assert "serverside-applied (server dry run)" in out.stdout
