"""Where templates may go: the review's namespace, which must be named and agree with the pod's; never an exempt
namespace (kube-system and friends, gpudra's own), whoever sends the review."""

from __future__ import annotations

import json

import pytest

from kubeapi import NamespaceCache
from policyengine import PolicySet, load_policies, shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import BadReview, parse_review


def _admission(api: RecordingApiServer, **kw: object) -> Admission:
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    return Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api), **kw)  # type: ignore[arg-type]


def test_a_review_naming_kube_system_creates_nothing_and_is_left_alone() -> None:
    api = RecordingApiServer()
    answer = _admission(api).mutate(parse_review(review_body(example("pod-legacy-vram.yaml"), namespace="kube-system")))
    assert answer["response"]["allowed"] is True and "patch" not in answer["response"]
    assert api.templates == {}


def test_gpudras_own_namespace_can_be_exempted() -> None:
    api = RecordingApiServer()
    admission = _admission(api, exempt_namespaces=frozenset({"gpudra-system"}))
    admission.mutate(parse_review(review_body(example("pod-legacy-vram.yaml"), namespace="gpudra-system")))
    assert api.templates == {}


def test_a_pod_whose_namespace_disagrees_with_the_review_is_a_bad_request() -> None:
    api = RecordingApiServer()
    body = json.loads(review_body(example("pod-legacy-vram.yaml"), namespace="team-a"))
    body["request"]["object"]["metadata"]["namespace"] = "kube-system"  # a forged review: the API server refuses this
    with pytest.raises(BadReview, match="'request.object.metadata.namespace' is 'kube-system'"):
        _admission(api).mutate(parse_review(json.dumps(body).encode()))
    assert api.templates == {}


def test_a_pod_review_without_a_namespace_is_a_bad_request() -> None:
    body = json.loads(review_body(example("pod-legacy-vram.yaml")))
    del body["request"]["namespace"]
    with pytest.raises(BadReview, match="'request.namespace' is required"):
        _admission(RecordingApiServer()).mutate(parse_review(json.dumps(body).encode()))


def test_templates_go_to_the_reviews_namespace() -> None:
    api = RecordingApiServer()
    _admission(api).mutate(parse_review(review_body(example("pod-legacy-vram.yaml"), namespace="team-a")))
    assert {ns for ns, _ in api.templates} == {"team-a"}
