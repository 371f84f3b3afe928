"""Shared by the chart, bundle and monitoring tests: render the chart with the built helm, render kustomize, and
compare objects after the differences that are packaging only (labels, Helm's annotations, selector labels)."""

from __future__ import annotations

import copy
import re
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

from tests.controlplane import binaries, packaging_tools
from tests.controlplane.kube import Kube

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "gpudra"
NAMESPACE = "gpudra-system"
# Label keys a chart adds to selectors so two releases never select each other's pods; kustomize has one install.
RELEASE_SELECTOR_KEYS = ("app.kubernetes.io/name", "app.kubernetes.io/instance")
# Annotations that matter to what the objects do (CA injection, serving-certificate Secret).
KEPT_ANNOTATIONS = ("cert-manager.io/inject-ca-from", "service.beta.openshift.io/")

# Kinds kustomize's schema may not know as cluster-scoped (it then gives them the kustomization's namespace).
CLUSTER_SCOPED = ("DeviceClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")

Doc = dict[str, Any]


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([str(packaging_tools.require("helm")), *args], capture_output=True, text=True, check=False)
    if check:
        assert out.returncode == 0, f"helm {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
    return out


def template(
    values: dict[str, Any] | None = None,
    *,
    release: str = "gpudra",
    namespace: str = NAMESPACE,
    extra: tuple[str, ...] = (),
) -> list[Doc]:
    args = ["template", release, str(CHART), "--namespace", namespace, *extra]
    if values:
        args += ["--values", "-"]
    out = subprocess.run(
        [str(packaging_tools.require("helm")), *args],
        input=yaml.safe_dump(values) if values else None,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, f"helm {' '.join(args)} with {values}:\n{out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def kustomize(path: Path) -> list[Doc]:
    kubectl = binaries.require("components")["kubectl"]
    out = subprocess.run([str(kubectl), "kustomize", str(path)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    found = [d for d in by_kind(docs, kind) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def _drop_release_keys(labels: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in labels.items() if k not in RELEASE_SELECTOR_KEYS}


def _normalize_selectors(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("matchLabels", "labels") and isinstance(value, dict):
                out[key] = _drop_release_keys(value)
            elif (
                key == "selector"
                and isinstance(value, dict)
                and "matchLabels" not in value
                and "matchExpressions" not in value
            ):
                out[key] = _drop_release_keys(value)  # a Service's selector is a plain map
            else:
                out[key] = _normalize_selectors(value)
        return out
    if isinstance(node, list):
        return [_normalize_selectors(v) for v in node]
    return node


def _squash_cel(doc: Doc) -> None:
    for hook in doc.get("webhooks", []):
        for condition in hook.get("matchConditions", []):
            condition["expression"] = re.sub(r"\s+", "", condition["expression"])


def normalize(doc: Doc) -> Doc:
    """The object as it behaves: no labels, only the annotations in KEPT_ANNOTATIONS, no release keys in selectors."""
    doc = copy.deepcopy(doc)
    meta = doc["metadata"]
    if doc["kind"] in CLUSTER_SCOPED:
        meta.pop("namespace", None)  # kustomize does not know these kinds are cluster-scoped
    meta.pop("labels", None)
    annotations = {k: v for k, v in (meta.pop("annotations", None) or {}).items() if k.startswith(KEPT_ANNOTATIONS)}
    if annotations:
        meta["annotations"] = annotations
    template_meta = doc.get("spec", {}).get("template", {}).get("metadata", {})
    template_meta.pop("annotations", None)
    _squash_cel(doc)
    normalized: Doc = _normalize_selectors(doc)
    return normalized


def keyed(docs: list[Doc]) -> dict[tuple[str, str], Doc]:
    return {(d["kind"], d["metadata"]["name"]): normalize(d) for d in docs}


# Kinds the chart creates that tests/controlplane/kube.py's table does not list: (API prefix, plural, namespaced).
MORE_KINDS: dict[str, tuple[str, str, bool]] = {
    "Secret": ("/api/v1", "secrets", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "Job": ("/apis/batch/v1", "jobs", True),
}


def _path(kind: str, namespace: str | None, name: str | None = None) -> str:
    prefix, plural, namespaced = MORE_KINDS[kind]
    parts = [prefix, *([f"namespaces/{namespace}"] if namespaced else []), plural, *([name] if name else [])]
    return "/".join(parts)


def get(kube: Kube, kind: str, name: str, namespace: str | None = None) -> Doc:
    if kind not in MORE_KINDS:
        return kube.get(kind, name, namespace)
    found: Doc = kube.request("GET", _path(kind, namespace, name))
    return found


def list_(kube: Kube, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[Doc]:
    if kind not in MORE_KINDS:
        return kube.list(kind, namespace, label_selector)
    path = _path(kind, namespace)
    if label_selector:
        path += f"?labelSelector={urllib.parse.quote(label_selector)}"
    items: list[Doc] = kube.request("GET", path)["items"]
    return items
