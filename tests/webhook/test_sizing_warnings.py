"""Issue 22: what sizing could not read reaches the AdmissionReview's warnings in enforce mode too, and warnings
are bounded as kube-apiserver keeps them (256 characters each, 4,096 in all)."""

from __future__ import annotations

from typing import Any

from tests.webhook.test_admission import RecordingApiServer, admission, api, review_body  # noqa: F401 (fixtures)
from webhook.admission import Admission
from webhook.review import MAX_WARNING_CHARS, MAX_WARNINGS_TOTAL_CHARS, bounded_warnings, parse_review


def _expansion_bomb() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bomb", "namespace": "team-a"},
        "spec": {
            "containers": [
                {
                    "name": "server",
                    "image": "vllm/vllm-openai:v0.8.5",
                    "env": [{"name": "A", "value": "x" * 100_000}],
                    "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "$(A)" * 50],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        },
    }


def test_an_enforced_translation_says_sizing_was_cut(admission: Admission) -> None:  # noqa: F811
    out = admission.mutate(parse_review(review_body(_expansion_bomb())))
    response = out["response"]
    assert response["allowed"] is True and response.get("patch"), "the pod is still translated"
    warnings = response.get("warnings", [])
    assert any("server" in w and "KiB" in w for w in warnings), warnings
    assert all(len(w) <= MAX_WARNING_CHARS for w in warnings)


def test_a_pod_sizing_reads_whole_has_no_sizing_warning(admission: Admission) -> None:  # noqa: F811
    pod = _expansion_bomb()
    pod["spec"]["containers"][0]["args"] = ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
    response = admission.mutate(parse_review(review_body(pod)))["response"]
    assert not any("KiB" in w for w in response.get("warnings", []))


def test_warnings_are_cut_as_the_api_server_would_keep_them() -> None:
    long = "w" * 1000
    many = [f"warning {i} " + "z" * 200 for i in range(100)]
    kept = bounded_warnings([long, long, *many])
    assert kept[0].endswith("\u2026") and len(kept[0]) == MAX_WARNING_CHARS
    assert kept.count(kept[0]) == 1, "a repeated warning is said once"
    assert sum(map(len, kept)) <= MAX_WARNINGS_TOTAL_CHARS
    assert kept[1:] == many[: len(kept) - 1], "order kept, the tail dropped"
    assert bounded_warnings(["short"]) == ["short"]
