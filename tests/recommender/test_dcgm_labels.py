"""The one DCGM series reader: which label names the pod (exported_* before the exporter's own, old names before new),
and labels that are not Kubernetes names rejected with a bounded reason, never reaching the API server."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recommender import DeviceSeries, OwnerResolver, Rejected, fb_selector, invalid_name, series_identity

GOOD = {"namespace": "team-a", "pod": "embed-6d9f7-abcde", "container": "server", "UUID": "GPU-1"}


def _ident(labels: dict[str, str]) -> DeviceSeries:
    found = series_identity(labels)
    assert isinstance(found, DeviceSeries), found
    return found


def test_the_exporters_names_in_every_form() -> None:
    found = _ident(GOOD)
    assert (found.namespace, found.pod, found.container) == ("team-a", "embed-6d9f7-abcde", "server")
    old = {"pod_namespace": "team-a", "pod_name": "embed-6d9f7-abcde", "container_name": "server", "UUID": "GPU-1"}
    assert _ident(old) == _ident(GOOD)
    # A ServiceMonitor's target labels name the exporter's pod; honor_labels false moved the workload's to exported_*.
    relabelled = {
        "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p", "container": "nvidia-dcgm-exporter",
        "exported_namespace": "team-a", "exported_pod": "embed-6d9f7-abcde", "exported_container": "server",
        "UUID": "GPU-1",
    }  # fmt: skip
    assert _ident(relabelled) == _ident(GOOD)
    # An old-names exporter scraped with target labels: pod_name is the workload, pod the exporter.
    old_scraped = {**old, "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p", "container": "exporter"}
    assert _ident(old_scraped) == _ident(GOOD)


@pytest.mark.parametrize(
    ("labels", "reason"),
    [
        ({**GOOD, "container": "c" * 100}, "invalid container label"),
        ({**GOOD, "container": "C" * 1_000_000}, "invalid container label"),
        ({**GOOD, "container": ""}, "no container label"),
        ({k: v for k, v in GOOD.items() if k != "container"}, "no container label"),
        ({**GOOD, "namespace": "../kube-system"}, "invalid namespace label"),
        ({**GOOD, "namespace": "Team-A"}, "invalid namespace label"),
        ({**GOOD, "namespace": "team.a"}, "invalid namespace label"),
        ({**GOOD, "pod": "../../secrets/x"}, "invalid pod label"),
        ({**GOOD, "pod": "p/../../x"}, "invalid pod label"),
        ({**GOOD, "pod": "a" * 254}, "invalid pod label"),
        ({**GOOD, "pod": "embed\n"}, "invalid pod label"),
        ({"UUID": "GPU-1"}, "no pod, namespace, container label"),
    ],
)
def test_labels_that_are_not_kubernetes_names_are_rejected(labels: dict[str, str], reason: str) -> None:
    found = series_identity(labels)
    assert isinstance(found, Rejected) and found.reason == reason
    assert len(found.detail) < 500  # a megabyte label value is not repeated in logs and reports


def test_the_longest_valid_names_pass() -> None:
    longest = {**GOOD, "namespace": "n" * 63, "pod": ".".join(["p" * 63] * 4)[:253], "container": "c" * 63}
    assert _ident(longest).container == "c" * 63
    assert invalid_name("namespace", "n" * 64) is not None and invalid_name("pod", "a.b-c") is None


@given(st.text(max_size=80))
def test_a_name_that_passes_can_go_into_a_url_path_as_it_is(value: str) -> None:
    for kind in ("namespace", "pod", "container"):
        if invalid_name(kind, value) is None:
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", value) and ".." not in value and "/" not in value


def test_the_selector_finds_every_form_and_refuses_a_bad_namespace() -> None:
    every = fb_selector()
    for label in ("pod", "exported_pod", "pod_name", "exported_pod_name"):
        assert f'DCGM_FI_DEV_FB_USED{{{label}!=""}}' in every
    scoped = fb_selector("DCGM_FI_DEV_FB_FREE", "team-a", over="168h")
    assert 'last_over_time(DCGM_FI_DEV_FB_FREE{exported_namespace="team-a"}[168h])' in scoped
    with pytest.raises(ValueError, match="not a DNS-1123 label"):
        fb_selector(namespace='a"} or vector(1) or x{a="')


class _Recording:
    """An ObjectReader that records every request it would have made to the API server."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.asked.append((kind, namespace, name))
        return None

    def list_pods(self, namespace: str) -> list[dict[str, Any]]:
        self.asked.append(("PodList", namespace, ""))
        return []


def test_the_owner_resolver_never_asks_for_a_name_kubernetes_could_not_have_made() -> None:
    reader = _Recording()
    resolver = OwnerResolver(reader)
    assert str(resolver.owner_of("../kube-system", "x-1")).startswith("invalid name")
    assert str(resolver.owner_of("team-a", "../../x")).startswith("invalid name")
    assert resolver.owner_of("team-a", "ab--x") == "pod gone, no owner found by name"  # "ab-" is no owner name
    assert all(ns == "team-a" and ".." not in name for _, ns, name in reader.asked)
    assert ("ReplicaSet", "team-a", "ab-") not in reader.asked
