"""`gpudra recommend` over series with bad and relabelled pod labels, through a real Prometheus and API server: a
container label Kubernetes could not have made (100 characters, or none) is skipped and counted instead of failing
the pass at the CRD's schema, and a series whose workload labels Prometheus moved to `exported_*` (a ServiceMonitor's
target labels naming the exporter) is attributed to the workload, not to the exporter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube
from tests.e2e.harness import flat, gsr, legacy_deployment, recommend
from tests.prometheus.fixtures import DcgmDevice, PrometheusServer

pytestmark = pytest.mark.e2e

GIB = 1024


def test_bad_labels_are_counted_and_exported_labels_read(
    crd: None,
    control_plane: ControlPlane,
    kube: Kube,
    k8s_namespace: str,
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    ns = k8s_namespace
    (embed,) = legacy_deployment(kube, ns, "embed", 1)
    (other,) = legacy_deployment(kube, ns, "other", 1)
    exporter = {"exported_namespace": ns, "exported_pod": other, "exported_container": "server"}
    devices = [
        DcgmDevice(ns, embed, "server", flat(5 * GIB), uuid="GPU-bbbbbbbb-0000-0000-0000-000000000001"),
        DcgmDevice(ns, embed, "c" * 100, flat(GIB), gpu=1, uuid="GPU-bbbbbbbb-0000-0000-0000-000000000002"),
        DcgmDevice(ns, embed, "", flat(GIB), gpu=2, uuid="GPU-bbbbbbbb-0000-0000-0000-000000000003"),
        DcgmDevice("gpu-operator", "nvidia-dcgm-exporter-x7k2p", "nvidia-dcgm-exporter", flat(3 * GIB), gpu=3,
                   uuid="GPU-bbbbbbbb-0000-0000-0000-000000000004", extra_labels=exporter),
    ]  # fmt: skip
    prom = prometheus_factory(devices)

    report = recommend(control_plane, prom.url, ns)
    assert report["writes"] == {"created": 2}
    assert report["droppedSeries"] == {"invalid container label": 1, "no container label": 1}
    (server,) = gsr(kube, ns, "deployment-embed")["status"]["containers"]
    assert server["name"] == "server" and server["peak"] == "5Gi"
    (relabelled,) = gsr(kube, ns, "deployment-other")["status"]["containers"]
    assert relabelled["name"] == "server" and relabelled["peak"] == "3Gi"
