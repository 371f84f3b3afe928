"""AdmissionReview v1 parsing and responses, as plain dicts."""

from __future__ import annotations

import base64
import json

import pytest

from webhook.review import AdmissionDenied, BadReview, allowed_response, denied_response, parse_review


def review(**request: object) -> bytes:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", **request}}
    return json.dumps(body).encode()


def test_parses_a_pod_review_and_ignores_unknown_fields() -> None:
    req = parse_review(
        review(
            kind={"group": "", "version": "v1", "kind": "Pod"},
            resource={"group": "", "version": "v1", "resource": "pods"},
            namespace="ml",
            operation="CREATE",
            dryRun=True,
            object={"kind": "Pod"},
            somethingNew={"x": 1},
        )
    )
    assert req.uid == "u-1" and req.namespace == "ml" and req.dry_run and req.is_pod
    assert req.object == {"kind": "Pod"} and req.old_object is None


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1]", 400, "must be a JSON object"),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}).encode(), 400, "kind must be"),
        (json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}).encode(), 400, "apiVersion"),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), 400, "'request'"),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(),
            400,
            "request.uid",
        ),
        (review(object=[1, 2]), 400, "request.object"),
        (b"\xff\xfe", 400, "not valid JSON"),
    ],
)
def test_malformed_reviews_name_the_problem(body: bytes, status: int, reason: str) -> None:
    with pytest.raises(BadReview, match=reason) as info:
        parse_review(body)
    assert info.value.status == status


def test_oversized_body_is_413() -> None:
    with pytest.raises(BadReview) as info:
        parse_review(b" " * 101, max_bytes=100)
    assert info.value.status == 413 and "exceeds the limit" in info.value.reason


def test_allowed_response_encodes_patch_as_base64_json_patch() -> None:
    patch = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]
    out = allowed_response("u-1", patch=patch, warnings=["w"])
    resp = out["response"]
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert resp["uid"] == "u-1" and resp["allowed"] is True and resp["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(resp["patch"])) == patch
    assert resp["warnings"] == ["w"]
    assert "patch" not in allowed_response("u-2")["response"]


def test_denied_response_carries_code_and_message() -> None:
    out = denied_response("u-9", AdmissionDenied("too many GPUs", code=403, warnings=["x"]))
    resp = out["response"]
    assert resp == {
        "uid": "u-9",
        "allowed": False,
        "status": {"code": 403, "message": "too many GPUs", "reason": "Forbidden"},
        "warnings": ["x"],
    }


def test_the_uid_is_read_off_the_start_of_a_review_without_parsing_it() -> None:
    from webhook.review import pod_review, sniff_uid

    body = pod_review({"metadata": {"name": "p"}, "spec": {"containers": []}}, uid="0b3c-9f:x.1")
    assert sniff_uid(body) == "0b3c-9f:x.1"
    go_order = b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"abc-1","kind":{}}}'
    assert sniff_uid(go_order) == "abc-1"
    assert sniff_uid(b'{"request":{"kind":{},"uid":"abc"}}') is None  # not the first key: not guessed
    assert sniff_uid(b'{"request":{"uid":"a\\"b"}}') is None  # an escaped quote: not a uid we would echo
    assert sniff_uid(b" " * 5000 + b'{"request":{"uid":"late"}}') is None  # past the first 4 KiB


@pytest.mark.parametrize(
    "text",
    [
        'echo "quoted" \\ back\\slash \\u00e9 \\ud7ff \\ue000',  # escapes, none a surrogate
        "한국어 \ud7a3 \ue000",  # characters whose UTF-8 starts with 0xED, none a surrogate
    ],
    ids=["escapes", "utf8-ed-lead-byte"],
)
def test_text_that_only_resembles_a_surrogate_is_parsed(text: str) -> None:
    body = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", "name": text}},
        ensure_ascii=text.isascii(),
    ).encode()
    assert b"\\" in body or b"\xed" in body  # the cheap pre-check finds its byte and the pattern must then decide
    assert parse_review(body).name == json.loads(body)["request"]["name"]
