"""Sizes no quantity of bytes can hold, and containers too big to read, reach the decision as clean denials and
warnings naming the field: never an exception out of the policy engine (a traceback per review)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from dra import quantity as quantity_module
from dra import sizing as dra_sizing
from dra.errors import InputError
from dra.quantity import Quantity
from dra.sizing import ObservedSizing, resolve_sizing
from gpudra.render.policy import explanation
from policyengine import load_policies, pod_facts, shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, review_body
from tests.webhook.test_admission_namespaces import _admission
from webhook.admission import Admission
from webhook.review import AdmissionDenied, parse_review

POLICIES = load_policies(shipped_policies_dir())


def _pod(annotations: dict[str, str] | None = None, **container: Any) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": 1, **container.pop("limits", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a", "annotations": annotations or {}},
        "spec": {"containers": [{"name": "app", "image": "app", "resources": {"limits": limits}, **container}]},
    }


@pytest.fixture(scope="module")
def admission() -> Admission:
    return _admission(RecordingApiServer())


@pytest.mark.parametrize("vram", ["1e400", "9Ei", "8589934592Gi"])
def test_a_vram_annotation_beyond_any_quantity_of_bytes_is_denied_naming_it(
    vram: str, admission: Admission, caplog: pytest.LogCaptureFixture
) -> None:
    decision = POLICIES.evaluate(_pod({"gpudra.io/vram": vram}))
    assert not decision.allowed and decision.reason == "Invalid"
    assert f"metadata.annotations[gpudra.io/vram]: {vram!r} is more memory than a quantity of bytes holds" in (
        decision.message
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(AdmissionDenied) as denied:
        admission.mutate(parse_review(review_body(_pod({"gpudra.io/vram": vram}))))
    assert "gpudra.io/vram" in denied.value.message
    assert not [r for r in caplog.records if r.exc_info], "a denial, not a logged traceback"


def test_the_largest_size_a_quantity_holds_is_still_read() -> None:
    for beyond in ("8Ei", str(dra_sizing.MAX_MEMORY_BYTES + 1)):  # 8Ei = 2**63 bytes: past an int64
        with pytest.raises(InputError, match="more memory than a quantity of bytes holds"):
            pod_facts(_pod({"gpudra.io/vram": beyond}))
    sizing = pod_facts(_pod({"gpudra.io/vram": str(dra_sizing.MAX_MEMORY_BYTES)})).containers[0].sizing
    assert sizing.vram_bytes == dra_sizing.MAX_MEMORY_BYTES and sizing.source == "annotation"
    assert pod_facts(_pod({"gpudra.io/vram": str(dra_sizing.MAX_MEMORY_BYTES)})).to_cel()["sizing"]["vramBytes"] < 2**63


def test_a_huge_vram_annotation_text_is_quoted_short() -> None:
    text = "1" + "0" * 5000  # more digits than Python's int() reads: not a quantity
    sizing = pod_facts(_pod({"gpudra.io/vram": text})).containers[0].sizing
    assert sizing.vram_bytes is None and "not a positive quantity" in sizing.reason
    assert len(sizing.reason) < 300 and "(5001 characters)" in sizing.reason


def test_a_hami_gpumem_beyond_any_quantity_of_bytes_is_denied_naming_it() -> None:
    decision = POLICIES.evaluate(_pod(limits={"nvidia.com/gpumem": "1e400"}))
    assert not decision.allowed
    assert "limits[nvidia.com/gpumem]" in decision.message and "expected a whole number of MiB" in decision.message


def test_an_observed_recommendation_beyond_any_quantity_of_bytes_is_ignored() -> None:
    huge = ObservedSizing(10**400, 10**400, 100, 3600, "2025-01-01T00:00:00Z", source_ref="rec a/b")
    decision = resolve_sizing(None, huge, None, None)
    assert decision.source == "default" and "beyond" in decision.reason and "ignored" in decision.reason


def test_a_container_too_big_to_read_is_sized_from_what_fits_and_says_so() -> None:
    pod = _pod(
        image="vllm/vllm-openai:v0.8.5",
        env=[{"name": "A", "value": "x" * 100_000}],
        args=["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "$(A)" * 6000],
    )
    facts = pod_facts(pod)
    sizing = facts.containers[0].sizing
    assert sizing.source == "model" and sizing.model == "meta-llama/Llama-3.1-8B"  # the catalog row
    assert sizing.warnings and sizing.reason.startswith(sizing.warnings[0])
    assert facts.warnings == (f"container 'app': {sizing.warnings[0]}",)
    assert "first 64 KiB" in facts.to_cel()["containers"][0]["sizing"]["reason"]
    decision = POLICIES.evaluate(pod)
    assert decision.allowed
    explained = explanation(pod, POLICIES, decision)
    assert "sizing app: source model, vram 20996Mi: sizing read only the first 64 KiB" in explained


def test_long_quantity_texts_are_not_kept_by_the_parse_memo() -> None:
    text = "0" * 100_000 + "1"  # a valid quantity (leading zeros), as long as an annotation may be
    assert Quantity.parse(text).value == 1
    assert text not in quantity_module._PARSED
    assert "1500m" in quantity_module._PARSED or Quantity.parse("1500m") is Quantity.parse("1500m")
