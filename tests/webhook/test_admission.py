"""The admission core as a function of review dicts: mutate/validate with the shipped policies.

The API server side is an in-memory `TemplateWriter` that records what would be created; the e2e tests
(tests/e2e/test_webhook_e2e.py) run the same code against the real kube-apiserver.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from kubeapi import ApiServerError, NamespaceCache, TemplateResult
from policyengine import PolicySet, load_policies, shipped_policies_dir
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import AdmissionDenied, BadReview, parse_review, pod_review

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class RecordingApiServer:
    def __init__(self, namespaces: dict[str, dict[str, Any]] | None = None, fail: str | None = None) -> None:
        self.templates: dict[tuple[str, str], dict[str, Any]] = {}
        self.namespaces = namespaces or {}
        self.fail = fail
        self.namespace_reads = 0

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        if self.fail:
            raise ApiServerError(self.fail)
        key = (namespace, template["metadata"]["name"])
        existed = key in self.templates
        self.templates[key] = template
        return TemplateResult(key[1], namespace, created=not existed)

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        self.namespace_reads += 1
        return self.namespaces.get(name, {"metadata": {"name": name}})

    def reachable(self) -> tuple[bool, str]:
        return True, "in memory"


def example(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    assert isinstance(doc, dict)
    return doc


def review_body(pod: dict[str, Any], *, namespace: str = "team-a", dry_run: bool = False, uid: str = "u-1") -> bytes:
    return pod_review(pod, uid=uid, namespace=namespace, dry_run=dry_run)


@pytest.fixture
def api() -> RecordingApiServer:
    return RecordingApiServer(
        {
            "team-a": example("namespace-team-a.yaml"),
            "team-b": example("namespace-audit.yaml"),
        }
    )


@pytest.fixture
def admission(api: RecordingApiServer) -> Admission:
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    return Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api))


def decoded_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["response"]["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["response"]["patch"]))
    assert isinstance(patch, list)
    return patch


def test_enforce_mutates_and_creates_the_template_first(admission: Admission, api: RecordingApiServer) -> None:
    pod = example("pod-legacy-vram.yaml")
    out = admission.mutate(parse_review(review_body(pod)))
    assert out["response"]["uid"] == "u-1" and out["response"]["allowed"] is True
    mutated = jsonpatch.apply_patch(copy.deepcopy(pod), decoded_patch(out))
    template_name = mutated["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert ("team-a", template_name) in api.templates
    resources = mutated["spec"]["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in resources["limits"] and "nvidia.com/gpu" not in resources["requests"]
    # Re-invocation with the mutated pod changes nothing more (reinvocationPolicy: IfNeeded).
    again = admission.mutate(parse_review(review_body(mutated, uid="u-2")))
    assert "patch" not in again["response"]
    samples = admission.metrics.registry.get_sample_value(
        "gpudra_admission_reviews_total",
        {"endpoint": "mutate", "operation": "CREATE", "policy": "right-size", "outcome": "mutated"},
    )
    assert samples == 1.0


def test_dry_run_returns_the_same_patch_but_creates_nothing(admission: Admission, api: RecordingApiServer) -> None:
    pod = example("pod-legacy-vram.yaml")
    dry = admission.mutate(parse_review(review_body(pod, dry_run=True)))
    assert api.templates == {}
    real = admission.mutate(parse_review(review_body(pod)))
    assert decoded_patch(dry) == decoded_patch(real) and len(api.templates) == 1


def test_template_failure_denies_instead_of_admitting_half_translated(api: RecordingApiServer) -> None:
    broken = RecordingApiServer(api.namespaces, fail="API server answered 500")
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    admission = Admission(store, WebhookMetrics(), writer=broken, namespaces=NamespaceCache(broken))
    with pytest.raises(AdmissionDenied, match="not admitted half-translated") as info:
        admission.mutate(parse_review(review_body(example("pod-legacy-vram.yaml"))))
    assert info.value.code == 503


def test_guardrail_denial_carries_the_policy_message(admission: Admission) -> None:
    with pytest.raises(AdmissionDenied) as info:
        admission.mutate(parse_review(review_body(example("pod-mixed.yaml"))))
    assert "guardrails" in info.value.message and info.value.code == 403
    with pytest.raises(AdmissionDenied):
        admission.validate(parse_review(review_body(example("pod-mixed.yaml"))))


def test_audit_namespace_annotates_instead_of_mutating(admission: Admission, api: RecordingApiServer) -> None:
    pod = example("pod-legacy-vram.yaml")
    pod["metadata"]["namespace"] = "team-b"
    out = admission.mutate(parse_review(review_body(pod, namespace="team-b")))
    patch = decoded_patch(out)
    assert all(op["path"].startswith("/metadata/annotations") for op in patch)
    mutated = jsonpatch.apply_patch(copy.deepcopy(pod), patch)
    would = json.loads(mutated["metadata"]["annotations"]["gpudra.io/would-translate"])
    assert would["template"].startswith("gpudra-")
    assert mutated["spec"] == pod["spec"] and api.templates == {}
    assert any(w.startswith("audit:") for w in out["response"]["warnings"])
    assert set(out["response"]["auditAnnotations"]) == {"would-translate"}


def test_non_pod_and_non_create_reviews_are_allowed_untouched(admission: Admission) -> None:
    body = json.loads(review_body(example("pod-legacy-vram.yaml")))
    body["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
    body["request"]["resource"] = {"group": "apps", "version": "v1", "resource": "deployments"}
    out = admission.mutate(parse_review(json.dumps(body).encode()))
    assert out["response"] == {"uid": "u-1", "allowed": True}
    body = json.loads(review_body(example("pod-legacy-vram.yaml")))
    body["request"]["operation"] = "UPDATE"
    assert "patch" not in admission.mutate(parse_review(json.dumps(body).encode()))["response"]


def test_pod_review_without_object_is_a_bad_request(admission: Admission) -> None:
    body = json.loads(review_body(example("pod-legacy-vram.yaml")))
    del body["request"]["object"]
    with pytest.raises(BadReview, match="request.object"):
        admission.mutate(parse_review(json.dumps(body).encode()))


def test_namespace_objects_are_cached(admission: Admission, api: RecordingApiServer) -> None:
    pod = example("pod-legacy-1gpu.yaml")
    for uid in ("a", "b", "c"):
        admission.mutate(parse_review(review_body(pod, namespace=pod["metadata"].get("namespace", "team-a"), uid=uid)))
    assert api.namespace_reads == 1


def _fresh_admission(api: RecordingApiServer) -> Admission:
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    return Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api), cache_size=0)


def _answer(admission: Admission, body: bytes) -> dict[str, Any]:
    try:
        return admission.mutate(parse_review(body))
    except AdmissionDenied as denial:
        return {"denied": denial.message, "code": denial.code, "warnings": denial.warnings}


def _replica(vram: str = "8Gi") -> dict[str, Any]:
    pod = example("pod-legacy-vram.yaml")
    pod["metadata"].pop("name", None)
    pod["metadata"]["generateName"] = "web-"
    pod["metadata"]["annotations"]["gpudra.io/vram"] = vram
    return pod


def test_identical_replicas_share_one_cached_decision(
    admission: Admission, api: RecordingApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    evaluate = PolicySet.evaluate
    monkeypatch.setattr(PolicySet, "evaluate", lambda self, *a, **k: calls.append(1) or evaluate(self, *a, **k))
    first = admission.mutate(parse_review(review_body(_replica(), uid="u-1")))
    second = admission.mutate(parse_review(review_body(_replica(), uid="u-2")))
    assert len(calls) == 1
    assert second["response"]["uid"] == "u-2" and first["response"]["uid"] == "u-1"
    assert decoded_patch(first) == decoded_patch(second)
    assert len(api.templates) == 1
    # Side effects still run per review: the second one finds the template there.
    assert admission.metrics.templates_created.labels("existing")._value.get() == 1


def test_a_large_pods_decision_is_not_cached_so_a_burst_of_them_leaves_nothing_behind(
    admission: Admission, api: RecordingApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webhook.admission import UNCACHED_INPUT_BYTES

    calls = []
    evaluate = PolicySet.evaluate
    monkeypatch.setattr(PolicySet, "evaluate", lambda self, *a, **k: calls.append(1) or evaluate(self, *a, **k))
    large = _replica()
    large["spec"]["containers"][0]["env"] = [{"name": f"V{i}", "value": "v" * 1000} for i in range(300)]
    first = admission.mutate(parse_review(review_body(large, uid="u-1")))
    second = admission.mutate(parse_review(review_body(large, uid="u-2")))
    assert len(review_body(large)) > UNCACHED_INPUT_BYTES
    assert len(calls) == 2 and len(admission._cache) == 0  # decided each time, never kept
    assert decoded_patch(first) == decoded_patch(second) and decoded_patch(first)
    admission.mutate(parse_review(review_body(_replica(), uid="u-3")))
    assert len(admission._cache) == 1  # an ordinary pod's decision is


def test_a_large_pods_inputs_are_not_written_out_for_a_key_never_stored(
    admission: Admission, api: RecordingApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37 row 7: the key's text of a 2.5 MB pod took 31 ms of the C encoder, holding the GIL that ordinary
    reviews wait for, on every large review, though a decision of that size is never cached. A body past the bound
    whose pod's text is not (padding between the tokens) is still keyed and cached, as before."""
    from webhook.admission import UNCACHED_INPUT_BYTES

    keys = []
    key = Admission._key

    def counted(self: Admission, *args: Any) -> tuple[bytes, int] | None:
        keys.append(1)
        return key(self, *args)

    monkeypatch.setattr(Admission, "_key", counted)
    large = _replica()
    large["spec"]["containers"][0]["env"] = [{"name": f"V{i}", "value": "v" * 1000} for i in range(300)]
    first = admission.mutate(parse_review(review_body(large, uid="u-1")))
    assert keys == [] and len(admission._cache) == 0 and decoded_patch(first)
    padded = review_body(_replica(), uid="u-2").replace(b'"request":', b'"request":' + b" " * UNCACHED_INPUT_BYTES)
    review = parse_review(padded, max_bytes=2 * UNCACHED_INPUT_BYTES)
    assert review.body_bytes > UNCACHED_INPUT_BYTES
    admission.mutate(review)
    assert keys == [1] and len(admission._cache) == 1


