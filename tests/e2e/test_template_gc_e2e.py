"""Template collection against the real API server: gpudra's templates that no pod names go, the ones a pod names
or the webhook reuses meanwhile stay, and a collected template is created again when a pod needs it."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from housekeeping import MANAGED_SELECTOR, collect
from kubeapi import LAST_USED_ANNOTATION, KubeSideEffects, KubeTemplateStore, api_client
from policyengine import load_policies
from policyengine.translate import translate
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _translated(example: str, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = yaml.safe_load((ROOT / "examples" / example).read_text())
    pod["metadata"]["namespace"] = namespace
    result = translate(pod, load_policies().evaluate(pod))
    (template,) = result.templates
    return result.pod, template


def _templates(kube: Kube, namespace: str) -> set[str]:
    return {t["metadata"]["name"] for t in kube.list("ResourceClaimTemplate", namespace)}


def test_unused_templates_go_and_used_ones_stay(control_plane: ControlPlane, kube: Kube, k8s_namespace: str) -> None:
    client = api_client(str(control_plane.kubeconfig))
    writer = KubeSideEffects(client, timeout=10)
    store = KubeTemplateStore(client, timeout=10)
    used_pod, used = _translated("pod-legacy-1gpu.yaml", k8s_namespace)
    _, unused = _translated("pod-legacy-vram.yaml", k8s_namespace)
    assert writer.ensure_template(k8s_namespace, used).created
    assert writer.ensure_template(k8s_namespace, unused).created
    kube.create(used_pod)  # no node runs it: what counts is that it names the template
    names = {used["metadata"]["name"], unused["metadata"]["name"]}
    assert _templates(kube, k8s_namespace) >= names

    # Only gpudra's templates are listed; another owner's template in the namespace is never touched.
    foreign = {**unused, "metadata": {"name": "not-gpudras", "namespace": k8s_namespace}}
    kube.create(foreign, k8s_namespace)

    def gc_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gpudra", "gc", "--kubeconfig", str(control_plane.kubeconfig), *args],
            capture_output=True, text=True, cwd=ROOT, check=False, timeout=120,
        )  # fmt: skip

    # An idle bound shorter than the webhook's stamp resolution could delete a template just handed to a pod.
    short = gc_cli("--min-idle", "30", "--dry-run")
    assert short.returncode == 2 and "--min-idle" in short.stderr and "at least 90" in short.stderr, short.stderr
    dry = gc_cli("--min-idle", "90", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dryRun"] and not any(ref.startswith(f"{k8s_namespace}/") for ref in report["deleted"])
    assert _templates(kube, k8s_namespace) >= names | {"not-gpudras"}

    # An hour later (the pass's clock moved on, not the test's) the unused one goes, the used one stays.
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    report_obj = collect(store, min_idle=dt.timedelta(minutes=10), now=lambda: later)
    assert f"{k8s_namespace}/{unused['metadata']['name']}" in report_obj.deleted
    assert f"{k8s_namespace}/{used['metadata']['name']}" not in report_obj.deleted
    assert _templates(kube, k8s_namespace) == {used["metadata"]["name"], "not-gpudras"}

    # The next pod that needs the collected template gets it created again.
    assert writer.ensure_template(k8s_namespace, unused).created


def test_a_template_reused_after_the_list_is_not_deleted(
    control_plane: ControlPlane, kube: Kube, k8s_namespace: str
) -> None:
    client = api_client(str(control_plane.kubeconfig))
    writer = KubeSideEffects(client, timeout=10)
    store = KubeTemplateStore(client, timeout=10)
    _, template = _translated("pod-legacy-vram.yaml", k8s_namespace)
    name = template["metadata"]["name"]
    writer.ensure_template(k8s_namespace, template)
    listed = [t for t in store.list_templates(MANAGED_SELECTOR) if t["metadata"]["namespace"] == k8s_namespace]
    (stale,) = listed
    # The webhook reuses it for a new pod: it stamps the template, which changes its resourceVersion.
    result = writer.ensure_template(k8s_namespace, template)
    assert not result.created
    stamped = kube.get("ResourceClaimTemplate", name, k8s_namespace)
    assert LAST_USED_ANNOTATION in stamped["metadata"]["annotations"]
    assert stamped["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]
    # A collector that listed it before the reuse cannot delete it: the precondition fails.
    assert not store.delete_template(k8s_namespace, name, stale["metadata"]["resourceVersion"])
    assert name in _templates(kube, k8s_namespace)
    assert store.delete_template(k8s_namespace, name, stamped["metadata"]["resourceVersion"])
    assert name not in _templates(kube, k8s_namespace)
