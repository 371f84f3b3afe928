"""What a tenant (or a forged review) can do through admission, as plain dicts: caps that a claim which does not
exist yet cannot step around, GPU memory counted for DRA claims too, a container naming a claim the pod lacks, a
namespace that does not exist, and a namespace cache that no stream of names can grow."""

from __future__ import annotations

from typing import Any

import pytest

from kubeapi import NamespaceCache
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from tests.webhook.test_admission_namespaces import _admission
from tests.webhook.test_dra_demand import Claims, _dra_pod, _exactly, _spec
from webhook.dra_demand import claim_demand
from webhook.review import AdmissionDenied, parse_review


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


class ApiServer(RecordingApiServer):
    """Namespaces exist only when listed (the recording server in test_admission invents every one)."""

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        self.namespace_reads += 1
        return self.namespaces.get(name)


@pytest.mark.parametrize("field", ["resourceClaimTemplateName", "resourceClaimName"])
@pytest.mark.parametrize("label", ["gpudra.io/max-gpus", "gpudra.io/max-vram"])
def test_a_claim_that_does_not_exist_yet_is_denied_where_a_cap_applies(field: str, label: str) -> None:
    # The bypass: `later` counted 0 at admission, then the tenant created an 8-GPU template under that name.
    api = RecordingApiServer({"capped": _namespace("capped", **{label: "2" if label.endswith("gpus") else "10Gi"})})
    admission = _admission(api, claims=Claims({}))
    pod = _dra_pod({"name": "gpu", field: "later"})
    for decide in (admission.mutate, admission.validate):
        with pytest.raises(AdmissionDenied) as denied:
            decide(parse_review(review_body(pod, namespace="capped")))
        assert denied.value.code == 403
        assert f"spec.resourceClaims[0].{field} 'later' does not exist yet" in denied.value.message
        assert f"namespace capped caps GPUs (label {label})" in denied.value.message
    assert api.templates == {}


def test_a_dry_run_of_a_translated_pod_passes_validation_though_its_template_was_not_created() -> None:
    # Mutation creates no template on a dry run, so the translated pod names one that does not exist at validation.
    api = RecordingApiServer({"capped": _namespace("capped", **{"gpudra.io/max-gpus": "2"})})
    admission = _admission(api, claims=Claims({}))
    pod = example("pod-legacy-1gpu.yaml")
    mutated = admission.mutate(parse_review(review_body(pod, namespace="capped", dry_run=True)))
    assert mutated["response"]["patch"] and api.templates == {}
    translated = _dra_pod({"name": "gpu", "resourceClaimTemplateName": "gpudra-0123456789"})
    answer = admission.validate(parse_review(review_body(translated, namespace="capped", dry_run=True)))
    assert answer["response"]["allowed"] is True


def test_a_claim_that_does_not_exist_yet_is_admitted_where_no_cap_applies() -> None:
    api = RecordingApiServer({"open": _namespace("open")})
    admission = _admission(api, claims=Claims({}))
    pod = _dra_pod({"name": "gpu", "resourceClaimTemplateName": "later"})
    assert admission.validate(parse_review(review_body(pod, namespace="open")))["response"]["allowed"] is True


def test_claim_demand_names_each_missing_entry() -> None:
    claims = Claims({("template", "two"): _spec(_exactly(2))})
    pod = _dra_pod(
        {"name": "a", "resourceClaimTemplateName": "two"},
        {"name": "b", "resourceClaimName": "gone"},
        {"name": "c", "resourceClaimTemplateName": "later"},
    )
    demand = claim_demand(pod, "team-a", claims)
    assert demand.devices == 2
    assert demand.missing == (
        "spec.resourceClaims[1].resourceClaimName 'gone'",
        "spec.resourceClaims[2].resourceClaimTemplateName 'later'",
    )


def test_gpu_memory_counts_the_devices_of_the_pods_own_claims() -> None:
    # 1 declared x 10Gi per device, but the template it names holds 8 devices: 80Gi against a 20Gi cap.
    api = RecordingApiServer({"small": _namespace("small", **{"gpudra.io/max-vram": "20Gi"})})
    admission = _admission(api, claims=Claims({("template", "eight"): _spec(_exactly(8))}))
    pod = _dra_pod({"name": "gpu", "resourceClaimTemplateName": "eight"})
    pod["metadata"]["annotations"] = {"gpudra.io/vram": "10Gi"}
    with pytest.raises(AdmissionDenied) as denied:
        admission.validate(parse_review(review_body(pod, namespace="small")))
    assert "the pod asks for 8 x 10Gi of GPU memory but namespace small allows at most 20Gi" in denied.value.message


def test_a_container_naming_a_claim_the_pod_lacks_is_denied_not_handed_the_gpu() -> None:
    pod = example("pod-legacy-1gpu.yaml")
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpudra"}]
    api = RecordingApiServer()
    with pytest.raises(AdmissionDenied) as denied:
        _admission(api).mutate(parse_review(review_body(pod)))
    assert denied.value.code == 400
    assert "spec.containers[0].resources.claims[0].name is 'gpudra'" in denied.value.message
    assert "names no entry of spec.resourceClaims" in denied.value.message
    assert api.templates == {}


def test_a_container_naming_a_claim_the_pod_has_is_fine() -> None:
    pod = _dra_pod({"name": "gpu", "resourceClaimTemplateName": "one"})
    answer = _admission(RecordingApiServer(), claims=Claims({("template", "one"): _spec(_exactly(1))})).validate(
        parse_review(review_body(pod))
    )
    assert answer["response"]["allowed"] is True


def test_a_review_for_a_namespace_that_does_not_exist_creates_nothing() -> None:
    api = ApiServer({"team-a": example("namespace-team-a.yaml")})
    admission = _admission(api)
    with pytest.raises(AdmissionDenied) as denied:
        admission.mutate(parse_review(review_body(example("pod-legacy-1gpu.yaml"), namespace="made-up")))
    assert denied.value.code == 404 and "namespace 'made-up' does not exist" in denied.value.message
    assert api.templates == {}
    admission.mutate(parse_review(review_body(example("pod-legacy-1gpu.yaml"), namespace="team-a")))
    assert [ns for ns, _ in api.templates] == ["team-a"]


def test_the_namespace_cache_is_bounded_in_entries_and_bytes_least_recently_used_out() -> None:
    api = ApiServer({"team-a": example("namespace-team-a.yaml")})
    cache = NamespaceCache(api, max_entries=50, max_bytes=4096)
    assert cache.get("team-a") is not None
    for i in range(2000):  # a forger's stream of distinct names
        cache.get(f"fake-{i}")
        if i % 10 == 0:
            cache.get("team-a")  # in use: stays cached
        entries, size = cache.size
        assert entries <= 50 and size <= 4096
    reads = api.namespace_reads
    cache.get("team-a")
    assert api.namespace_reads == reads  # still cached
    cache.get("fake-0")
    assert api.namespace_reads == reads + 1  # evicted long ago


def test_the_namespace_cache_refuses_bounds_below_one() -> None:
    with pytest.raises(ValueError, match="above 0"):
        NamespaceCache(ApiServer(), max_entries=0)