def test_any_input_change_misses_the_cache(
    admission: Admission, api: RecordingApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    evaluate = PolicySet.evaluate
    monkeypatch.setattr(PolicySet, "evaluate", lambda self, *a, **k: calls.append(1) or evaluate(self, *a, **k))
    admission.mutate(parse_review(review_body(_replica())))
    variants = [
        review_body(_replica("20Gi")),  # the pod
        review_body(_replica(), namespace="team-b"),  # the namespace (and its object)
        review_body(_replica(), dry_run=True),  # the request info
    ]
    for n, body in enumerate(variants, start=2):
        admission.mutate(parse_review(body))
        assert len(calls) == n
    api.namespaces["team-a"] = {"metadata": {"name": "team-a", "labels": {"gpudra.io/mode": "audit"}}}
    admission.namespaces = NamespaceCache(api)  # a changed namespace object, same name
    audited = admission.mutate(parse_review(review_body(_replica())))
    assert len(calls) == 5 and "auditAnnotations" in audited["response"]


def test_the_cache_is_invisible_in_the_answers() -> None:
    namespaces = {"team-a": example("namespace-team-a.yaml"), "team-b": example("namespace-audit.yaml")}
    cached_api, fresh_api = RecordingApiServer(dict(namespaces)), RecordingApiServer(dict(namespaces))
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    cached = Admission(store, WebhookMetrics(), writer=cached_api, namespaces=NamespaceCache(cached_api), cache_size=3)
    fresh = _fresh_admission(fresh_api)
    pods = [_replica(v) for v in ("8Gi", "20Gi", "bogus")] + [
        example("pod-vllm-tp4.yaml"),
        example("pod-legacy-1gpu.yaml"),
    ]
    too_many = example("pod-legacy-1gpu.yaml")
    too_many["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 64
    pods.append(too_many)
    import random

    rng = random.Random(5)
    for i in range(120):
        pod = copy.deepcopy(rng.choice(pods))
        body = review_body(
            pod, namespace=rng.choice(["team-a", "team-b", "other"]), dry_run=rng.random() < 0.2, uid=f"u-{i}"
        )
        assert _answer(cached, body) == _answer(fresh, body)
    assert len(cached._cache) <= 3
    assert cached_api.templates == fresh_api.templates


def test_a_policy_reading_the_uid_keeps_it_in_the_key(tmp_path: Path) -> None:
    (tmp_path / "uid.yaml").write_text(
        """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: uid}
spec:
  matchConditions:
  - {name: legacy, expression: gpu.legacy}
  validations:
  - expression: "false"
    messageExpression: "'review ' + request.uid"
"""
    )
    store: PolicyStore[PolicySet] = PolicyStore(tmp_path, load_policies)
    admission = Admission(store, WebhookMetrics())
    messages = []
    for uid in ("u-1", "u-2"):
        with pytest.raises(AdmissionDenied) as denied:
            admission.mutate(parse_review(review_body(_replica(), uid=uid)))
        messages.append(denied.value.message)
    assert "review u-1" in messages[0] and "review u-2" in messages[1]


def test_the_same_pod_with_keys_in_another_order_gets_the_same_answer(admission: Admission) -> None:
    pod = _replica()
    reordered = {k: pod[k] for k in reversed(list(pod))}
    reordered["metadata"] = {k: pod["metadata"][k] for k in reversed(list(pod["metadata"]))}
    first = admission.mutate(parse_review(review_body(pod, uid="u-1")))
    second = admission.mutate(parse_review(review_body(reordered, uid="u-2")))
    assert decoded_patch(first) == decoded_patch(second)
    assert first["response"].get("warnings") == second["response"].get("warnings")
