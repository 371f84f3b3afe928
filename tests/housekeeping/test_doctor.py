"""`gpudra doctor` on the shipped manifests themselves: what a default install has on, and what each change turns on
or off."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.commands.doctor import EXIT_API, EXIT_OFF, doctor_once
from housekeeping import Protection, check_install
from kubeapi import ApiServerError

BASE = Path(__file__).resolve().parents[2] / "manifests" / "base"


class Installed:
    """The objects of manifests/base, as `gpudra-system` would hold them after `kubectl apply -k`."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        for path in sorted(BASE.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") != "Kustomization":
                    self.objects[(doc["kind"], doc["metadata"]["name"])] = doc
        self.reads: list[tuple[str, str, str | None]] = []

    def read(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.reads.append((kind, name, namespace))
        found = self.objects.get((kind, name))
        return copy.deepcopy(found) if found is not None else None


def _by_name(protections: list[Protection]) -> dict[str, Protection]:
    return {p.name: p for p in protections}


def test_a_default_install_has_everything_on_but_client_auth_and_a_narrowed_network_policy() -> None:
    found = _by_name(check_install(Installed()))
    assert list(found) == [
        "client-auth",
        "review-sources",
        "network-policy",
        "managed-objects-policy",
        "namespace-caps-policy",
        "namespace-quota",
        "replica-spread",
    ]
    assert {name for name, p in found.items() if p.on} == {
        "review-sources",
        "managed-objects-policy",
        "namespace-caps-policy",
        "namespace-quota",
        "replica-spread",
    }
    assert "any client" in found["client-auth"].detail and "webhook.clientAuth.enabled" in found["client-auth"].fix
    assert "any source" in found["network-policy"].detail and "ipBlocks" in found["network-policy"].fix
    assert all(p.fix == "" for p in found.values() if p.on)


def test_client_auth_and_listed_peers_turn_the_first_two_on() -> None:
    installed = Installed()
    deployment = installed.objects[("Deployment", "gpudra-webhook")]
    deployment["spec"]["template"]["spec"]["containers"][0]["args"].append("--client-ca=/etc/gpudra/client-ca/ca.crt")
    policy = installed.objects[("NetworkPolicy", "gpudra-webhook")]
    policy["spec"]["ingress"][0]["from"] = [{"ipBlock": {"cidr": "10.0.0.0/28"}}, {"ipBlock": {"cidr": "10.0.1.0/28"}}]
    found = _by_name(check_install(installed))
    assert all(p.on for p in found.values()), found
    assert found["network-policy"].detail == "the webhook port admits 2 listed peer(s) only"


@pytest.mark.parametrize(
    ("change", "name", "detail"),
    [
        (lambda o: o.pop(("ValidatingAdmissionPolicyBinding", "gpudra-namespace-caps")), "namespace-caps-policy",
         "no binding gpudra-namespace-caps"),
        (lambda o: o[("ValidatingAdmissionPolicyBinding", "gpudra-managed-objects")]["spec"].update(
            validationActions=["Audit"]), "managed-objects-policy", "does not Deny"),
        (lambda o: o[("Deployment", "gpudra-webhook")]["spec"]["template"]["spec"].update(
            serviceAccountName="other"), "managed-objects-policy",
         "does not name system:serviceaccount:gpudra-system:other"),
        (lambda o: o.pop(("ValidatingAdmissionPolicy", "gpudra-managed-objects")), "managed-objects-policy",
         "no ValidatingAdmissionPolicy gpudra-managed-objects"),
        (lambda o: o[("CronJob", "gpudra-namespace-quota")]["spec"].update(suspend=True), "namespace-quota",
         "suspended"),
        (lambda o: o.pop(("CronJob", "gpudra-namespace-quota")), "namespace-quota",
         "no CronJob gpudra-system/gpudra-namespace-quota"),
        (lambda o: o[("Deployment", "gpudra-webhook")]["spec"]["template"]["spec"].update(
            topologySpreadConstraints=[]), "replica-spread", "only preferred"),
        (lambda o: o[("Deployment", "gpudra-webhook")]["spec"].update(replicas=1), "replica-spread", "1 replica"),
        (lambda o: o.pop(("NetworkPolicy", "gpudra-webhook")), "network-policy", "every pod reaches the webhook"),
    ],
)  # fmt: skip
def test_each_protection_taken_away_is_reported_off_with_its_fix(change: Any, name: str, detail: str) -> None:
    installed = Installed()
    change(installed.objects)
    found = _by_name(check_install(installed))
    assert not found[name].on and detail in found[name].detail and found[name].fix
    assert [p.name for p in found.values() if not p.on and p.name not in ("client-auth", "network-policy")] in (
        [],
        [name],
    )


def test_required_anti_affinity_counts_as_a_spread() -> None:
    installed = Installed()
    pod = installed.objects[("Deployment", "gpudra-webhook")]["spec"]["template"]["spec"]
    pod["topologySpreadConstraints"] = []
    pod["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"a": "b"}}}]}}  # fmt: skip
    assert _by_name(check_install(installed))["replica-spread"].on


def test_a_chart_install_is_read_by_its_prefix_and_namespace() -> None:
    installed = Installed()
    check_install(installed, namespace="tenant-infra", prefix="blue-gpudra")
    assert ("Deployment", "blue-gpudra-webhook", "tenant-infra") in installed.reads
    assert ("ValidatingAdmissionPolicy", "blue-gpudra-namespace-caps", None) in installed.reads
    assert ("CronJob", "blue-gpudra-namespace-quota", "tenant-infra") in installed.reads


def test_the_command_exits_4_with_a_protection_off_and_prints_json() -> None:
    outcome = doctor_once(Installed(), namespace="gpudra-system", prefix="gpudra", as_json=True)
    assert outcome.code == EXIT_OFF
    rows = json.loads(outcome.stdout)
    assert [(r["name"], r["on"]) for r in rows][:3] == [
        ("client-auth", False),
        ("review-sources", True),
        ("network-policy", False),
    ]
    text = doctor_once(Installed(), namespace="gpudra-system", prefix="gpudra", as_json=False).stdout
    assert text.splitlines()[0].startswith("OFF  client-auth:") and "on   namespace-quota:" in text


def test_an_api_server_failure_exits_3() -> None:
    class Failing:
        def read(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
            raise ApiServerError(f"could not read {kind} {name}: refused")

    outcome = doctor_once(Failing(), namespace="gpudra-system", prefix="gpudra", as_json=False)
    assert outcome.code == EXIT_API and "could not read Deployment gpudra-webhook" in outcome.stderr


@pytest.mark.parametrize("args", [["--review-sources=any"], ["--review-sources", "any"]])
def test_the_review_source_check_is_off_when_the_args_say_any(args: list[str]) -> None:
    installed = Installed()
    container = installed.objects[("Deployment", "gpudra-webhook")]["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [*container.get("args", []), *args]
    found = _by_name(check_install(installed))["review-sources"]
    assert not found.on and "any" in found.detail


def test_the_review_source_check_is_off_without_the_right_to_list_pods() -> None:
    installed = Installed()
    role = installed.objects[("ClusterRole", "gpudra-webhook")]
    role["rules"] = [r for r in role["rules"] if "pods" not in r["resources"]]
    found = _by_name(check_install(installed))["review-sources"]
    assert not found.on and "may not list pods" in found.detail
