"""The Helm chart charts/gpudra with the real helm (helm.sh/helm/v4, built by tests/controlplane/build.sh): lint, the
rendered objects for the Kubernetes and OpenShift variants, the values and their schema, the same objects as the
kustomize overlays (one source of truth), and a server-side dry run on the real API server."""

from __future__ import annotations

import base64
import datetime
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube
from tests.e2e.packaging_helpers import (
    CHART,
    NAMESPACE,
    ROOT,
    Doc,
    by_kind,
    helm,
    keyed,
    kustomize,
    one,
    template,
)

pytestmark = pytest.mark.e2e

VARIANTS: dict[str, dict[str, Any]] = {
    "self-signed": {},
    "cert-manager": {"certManager": {"enabled": True}},
    "openshift": {"openshift": {"enabled": True}},
    "everything": {
        "certManager": {"enabled": True, "issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}},
        "templateCollector": {"enabled": True},
        "recommender": {"enabled": True},
        "namespaceQuota": {"enabled": True},
        "deviceClasses": {"enabled": True},
        "webhook": {"clientAuth": {"enabled": True}},
        "monitoring": {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
            "grafanaDashboard": {"enabled": True},
        },
    },
}


def _values_file(tmp_path: Path, values: dict[str, Any]) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return str(path)


def test_the_packaged_copies_match_their_sources() -> None:
    out = subprocess.run(
        [sys.executable, "scripts/sync_packaging.py", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("variant", VARIANTS)
def test_helm_lint_is_clean(variant: str, tmp_path: Path) -> None:
    out = helm(
        "lint", "--strict", str(CHART), "--namespace", NAMESPACE, "--values", _values_file(tmp_path, VARIANTS[variant])
    )
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout, out.stdout
    assert "[WARNING]" not in out.stdout and "[ERROR]" not in out.stdout, out.stdout


@pytest.mark.parametrize("variant", ["self-signed", "cert-manager", "openshift"])
def test_template_renders_a_highly_available_webhook(variant: str) -> None:
    docs = template(VARIANTS[variant])
    deployment = one(docs, "Deployment", "gpudra-webhook")
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] >= 2
    assert pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    # Required over nodes (never both replicas on one node while another can run one), without blocking a one-node
    # cluster, a surge pod or a drain: a spread that counts only nodes the pod may use.
    (hostname,) = [c for c in pod["topologySpreadConstraints"] if c["topologyKey"] == "kubernetes.io/hostname"]
    assert hostname["whenUnsatisfiable"] == "DoNotSchedule" and hostname["nodeTaintsPolicy"] == "Honor"
    assert (
        hostname["maxSkew"] == 1
        and hostname["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    )
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    service = one(docs, "Service", "gpudra-webhook")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert {r["metadata"]["name"] for r in by_kind(docs, "ClusterRole")} == {
        "gpudra-webhook",
        "gpudra-webhook-cleanup",
        "gpudra-namespace-quota",  # on by default: max-gpus holds as a namespace total after admission
    }
    assert one(docs, "CronJob", "gpudra-namespace-quota")
    # Both admission policies on by default, each bound with Deny.
    for name in ("gpudra-managed-objects", "gpudra-namespace-caps"):
        assert one(docs, "ValidatingAdmissionPolicy", name)["spec"]["failurePolicy"] == "Fail"
        binding = one(docs, "ValidatingAdmissionPolicyBinding", name)["spec"]
        assert binding == {"policyName": name, "validationActions": ["Deny"]}
    assert one(docs, "ServiceAccount", "gpudra-webhook") and one(docs, "ConfigMap", "gpudra-policies")
    mutating, validating = one(docs, "MutatingWebhookConfiguration"), one(docs, "ValidatingWebhookConfiguration")
    for config in (mutating, validating):
        (hook,) = config["webhooks"]
        assert hook["failurePolicy"] == "Fail" and hook["timeoutSeconds"] == 5 and hook["matchConditions"]
        assert hook["clientConfig"]["service"] == {
            "name": "gpudra-webhook",
            "namespace": NAMESPACE,
            "path": "/mutate" if config is mutating else "/validate",
            "port": 443,
        }
        assert hook["namespaceSelector"]["matchExpressions"][0] == {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", NAMESPACE],
        }
        assert "objectSelector" not in hook
    security = pod["securityContext"]
    if variant == "openshift":
        assert "runAsUser" not in security and "runAsGroup" not in security
        assert service["metadata"]["annotations"] == {
            "service.beta.openshift.io/serving-cert-secret-name": "gpudra-webhook-tls"
        }
        assert mutating["metadata"]["annotations"] == {"service.beta.openshift.io/inject-cabundle": "true"}
        assert not by_kind(docs, "Secret") and not by_kind(docs, "Certificate")
    elif variant == "cert-manager":
        assert security["runAsUser"] == 65532
        certificate = one(docs, "Certificate")
        assert certificate["spec"]["secretName"] == "gpudra-webhook-tls"
        assert certificate["spec"]["issuerRef"] == {"name": "gpudra-selfsigned", "kind": "Issuer"}
        assert validating["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"{NAMESPACE}/gpudra-webhook"
        }
        assert not by_kind(docs, "Secret")
    else:
        assert "caBundle" in mutating["webhooks"][0]["clientConfig"]


def test_self_signed_certificates_serve_the_service_name_and_match_the_ca_bundle() -> None:
    docs = template()
    secret = one(docs, "Secret", "gpudra-webhook-tls")
    ca_pem = base64.b64decode(secret["data"]["ca.crt"])
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert base64.b64decode(one(docs, kind)["webhooks"][0]["clientConfig"]["caBundle"]) == ca_pem
    ca = x509.load_pem_x509_certificate(ca_pem)
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert f"gpudra-webhook.{NAMESPACE}.svc" in names
    not_after = int(secret["metadata"]["annotations"]["gpudra.io/not-after"])
    assert abs(not_after - cert.not_valid_after_utc.timestamp()) < 86400
    assert cert.not_valid_after_utc > datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3000)


def test_values_reach_the_webhook_configurations_and_the_pods() -> None:
    conditions = [{"name": "team-gpus", "expression": "object.metadata.namespace.startsWith('team-')"}]
    docs = template(
        {
            "webhook": {
                "failurePolicy": "Ignore",
                "timeoutSeconds": 10,
                "replicas": 3,
                "excludedNamespaces": ["kube-system", "monitoring"],
                "mutatingMatchConditions": conditions,
                "antiAffinity": "required",
            },
            "policies": {"existingConfigMap": "my-policies"},
        },
        namespace="gpu-admission",
    )
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (hook,) = one(docs, kind)["webhooks"]
        assert hook["failurePolicy"] == "Ignore" and hook["timeoutSeconds"] == 10
        assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == [
            "kube-system",
            "monitoring",
            "gpu-admission",
        ]
    assert one(docs, "MutatingWebhookConfiguration")["webhooks"][0]["matchConditions"] == conditions
    assert one(docs, "ValidatingWebhookConfiguration")["webhooks"][0]["matchConditions"][0]["name"] == "asks-for-gpus"
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]["spec"]
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"name": "policies", "configMap": {"name": "my-policies"}} in pod["volumes"]
    assert not [c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-policies")]


def test_the_admission_policies_follow_the_release_and_can_be_left_out() -> None:
    docs = template(release="blue", namespace="gpu-admission")
    policy = one(docs, "ValidatingAdmissionPolicy", "blue-gpudra-managed-objects")
    (condition,) = policy["spec"]["matchConditions"]
    accounts = {
        one(docs, "ServiceAccount", n)["metadata"]["name"]
        for n in ("blue-gpudra-webhook", "blue-gpudra-namespace-quota")
    }
    for account in (*accounts, "blue-gpudra-template-gc"):
        assert f"'system:serviceaccount:gpu-admission:{account}'" in condition["expression"]
    assert "gpudra-system" not in condition["expression"]
    assert one(docs, "ValidatingAdmissionPolicyBinding", "blue-gpudra-namespace-caps")["spec"]["policyName"] == (
        "blue-gpudra-namespace-caps"
    )
    off = template({"admissionPolicies": {"managedObjects": False, "namespaceCaps": False}})
    assert not by_kind(off, "ValidatingAdmissionPolicy") and not by_kind(off, "ValidatingAdmissionPolicyBinding")
    only_caps = template({"admissionPolicies": {"managedObjects": False}})
    assert [p["metadata"]["name"] for p in by_kind(only_caps, "ValidatingAdmissionPolicy")] == ["gpudra-namespace-caps"]


def _notes(tmp_path: Path, values: dict[str, Any]) -> str:
    out = helm("install", "gpudra", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
               "--values", _values_file(tmp_path, values))  # fmt: skip
    return out.stdout.split("NOTES:", 1)[1]


def test_the_notes_say_which_protections_are_on(tmp_path: Path) -> None:
    default = _notes(tmp_path, {})
    assert "client auth: OFF" in default and "admits any source" in default
    assert "managed-by=gpudra:\n    ON" in default and default.count("\n    ON") == 3, default
    peers = [{"ipBlock": {"cidr": "10.0.0.0/28"}}]
    hardened = _notes(tmp_path, {"webhook": {"clientAuth": {"enabled": True}, "networkPolicy": {"from": peers}}})
    assert "client auth: ON" in hardened and "admits only the peers in webhook.networkPolicy.from" in hardened
    off = {"enabled": False}
    bare = _notes(tmp_path, {"admissionPolicies": {"managedObjects": False, "namespaceCaps": False},
                             "namespaceQuota": off, "webhook": {"networkPolicy": off}})  # fmt: skip
    assert bare.count("\n    OFF") == 3 and "NetworkPolicy: OFF" in bare, bare


def test_the_network_policy_admits_only_the_listed_peers_when_given() -> None:
    assert "from" not in one(template(), "NetworkPolicy")["spec"]["ingress"][0]
    peers = [{"ipBlock": {"cidr": "10.0.0.0/28"}}]
    (rule,) = one(template({"webhook": {"networkPolicy": {"from": peers}}}), "NetworkPolicy")["spec"]["ingress"]
    assert rule == {"ports": [{"port": 8443, "protocol": "TCP"}], "from": peers}


def test_a_single_replica_gets_no_disruption_budget_that_would_block_drains() -> None:
    assert not by_kind(template({"webhook": {"replicas": 1}}), "PodDisruptionBudget")
    assert one(template({"webhook": {"replicas": 3}}), "PodDisruptionBudget")["spec"]["minAvailable"] == 1


def test_the_chart_policies_are_the_repository_policies() -> None:
    data = one(template(), "ConfigMap", "gpudra-policies")["data"]
    assert data == {p.name: p.read_text() for p in sorted((ROOT / "policies").glob("*.yaml"))}


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"webhook": {"failurePolicy": "Sometimes"}}, "failurePolicy"),
        ({"webhook": {"timeoutSeconds": 31}}, "timeoutSeconds"),
        ({"webhook": {"replicaz": 2}}, "replicaz"),
        ({"recommender": {"prometheusURL": "prometheus:9090"}}, "prometheusURL"),
    ],
)
def test_the_schema_refuses_bad_values(values: dict[str, Any], field: str, tmp_path: Path) -> None:
    out = helm("template", "gpudra", str(CHART), "--values", _values_file(tmp_path, values), check=False)
    assert out.returncode != 0 and field in out.stderr, out.stderr


