"""The pieces benchmarks/admission.py measures its peers with (issue 41): kube-apiserver's webhook histogram read from
/metrics text, and the MutatingAdmissionPolicy peer's manifests and its check of a mutated pod."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.peers import admission_policy
from benchmarks.peers.apiserver_metrics import WEBHOOK_DURATION, Histogram, histogram

ROOT = Path(__file__).resolve().parents[2]


def _metrics(counts: dict[str, dict[str, int]]) -> str:
    """Prometheus text with one series of the webhook histogram per webhook name: le -> cumulative count."""
    lines = [f"# HELP {WEBHOOK_DURATION} x", f"# TYPE {WEBHOOK_DURATION} histogram"]
    for name, buckets in counts.items():
        labels = f'name="{name}",operation="CREATE",rejected="false",type="admit"'
        lines += [f'{WEBHOOK_DURATION}_bucket{{{labels},le="{le}"}} {n}' for le, n in buckets.items()]
        lines.append(f"{WEBHOOK_DURATION}_count{{{labels}}} {buckets['+Inf']}")
    lines.append('apiserver_request_total{code="201",verb="POST"} 5')
    return "\n".join(lines) + "\n"


def test_the_histogram_of_one_webhook_is_read_and_interpolated() -> None:
    text = _metrics({
        "mutate.gpudra.io": {"0.005": 10, "0.025": 90, "0.1": 100, "+Inf": 100},
        "other.example.com": {"0.005": 0, "0.025": 0, "0.1": 0, "+Inf": 50},
    })  # fmt: skip
    mine = histogram(text, {"name": "mutate.gpudra.io"})
    assert mine.bounds == (0.005, 0.025, 0.1, math.inf) and mine.count == 100
    # rank 50 of 100 lies in (0.005, 0.025], 40 of its 80: halfway
    assert mine.quantile(0.5) == pytest.approx(0.015)
    # rank 99: 9 of the 10 in (0.025, 0.1]
    assert mine.quantile(0.99) == pytest.approx(0.025 + 0.075 * 0.9)
    # past the last finite bound: that bound, as histogram_quantile answers
    assert histogram(text, {"name": "other.example.com"}).quantile(0.99) == pytest.approx(0.1)
    assert histogram(text).count == 150  # no label to match: every series summed


def test_a_load_is_the_difference_of_two_reads() -> None:
    before = histogram(_metrics({"w": {"0.005": 10, "0.025": 10, "+Inf": 10}}), {"name": "w"})
    after = histogram(_metrics({"w": {"0.005": 10, "0.025": 30, "+Inf": 30}}), {"name": "w"})
    load = after.minus(before)
    assert load.cumulative == (0, 20, 20) and load.quantile(0.99) == pytest.approx(0.005 + 0.02 * 0.99)
    never_called = histogram(_metrics({}), {"name": "w"})
    assert never_called.bounds == () and math.isnan(never_called.quantile(0.99))
    assert after.minus(never_called) == after  # the webhook's first call came during the load


def test_bad_histograms_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="buckets changed"):
        Histogram((0.1, math.inf), (1, 1)).minus(Histogram((0.2, math.inf), (1, 1)))
    with pytest.raises(ValueError, match=r"no \+Inf bucket"):
        histogram(f'{WEBHOOK_DURATION}_bucket{{le="0.1"}} 3\n')
    with pytest.raises(ValueError, match="quantile 1.5"):
        Histogram((0.1, math.inf), (1, 1)).quantile(1.5)


def _legacy() -> dict[str, Any]:
    pod: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "pod-legacy-1gpu.yaml").read_text())
    return pod


def _as_the_policy_mutates(pod: dict[str, Any]) -> dict[str, Any]:
    done = copy.deepcopy(pod)
    done["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    for container in done["spec"]["containers"]:
        container["resources"] = {"claims": [{"name": "gpu"}]}
    return done


def test_the_policy_manifests_fit_together_and_mutated_pods_are_told_apart() -> None:
    policy, binding, template = admission_policy.manifests()
    assert policy["kind"] == "MutatingAdmissionPolicy" and template["metadata"]["name"] == "gpu"
    legacy = _legacy()
    assert not admission_policy.mutated(legacy, "gpu")
    done = _as_the_policy_mutates(legacy)
    assert admission_policy.mutated(done, "gpu")
    assert not admission_policy.mutated(done, "another-template")
    half = copy.deepcopy(done)
    half["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}  # the legacy resource left
    assert not admission_policy.mutated(half, "gpu")
    unclaimed = copy.deepcopy(done)
    unclaimed["spec"]["containers"][0]["resources"] = {}
    assert not admission_policy.mutated(unclaimed, "gpu")


@pytest.mark.e2e
def test_the_policy_in_the_real_api_server_mutates_only_the_gpu_containers(kube: Any, k8s_namespace: str) -> None:
    """The MutatingAdmissionPolicy as kube-apiserver 1.37 runs it, on pods the benchmark's bursts do not send: a GPU
    container after one without GPUs (the patch's indices), with the requests kube-apiserver defaults from its limits,
    and a pod already using DRA (left alone). Dry runs in a namespace the binding selects; the policy and binding are
    removed afterwards."""
    policy, binding, template = admission_policy.manifests()
    labels = {admission_policy.NAMESPACE_LABEL: "true"}
    kube.patch("Namespace", k8s_namespace, {"metadata": {"labels": labels}})
    kube.create(template, k8s_namespace)
    kube.create(policy)
    kube.create(binding)
    try:
        sidecar = {"name": "log", "image": "busybox", "resources": {"limits": {"cpu": "100m"}}}
        resources = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "1"}}  # requests defaulted from limits
        gpu = {"name": "cuda", "image": "cuda", "resources": resources}
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "two", "namespace": k8s_namespace},
            "spec": {"containers": [sidecar, gpu]},
        }

        def dry_run(manifest: dict[str, Any]) -> dict[str, Any]:
            created: dict[str, Any] = kube.request("POST", kube.path("Pod", k8s_namespace) + "?dryRun=All", manifest)
            return created

        from tests.controlplane.kube import wait_for

        wait_for(lambda: "resourceClaims" in dry_run(pod)["spec"], timeout=60, what="the policy in effect")
        out = dry_run(pod)
        log, cuda = out["spec"]["containers"]
        assert out["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
        assert "claims" not in log["resources"] and log["resources"]["limits"] == {"cpu": "100m"}
        assert cuda["resources"]["claims"] == [{"name": "gpu"}]
        assert cuda["resources"]["requests"] == {"cpu": "1"} and "nvidia.com/gpu" not in cuda["resources"].get(
            "limits", {}
        )
        # a pod that already uses DRA is not the policy's to change
        dra = copy.deepcopy(pod)
        dra["spec"]["resourceClaims"] = [{"name": "mine", "resourceClaimTemplateName": "mine"}]
        assert dry_run(dra)["spec"]["containers"][1]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    finally:
        kube.delete("MutatingAdmissionPolicyBinding", binding["metadata"]["name"])
        kube.delete("MutatingAdmissionPolicy", policy["metadata"]["name"])


def test_the_kyverno_policy_matches_only_its_namespaces_and_claims_the_map_template(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from benchmarks.peers import kyverno_policy

    policy = kyverno_policy.policy()
    assert policy["kind"] == "ClusterPolicy" and policy["spec"]["rules"]
    patches = "".join(r["mutate"].get("patchesJson6902", "") for r in policy["spec"]["rules"])
    assert f'"resourceClaimTemplateName": "{kyverno_policy.template()["metadata"]["name"]}"' in patches
    widened = copy.deepcopy(policy)
    widened["spec"]["rules"][1]["match"] = {"any": [{"resources": {"kinds": ["Pod"]}}]}  # every namespace
    manifest = tmp_path / "kyverno-clusterpolicy.yaml"
    manifest.write_text(yaml.safe_dump(widened))
    monkeypatch.setattr(kyverno_policy, "MANIFEST", manifest)
    with pytest.raises(ValueError, match="rule 'strip-legacy-gpus' selects None"):
        kyverno_policy.policy()
