"""The Kyverno peer of issue 41 on the real control plane: Kyverno's admission controller (the opt-in build of
tests/controlplane/build_kyverno.sh, run out of cluster as its chart runs it) with the benchmark's ClusterPolicy
(benchmarks/peers/kyverno-clusterpolicy.yaml) mutates a legacy GPU pod as the MutatingAdmissionPolicy peer does.
Skipped, naming build_kyverno.sh, where the binary is not in the cache (CI does not build it)."""

from __future__ import annotations

import copy
import functools
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.peers import kyverno_policy
from tests.controlplane import kyverno_admission
from tests.controlplane.binaries import MissingBinaries
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, exists, wait_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _address() -> str:
    """This machine's address on its default route (HTTP/1.1 from kube-apiserver, as to a Service), else loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"


@pytest.fixture(scope="module")
def kyverno(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """Kyverno with the peer's policy, and a client of its control plane; skipped before any control plane starts
    where the opt-in build is absent (so the test asks for no session fixture itself: those would start first)."""
    try:
        kyverno_admission.binary()
        kyverno_admission.crd_directory()
    except MissingBinaries as exc:
        pytest.skip(str(exc))
    control_plane: ControlPlane = request.getfixturevalue("control_plane")
    kube: Kube = request.getfixturevalue("kube")
    workdir = tmp_path_factory.mktemp("kyverno")
    policies = [kyverno_policy.policy()]
    with kyverno_admission.running(control_plane, kube, _address(), kyverno_policy.NAMESPACE_LABEL, policies, workdir):
        yield kube


def _namespace(kube: Kube, selected: bool) -> str:
    name = f"e2e-kyverno-{uuid.uuid4().hex[:8]}"
    labels = {"gpudra.io/webhook": "disabled"}
    if selected:
        labels[kyverno_policy.NAMESPACE_LABEL] = "true"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    wait_for(lambda: kube.list("ServiceAccount", name), timeout=30, what=f"ServiceAccount {name}/default")
    kube.create(kyverno_policy.template(), name)
    return name


def _gone(kube: Kube, namespace: str) -> bool:
    return not exists(kube, "Namespace", namespace)


def _legacy_pod(name: str) -> dict[str, Any]:
    pod: dict[str, Any] = copy.deepcopy(yaml.safe_load((ROOT / "examples" / "pod-legacy-1gpu.yaml").read_text()))
    pod["metadata"] = {"name": name}
    # Never bound (other modules leave nodes with nvidia.com/gpu behind): with no kubelet, a bound pod stays
    # Terminating and so does its namespace. Only the admission is under test here.
    pod["spec"]["nodeSelector"] = {"gpudra.io/e2e-kyverno": "nowhere"}
    pod["spec"]["terminationGracePeriodSeconds"] = 0
    return pod


def test_kyverno_mutates_a_legacy_pod_in_a_selected_namespace(kyverno: Kube) -> None:
    kube = kyverno
    selected, other = _namespace(kube, True), _namespace(kube, False)
    try:
        # Kyverno's webhook is registered before kube-apiserver's informer sees it: wait for a dry run to mutate.
        probe = _legacy_pod("probe")
        probe["metadata"]["namespace"] = selected
        dry_run = kube.path("Pod", selected) + "?dryRun=All"
        wait_for(
            lambda: kyverno_policy.mutated(kube.request("POST", dry_run, probe)),
            timeout=60,
            what="Kyverno's resource webhook in effect",
        )
        created = kube.create(_legacy_pod("cuda"), selected)
        stored = kube.get("Pod", "cuda", selected)
        assert kyverno_policy.mutated(created) and kyverno_policy.mutated(stored), stored["spec"]
        assert stored["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
        untouched = kube.create(_legacy_pod("cuda"), other)
        assert not kyverno_policy.mutated(untouched)
        assert untouched["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    finally:
        for ns in (selected, other):
            kube.delete("Namespace", ns)
        for ns in (selected, other):
            gone = functools.partial(_gone, kube, ns)
            wait_for(gone, timeout=120, what=f"namespace {ns} deleted")