def test_the_cleanup_hook_deletes_exactly_the_webhook_configurations() -> None:
    docs = template()
    job = one(docs, "Job", "gpudra-webhook-cleanup")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["kubectl"]
    assert container["args"] == [
        "delete",
        "mutatingwebhookconfiguration/gpudra",
        "validatingwebhookconfiguration/gpudra",
        "--ignore-not-found",
        "--cache-dir=/tmp/kube-cache",
    ]
    role = one(docs, "ClusterRole", "gpudra-webhook-cleanup")
    assert role["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "resourceNames": ["gpudra"],
            "verbs": ["get", "delete"],
        }
    ]
    assert not by_kind(template({"cleanupHook": {"enabled": False}}), "Job")


# One source of truth: the chart, with the values that match an overlay (and its components), renders the same
# objects as kustomize, but for what only one of them has: the Namespace (helm install --create-namespace), the
# chart's cleanup hook, and the chart's generated Secret.
OVERLAYS: dict[str, tuple[str, list[str], dict[str, Any]]] = {
    "kubernetes": ("overlays/kubernetes", [], {"certManager": {"enabled": True}}),
    "openshift": ("overlays/openshift", [], {"openshift": {"enabled": True}}),
    "kubernetes+components": (
        "overlays/kubernetes",
        ["recommender", "client-auth"],
        {
            "certManager": {"enabled": True},
            "recommender": {"enabled": True},
            "namespaceQuota": {"enabled": True},
            "webhook": {"clientAuth": {"enabled": True}},
        },
    ),
}
CHART_ONLY = {"gpudra-webhook-cleanup"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_chart_renders_what_kustomize_renders(overlay: str, tmp_path: Path) -> None:
    path, components, values = OVERLAYS[overlay]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        # The components' objects carry no namespace of their own (base sets it only on base's objects).
        "namespace": NAMESPACE,
        # kustomize takes only relative paths to other kustomizations.
        "resources": [os.path.relpath(ROOT / "manifests" / path, tmp_path)],
        "components": [os.path.relpath(ROOT / "manifests" / "components" / c, tmp_path) for c in components],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    expected = {k: v for k, v in keyed(kustomize(tmp_path)).items() if k[0] != "Namespace"}
    chart_values = {"templateCollector": {"enabled": True}, "deviceClasses": {"enabled": True}, **values}
    rendered = {k: v for k, v in keyed(template(chart_values)).items() if k[1] not in CHART_ONLY}
    assert sorted(rendered) == sorted(expected)
    for key, doc in expected.items():
        assert rendered[key] == doc, f"{key}: chart and kustomize differ"


def test_monitoring_objects_come_from_the_same_rules_and_dashboard() -> None:
    docs = template(VARIANTS["everything"])
    rule = one(docs, "PrometheusRule")
    source = yaml.safe_load((ROOT / "manifests" / "monitoring" / "gpudra.rules.yaml").read_text())
    assert rule["spec"]["groups"] == source["groups"]
    kustomized = kustomize(ROOT / "manifests" / "monitoring")
    assert one(kustomized, "PrometheusRule")["spec"] == rule["spec"]
    dashboard = (ROOT / "manifests" / "monitoring" / "gpudra-dashboard.json").read_text()
    assert one(docs, "ConfigMap", "gpudra-grafana-dashboard")["data"]["gpudra-dashboard.json"] == dashboard
    assert one(kustomized, "ConfigMap", "gpudra-grafana-dashboard")["data"]["gpudra-dashboard.json"] == dashboard
    monitor = one(docs, "ServiceMonitor")
    service = one(docs, "Service", "gpudra-webhook")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert (
        one(docs, "PodMonitor")["spec"]["selector"]["matchLabels"]
        == one(docs, "Deployment", "gpudra-recommender")["spec"]["selector"]["matchLabels"]
    )


def _crd(group: str, kind: str, plural: str, version: str) -> Doc:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


# Just enough of cert-manager's and the Prometheus Operator's APIs for the dry run (the real CRDs come with them).
FOREIGN_CRDS = [
    _crd("cert-manager.io", "Certificate", "certificates", "v1"),
    _crd("cert-manager.io", "Issuer", "issuers", "v1"),
    _crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors", "v1"),
    _crd("monitoring.coreos.com", "PodMonitor", "podmonitors", "v1"),
    _crd("monitoring.coreos.com", "PrometheusRule", "prometheusrules", "v1"),
]


@pytest.mark.parametrize("variant", ["self-signed", "openshift", "everything"])
def test_the_rendered_chart_passes_a_server_side_dry_run(variant: str, control_plane: ControlPlane, kube: Kube) -> None:
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(FOREIGN_CRDS))
    control_plane.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{c['metadata']['name']}" for c in FOREIGN_CRDS]
    )
    namespace = kube.create_namespace("helm")
    try:
        docs = template(VARIANTS[variant], namespace=namespace)
        out = control_plane.kubectl(
            "apply",
            "--server-side",
            "--dry-run=server",
            "--field-manager=gpudra-helm-test",
            "-f",
            "-",
            input=yaml.safe_dump_all(docs),
            check=False,
        )
        assert out.returncode == 0, f"{variant}: {out.stderr}"
        applied = [line for line in out.stdout.splitlines() if "serverside-applied (server dry run)" in line]
        assert len(applied) == len(docs), out.stdout
    finally:
        kube.delete("Namespace", namespace)
