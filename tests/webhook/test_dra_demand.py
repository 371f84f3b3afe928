"""GPU devices a pod asks for through its own ResourceClaims and templates count against namespace caps."""

from __future__ import annotations

from typing import Any

import pytest

from kubeapi import ApiServerError
from policyengine.pod_shape import MAX_DEVICES_PER_CLAIM
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from tests.webhook.test_admission_namespaces import _admission
from webhook.admission import Admission
from webhook.dra_demand import claimed_gpu_devices, spec_gpu_devices
from webhook.review import AdmissionDenied, parse_review


def _spec(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"requests": list(requests)}}


def _exactly(count: int | None = None, cls: str = "gpu.nvidia.com", mode: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if count is not None:
        exactly["count"] = count
    if mode is not None:
        exactly["allocationMode"] = mode
    return {"name": "r", "exactly": exactly}


@pytest.mark.parametrize(
    ("spec", "devices"),
    [
        (_spec(_exactly(8)), 8),
        (_spec(_exactly()), 1),
        (_spec(_exactly(2), _exactly(3, "mig.nvidia.com")), 5),
        (_spec(_exactly(4, "nic.example.com")), 0),
        (_spec(_exactly(mode="All")), MAX_DEVICES_PER_CLAIM),
        (_spec({"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com", "count": 2},
                                                {"name": "b", "deviceClassName": "mig.nvidia.com", "count": 6}]}), 6),
        ({}, 0),
    ],
)  # fmt: skip
def test_what_a_claim_spec_counts(spec: dict[str, Any], devices: int) -> None:
    assert spec_gpu_devices(spec) == devices


class Claims:
    def __init__(self, specs: dict[tuple[str, str], dict[str, Any]], *, fail: bool = False) -> None:
        self.specs = specs
        self.fail = fail
        self.reads: list[tuple[str, str, str]] = []

    def read_claim_spec(self, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        self.reads.append((namespace, kind, name))
        if self.fail:
            raise ApiServerError("could not read template: API server answered 500")
        return self.specs.get((kind, name))


def _dra_pod(*entries: dict[str, str]) -> dict[str, Any]:
    pod = example("pod-already-dra.yaml")
    pod["spec"]["resourceClaims"] = list(entries)
    return pod


def test_claims_and_templates_are_read_in_the_pods_namespace() -> None:
    claims = Claims({("template", "eight"): _spec(_exactly(8)), ("claim", "shared"): _spec(_exactly(1))})
    pod = _dra_pod(
        {"name": "a", "resourceClaimTemplateName": "eight"},
        {"name": "b", "resourceClaimName": "shared"},
        {"name": "c", "resourceClaimTemplateName": "missing"},
    )
    assert claimed_gpu_devices(pod, "team-a", claims) == 9
    assert claims.reads == [
        ("team-a", "template", "eight"),
        ("team-a", "claim", "shared"),
        ("team-a", "template", "missing"),
    ]


def _capped(api: RecordingApiServer, claims: Claims) -> Admission:
    return _admission(api, claims=claims)


def test_a_users_own_template_is_counted_against_the_cap() -> None:
    api = RecordingApiServer()
    api.namespaces["team-a"] = {"metadata": {"name": "team-a", "labels": {"gpudra.io/max-gpus": "2"}}}
    admission = _capped(api, Claims({("template", "eight"): _spec(_exactly(8))}))
    pod = _dra_pod({"name": "gpu", "resourceClaimTemplateName": "eight"})
    with pytest.raises(AdmissionDenied) as denied:
        admission.validate(parse_review(review_body(pod)))
    assert denied.value.code == 403 and "asks for 8 GPU devices" in denied.value.message
    small = _capped(api, Claims({("template", "eight"): _spec(_exactly(2))}))
    assert small.validate(parse_review(review_body(pod)))["response"]["allowed"] is True


def test_an_unreadable_claim_denies_instead_of_skipping_the_cap() -> None:
    admission = _capped(RecordingApiServer(), Claims({}, fail=True))
    pod = _dra_pod({"name": "gpu", "resourceClaimTemplateName": "eight"})
    with pytest.raises(AdmissionDenied) as denied:
        admission.validate(parse_review(review_body(pod)))
    assert denied.value.code == 503 and "cannot read the pod's ResourceClaims" in denied.value.message
