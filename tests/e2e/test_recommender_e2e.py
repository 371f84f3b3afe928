"""The recommender end to end: the GPUSizingRecommendation CRD on the real API server (valid objects accepted,
malformed ones rejected by the schema and by its CEL rules), `gpudra recommend` over a real Prometheus holding
DCGM exporter series for pods that kube-controller-manager made for real Deployments, and the controller riding
out a Prometheus outage."""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from kubeapi import api_client
from recommender import (
    KubeObjects,
    OwnerResolver,
    PrometheusClient,
    RecommendationStore,
    Recommender,
    RecommenderConfig,
    Settings,
    serve_health,
)
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.e2e.harness import ROOT, flat, gsr, gsr_path, legacy_deployment, recommend
from tests.prometheus.fixtures import DcgmDevice, PrometheusServer

pytestmark = pytest.mark.e2e

GIB = 1024


def _rejected(call: Callable[[], Any]) -> str:
    with pytest.raises(ApiException) as info:
        call()
    assert info.value.status == 422, info.value.body
    return str(info.value.body)


def test_the_crd_accepts_a_recommendation_and_rejects_malformed_ones(crd: None, kube: Kube, k8s_namespace: str) -> None:
    ns = k8s_namespace
    obj = {
        "apiVersion": "gpudra.io/v1alpha1",
        "kind": "GPUSizingRecommendation",
        "metadata": {"name": "deployment-embed"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "embed"}},
    }
    kube.request("POST", gsr_path(ns), obj)
    good = {"status": {
        "containers": [{"name": "server", "vram": "6Gi", "peak": "5Gi", "samples": 2016, "window": "168h",
                        "pressure": False}],
        "lastUpdated": "2026-12-04T03:00:00Z",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Recommended", "message": "ok",
                        "lastTransitionTime": "2026-12-04T03:00:00Z"}],
    }}  # fmt: skip
    status = kube.request("PATCH", gsr_path(ns, "deployment-embed", True), good, "application/merge-patch+json")
    assert status["status"]["containers"][0]["vram"] == "6Gi"

    def patch(entry: dict[str, Any]) -> Callable[[], Any]:
        body = {"status": {"containers": [entry]}}
        return lambda: kube.request(
            "PATCH", gsr_path(ns, "deployment-embed", True), body, "application/merge-patch+json"
        )

    base = {"name": "server", "vram": "6Gi", "peak": "5Gi", "samples": 10, "window": "168h"}
    # CEL: the recommendation below the observed peak (quantities compared as quantities: 5000Mi < 5Gi).
    assert "vram (the recommendation) must be at least peak" in _rejected(patch({**base, "vram": "5000Mi"}))
    # Schema: not a quantity, a negative count, not a duration, a required field missing.
    assert "should match" in _rejected(patch({**base, "vram": "six gigs"}))
    assert "greater than or equal to 0" in _rejected(patch({**base, "samples": -1}))
    assert "window" in _rejected(patch({**base, "window": "a week"}))
    assert "Required value" in _rejected(patch({k: v for k, v in base.items() if k != "peak"}))
    # CEL on the object: unsupported kind, a kind under the wrong API group, a name that is not <kind>-<name>.
    bad_kind = {**obj, "metadata": {"name": "service-web"},
                "spec": {"targetRef": {"apiVersion": "v1", "kind": "Service", "name": "web"}}}  # fmt: skip
    assert "targetRef.kind must be one of" in _rejected(lambda: kube.request("POST", gsr_path(ns), bad_kind))
    wrong_group = {**obj, "metadata": {"name": "job-train"},
                   "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Job", "name": "train"}}}  # fmt: skip
    assert "does not serve targetRef.kind" in _rejected(lambda: kube.request("POST", gsr_path(ns), wrong_group))
    misnamed = {**obj, "metadata": {"name": "embed"}}
    assert "metadata.name must be" in _rejected(lambda: kube.request("POST", gsr_path(ns), misnamed))
    # targetRef is immutable.
    moved = {"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}}}
    assert "immutable" in _rejected(
        lambda: kube.request("PATCH", gsr_path(ns, "deployment-embed"), moved, "application/merge-patch+json")
    )
    assert gsr(kube, ns, "deployment-embed")["status"]["containers"][0]["vram"] == "6Gi"


def test_gpudra_recommend_sizes_deployments_from_dcgm_series(
    crd: None,
    control_plane: ControlPlane,
    kube: Kube,
    k8s_namespace: str,
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    ns = k8s_namespace
    embed = legacy_deployment(kube, ns, "embed", 2)
    grow = legacy_deployment(kube, ns, "grow", 1)
    fresh = legacy_deployment(kube, ns, "fresh", 1)
    devices = [
        # Two replicas on whole H100s: 5 GiB and 6 GiB steady, with rare spikes to 7 GiB.
        DcgmDevice(ns, embed[0], "server", flat(5 * GIB, 7 * GIB), uuid="GPU-aaaaaaaa-0000-0000-0000-000000000001"),
        DcgmDevice(ns, embed[1], "server", flat(6 * GIB), gpu=1, uuid="GPU-aaaaaaaa-0000-0000-0000-000000000002"),
        # Shrunk to a MIG 1g.10gb (9984 MiB on an H100) and using all of it: pressure, grow back.
        DcgmDevice(ns, grow[0], "server", flat(9984), total_mib=9984, reserved_mib=0, mig_profile="1g.10gb",
                   mig_instance="9", gpu=2, uuid="GPU-aaaaaaaa-0000-0000-0000-000000000003"),
        # Seen for 20 minutes only (41 samples): no recommendation yet.
        DcgmDevice(ns, fresh[0], "server", flat(2 * GIB), history_seconds=1200, gpu=3,
                   uuid="GPU-aaaaaaaa-0000-0000-0000-000000000004"),
        # A series of a pod that never existed and no owner matches by name: skipped, not fatal.
        DcgmDevice(ns, "ghost-7f9c", "server", flat(GIB), gpu=4, uuid="GPU-aaaaaaaa-0000-0000-0000-000000000005"),
    ]  # fmt: skip
    prom = prometheus_factory(devices)

    dry = recommend(control_plane, prom.url, ns, "--dry-run")
    assert dry["dryRun"] and dry["writes"] == {"dry_run": 2}
    with pytest.raises(ApiException):
        gsr(kube, ns, "deployment-embed")  # nothing written on a dry run

    report = recommend(control_plane, prom.url, ns)
    assert report["writes"] == {"created": 2}
    skipped = {(s["owner"], s["reason"].split(" (")[0]) for s in report["skipped"]}
    assert skipped == {
        (f"{ns}/Deployment/fresh", "not enough samples"),
        (f"{ns}/ghost-7f9c", "pod gone, no owner found by name"),
    }

    deploy = kube.get("Deployment", "embed", ns)
    rec = gsr(kube, ns, "deployment-embed")
    assert rec["spec"]["targetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "embed"}
    assert rec["metadata"]["ownerReferences"][0]["uid"] == deploy["metadata"]["uid"]
    (server,) = rec["status"]["containers"]
    # Pooled over both replicas: 2 x 20161 samples; p99 is 6 GiB (the spikes are 0.1 %), x 1.2 -> 7373 MiB.
    assert server["samples"] == 2 * 20161 and server["window"] == "168h" and server["statistic"] == "p99"
    assert server["peak"] == "6Gi" and server["vram"] == "7373Mi" and server["pressure"] is False
    assert server["granted"] == "81559Mi" and server["modelName"] == "NVIDIA H100 80GB HBM3"
    assert server["device"] == "MIG 1g.10gb of NVIDIA H100 80GB HBM3"
    ready = {c["type"]: c["status"] for c in rec["status"]["conditions"]}
    assert ready == {"Ready": "True", "PrometheusReachable": "True"}

    (grown,) = gsr(kube, ns, "deployment-grow")["status"]["containers"]
    assert grown["pressure"] is True and grown["statistic"] == "max" and grown["peak"] == "9984Mi"
    assert grown["vram"] == "11981Mi" and grown["device"] == "MIG 1g.20gb of NVIDIA H100 80GB HBM3"

    printed = control_plane.kubectl("get", "gsr", "-n", ns).stdout
    assert "deployment-embed" in printed and "7373Mi" in printed

    # Idempotent: a second pass changes nothing but lastUpdated, and the conditions keep their transition times.
    again = recommend(control_plane, prom.url, ns)
    assert again["writes"] == {"refreshed": 2}
    after = gsr(kube, ns, "deployment-embed")
    assert after["status"]["containers"] == rec["status"]["containers"]
    assert [c["lastTransitionTime"] for c in after["status"]["conditions"]] == [
        c["lastTransitionTime"] for c in rec["status"]["conditions"]
    ]
    assert len(kube.request("GET", gsr_path(ns))["items"]) == 2


def _http(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _metric(text: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def test_the_controller_reports_a_prometheus_outage_and_recovers(
    crd: None,
    control_plane: ControlPlane,
    kube: Kube,
    k8s_namespace: str,
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    ns = k8s_namespace
    (pod,) = legacy_deployment(kube, ns, "embed", 1)
    prom = prometheus_factory([DcgmDevice(ns, pod, "server", flat(4 * GIB))], seconds=6 * 3600)
    client = api_client(str(control_plane.kubeconfig))
    objects = KubeObjects(client, timeout=10)
    recommender = Recommender(
        PrometheusClient(prom.url, timeout=5),
        lambda: OwnerResolver(objects),
        RecommendationStore(client, timeout=10),
        RecommenderConfig(settings=Settings(window_seconds=6 * 3600), namespace=ns),
    )
    server = serve_health(recommender.health, recommender.metrics, host="127.0.0.1", port=0)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    stop = threading.Event()
    loop = threading.Thread(
        target=recommender.run_forever, args=(stop,), kwargs={"interval": 1.0, "retry_initial": 0.2}
    )
    loop.start()
    try:
        wait_for(lambda: _http(base + "/readyz")[0] == 200, timeout=60, what="a first successful pass")
        (first,) = gsr(kube, ns, "deployment-embed")["status"]["containers"]
        assert first["peak"] == "4Gi"

        prom.stop()
        status, why = wait_for(
            lambda: (lambda r: r if r[0] == 503 else None)(_http(base + "/readyz")), timeout=30, what="503"
        )
        assert "unreachable" in why
        metrics = _http(base + "/metrics")[1]
        assert _metric(metrics, 'gpudra_recommender_errors_total{kind="prometheus_unreachable"}') >= 1
        assert _metric(metrics, 'gpudra_recommender_runs_total{result="failure"}') >= 1
        # The last good recommendation stays; its object says Prometheus was not reachable.
        stale = wait_for(
            lambda: (lambda o: o if {c["type"]: c["status"] for c in o["status"]["conditions"]}
                     .get("PrometheusReachable") == "False" else None)(gsr(kube, ns, "deployment-embed")),
            timeout=30, what="PrometheusReachable=False",
        )  # fmt: skip
        assert stale["status"]["containers"] == [first]
        success_before = _metric(metrics, "gpudra_recommender_last_success_timestamp_seconds")

        prom.start()
        wait_for(lambda: _http(base + "/readyz")[0] == 200, timeout=60, what="recovery")
        metrics = _http(base + "/metrics")[1]
        assert _metric(metrics, "gpudra_recommender_last_success_timestamp_seconds") > success_before
        conditions = {c["type"]: c["status"] for c in gsr(kube, ns, "deployment-embed")["status"]["conditions"]}
        assert conditions == {"Ready": "True", "PrometheusReachable": "True"}
    finally:
        stop.set()
        loop.join(timeout=30)
        server.shutdown()
        server.server_close()
    assert not loop.is_alive()


def test_the_recommender_component_renders_and_passes_a_server_side_dry_run(
    crd: None, control_plane: ControlPlane, tmp_path: Path
) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "manifests" / "base", overlay)],
        "components": [os.path.relpath(ROOT / "manifests" / "components" / "recommender", overlay)],
    }))  # fmt: skip
    rendered = control_plane.kubectl("kustomize", "--load-restrictor=LoadRestrictionsNone", str(overlay)).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "gpudra-recommender"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][:3] == ["recommend", "--watch", "--in-cluster"]
    assert "--prometheus=$(PROMETHEUS_URL)" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"]
    (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpudra-recommender"]
    verbs = {
        (g, r): tuple(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
    }
    assert verbs[("gpudra.io", "gpusizingrecommendations/status")] == ("update", "patch")
    assert verbs[("", "pods")] == ("get", "list") and verbs[("apps", "replicasets")] == ("get",)
    assert all("delete" not in v for v in verbs.values())
    assert any(d["kind"] == "CustomResourceDefinition" for d in docs)
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": "gpudra-system"}}))  # fmt: skip
    out = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=gpudra-test", "-f", "-", input=rendered,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
