"""Translations reused across decision-cache misses (`Admission._translate`, `translation_key`): pods that differ only
where translate does not read share one; pods that differ where it reads get their own answer, the answer a webhook
without any reuse gives."""

from __future__ import annotations

import copy
from typing import Any

from policyengine import load_policies, shipped_policies_dir
from policyengine.translate import translate, translation_key
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import encoded_patch, parse_review, pod_review


def _pod(**spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": {"containers": [container], **spec},
    }


def _variants() -> dict[str, dict[str, Any]]:
    """Pods with the same decision, each unlike the first in one thing translate reads."""
    base = _pod()
    out: dict[str, dict[str, Any]] = {"base": base}
    annotated = copy.deepcopy(base)
    annotated["metadata"]["annotations"] = {"team": "a"}
    out["annotations"] = annotated
    out["claims_list_empty"] = _pod(resourceClaims=[])
    out["claim_entry_taken"] = _pod(resourceClaims=[{"name": "gpudra", "resourceClaimName": "mine"}])
    requests = copy.deepcopy(base)
    requests["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": 1}
    out["requests_too"] = requests
    cpu = copy.deepcopy(base)
    cpu["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"
    out["limits_kept_in_part"] = cpu
    # HAMi resources no policy reads: the same decision, a warning that names each value
    for name, value in {"hami_cores": 50, "hami_other_cores": 30}.items():
        hami = copy.deepcopy(base)
        hami["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"] = value
        out[name] = hami
    second = copy.deepcopy(base)
    second["spec"]["containers"].insert(0, {"name": "side", "image": "i"})
    out["other_index"] = second
    return out


def _renamed(pod: dict[str, Any], n: int) -> dict[str, Any]:
    """`pod` under another name and label: what each replica's pod differs in, never read by translate."""
    other = copy.deepcopy(pod)
    other["metadata"]["name"] = f"p-{n}"
    other["metadata"].setdefault("labels", {})["seq"] = str(n)
    return other


def _admission(cache_size: int) -> Admission:
    return Admission(PolicyStore(shipped_policies_dir(), load_policies), WebhookMetrics(), cache_size=cache_size)


def _answer(admission: Admission, pod: dict[str, Any], uid: str) -> dict[str, Any]:
    return admission.mutate(parse_review(pod_review(pod, uid=uid)))


def test_pods_unlike_where_translate_reads_get_the_answers_of_a_webhook_without_reuse() -> None:
    variants = _variants()
    shared = _admission(1024)
    patches: set[tuple[str, tuple[str, ...]]] = set()
    for round_ in range(2):  # each variant once after every other has left a translation behind
        for n, (name, pod) in enumerate(variants.items() if round_ == 0 else reversed(variants.items())):
            renamed = _renamed(pod, 100 * round_ + n)
            alone = _answer(_admission(0), renamed, "u")
            reused = _answer(shared, renamed, "u")
            assert reused == alone, name
            assert alone["response"].get("patch"), name  # translated, not left alone or denied
            patches.add((alone["response"]["patch"], tuple(alone["response"].get("warnings", ()))))
    assert len(patches) == len(variants)  # each variant is a case of its own (a patch or a warning)
    # one translation per variant, reused by its second pod (a decision-cache miss: another name)
    assert len(shared._translations) == len(variants)


def test_the_key_is_equal_only_where_translate_reads_nothing_else() -> None:
    policies = load_policies(shipped_policies_dir())
    keys = {}
    for name, pod in _variants().items():
        decision = policies.evaluate(pod, None, {"namespace": "team-a"})
        key = translation_key(pod, decision)
        assert key is not None, name
        renamed = _renamed(pod, 7)
        assert translation_key(renamed, policies.evaluate(renamed, None, {"namespace": "team-a"})) == key, name
        keys[name] = key
        reused = translate(pod, decision)
        assert reused.patch == translate(renamed, decision).patch, name
    assert len(set(keys.values())) == len(keys)


def test_untranslatable_shapes_are_not_keyed_and_fail_as_before() -> None:
    policies = load_policies(shipped_policies_dir())
    pod = _pod()
    decision = policies.evaluate(pod, None, {"namespace": "team-a"})
    other = copy.deepcopy(pod)
    other["spec"]["containers"][0]["name"] = "not-c"
    assert translation_key(other, decision) is None
    shapes: list[Any] = [{"limits": []} and "not an object", ["a list"]]
    for resources in shapes:
        odd = copy.deepcopy(pod)
        odd["spec"]["containers"][0]["resources"] = resources
        assert translation_key(odd, decision) is None


def test_hami_values_no_policy_describes_are_keyed() -> None:
    """A decision whose warnings do not describe a HAMi resource: translate warns with its value itself."""
    policies = load_policies(shipped_policies_dir())
    decision = policies.evaluate(_pod(), None, {"namespace": "team-a"})
    pods = []
    for value in (50, 30):
        pod = _pod()
        pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"] = value
        pods.append(pod)
    alone = [translate(pod, decision) for pod in pods]
    assert alone[0].warnings != alone[1].warnings
    assert translation_key(pods[0], decision) != translation_key(pods[1], decision)
    shared = _admission(1024)
    for pod, expected in zip(pods, alone, strict=True):
        reused, encoded = shared._translate(pod, decision)
        assert encoded == encoded_patch(expected.patch)
        assert (reused.templates, reused.patch, reused.warnings) == (
            expected.templates,
            expected.patch,
            expected.warnings,
        )
        assert reused.source is pod
