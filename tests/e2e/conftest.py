"""Fixtures of the e2e tests, over the session control plane of tests/controlplane/fixtures.py (`control_plane`,
`kube`, `k8s_namespace`): `gpudra serve` registered for a module's namespaces, those namespaces, the fake GPU nodes,
the GPUSizingRecommendation CRD, Prometheus. The pieces they are made of are in tests/e2e/harness.py.

Without the binaries build.sh makes, the tests that need them skip, naming them and the command.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube
from tests.e2e.harness import (
    A100_NODE,
    H100_NODE,
    ROOT,
    GpuNode,
    ServeWebhook,
    Webhook,
    WebhookNamespaces,
    delete_namespace,
    fake_gpu_nodes,
    registered,
    webhook_namespace,
)
from tests.prometheus.fixtures import prometheus_factory  # noqa: F401 (a fixture: Prometheus serving DCGM series)

CRD = ROOT / "manifests" / "base" / "crd-gpusizingrecommendation.yaml"


@pytest.fixture(scope="session")
def crd(control_plane: ControlPlane) -> None:
    """The GPUSizingRecommendation CRD of manifests/base, applied and Established."""
    control_plane.kubectl("apply", "--server-side", "-f", str(CRD))
    control_plane.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/gpusizingrecommendations.gpudra.io"
    )


@pytest.fixture(scope="module")
def gpu_nodes(kube: Kube) -> Iterator[None]:
    """The `webhook` scope's two fake nodes (A100_NODE, H100_NODE) with the driver's DeviceClasses and slices."""
    nodes: dict[str, GpuNode] = {A100_NODE: ("A100-SXM4-80GB", "dynamic"), H100_NODE: ("H100-SXM5-80GB", "none")}
    with fake_gpu_nodes(kube, "webhook", nodes):
        yield


@pytest.fixture(scope="module")
def serve_webhook(
    control_plane: ControlPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeWebhook]:
    """`serve_webhook(scope, *args, env=None)`: `gpudra serve *args` (with `env` added to its environment) started
    against the control plane, ready, and registered as `gpudra-e2e-<scope>` for `scope`'s namespaces; unregistered
    and stopped after the module."""
    with ExitStack() as started:

        def serve(scope: str, *args: str, env: dict[str, str] | None = None) -> Webhook:
            hook = Webhook(tmp_path_factory.mktemp(f"serve-{scope}"), control_plane.kubeconfig, *args, env=env)
            started.callback(hook.stop)
            hook.start()
            started.enter_context(registered(kube, hook, f"gpudra-e2e-{scope}", scope))
            return hook

        yield serve


@pytest.fixture
def webhook_namespaces(kube: Kube) -> Iterator[WebhookNamespaces]:
    """`webhook_namespaces(scope, prefix, labels=None, wait_gone=False)`: a fresh namespace labelled for `scope` (and
    `labels`) once the API server calls the webhook for it; deleted after the test (with `wait_gone`, until gone)."""
    made: list[tuple[str, bool]] = []

    def make(scope: str, prefix: str, labels: dict[str, str] | None = None, *, wait_gone: bool = False) -> str:
        name = webhook_namespace(kube, scope, prefix, labels)
        made.append((name, wait_gone))
        return name

    yield make
    for name, wait_gone in made:
        delete_namespace(kube, name, wait=wait_gone)
