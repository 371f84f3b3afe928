"""The HTTP face: status codes and bodies of every endpoint, through FastAPI's test client."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import jsonpatch
import pytest
from starlette.testclient import TestClient

from pki import write_dev_certificates
from policyengine import shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.server import ServeSettings, build_app


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    target = tmp_path / "policies"
    shutil.copytree(shipped_policies_dir(), target, ignore=shutil.ignore_patterns("tests"))
    return target


@pytest.fixture
def client(policy_dir: Path, tmp_path: Path) -> TestClient:
    write_dev_certificates(tmp_path / "certs", ["localhost"])
    settings = ServeSettings(
        policies=str(policy_dir),
        cert=str(tmp_path / "certs" / "tls.crt"),
        key=str(tmp_path / "certs" / "tls.key"),
        enable_echo=True,
        max_body_bytes=64 * 1024,
    )
    api = RecordingApiServer({"team-a": example("namespace-team-a.yaml")})
    return TestClient(build_app(settings, writer=api))


def test_mutate_echoes_uid_and_patches(client: TestClient) -> None:
    resp = client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml"), uid="abc"))
    assert resp.status_code == 200
    body = resp.json()
    assert body["kind"] == "AdmissionReview" and body["response"]["uid"] == "abc"
    assert body["response"]["allowed"] is True and body["response"]["patchType"] == "JSONPatch"


def test_denial_is_http_200_with_status(client: TestClient) -> None:
    resp = client.post("/validate", content=review_body(example("pod-mixed.yaml")))
    assert resp.status_code == 200
    status = resp.json()["response"]["status"]
    assert resp.json()["response"]["allowed"] is False and status["code"] == 403 and "guardrails" in status["message"]


@pytest.mark.parametrize(
    ("body", "status"),
    [(b"{", 400), (b'{"kind": "Pod"}', 400), (json.dumps({"x": "y" * 70000}).encode(), 413)],
)
def test_malformed_bodies_are_4xx_with_reason(client: TestClient, body: bytes, status: int) -> None:
    resp = client.post("/mutate", content=body)
    assert resp.status_code == status and resp.json()["error"]


def test_health_readiness_and_metrics(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    checks = ready.json()["checks"]
    assert set(checks) == {"policies", "policyReload", "certificate", "apiserver"} and all(
        c["ok"] for c in checks.values()
    )
    assert "right-size" in checks["policies"]["detail"]
    client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml")))
    text = client.get("/metrics").text
    labels = 'endpoint="mutate",operation="CREATE",outcome="mutated",policy="right-size"'
    assert f"gpudra_admission_reviews_total{{{labels}}} 1.0" in text
    assert "gpudra_serving_certificate_expiry_timestamp_seconds" in text
    assert "gpudra_admission_review_duration_seconds_bucket" in text


def test_echo_baseline_allows_without_patch(client: TestClient) -> None:
    resp = client.post("/echo", content=review_body(example("pod-legacy-vram.yaml"), uid="e"))
    assert resp.json()["response"] == {"uid": "e", "allowed": True}


@pytest.mark.parametrize("annotations", [None, {"team": "a"}])
def test_echo_patch_baseline_adds_one_annotation_and_nothing_else(
    client: TestClient, annotations: dict[str, str] | None
) -> None:
    pod = example("pod-legacy-vram.yaml")
    pod["metadata"].pop("annotations", None)
    if annotations is not None:
        pod["metadata"]["annotations"] = dict(annotations)
    resp = client.post("/echo-patch", content=review_body(pod, uid="ep"))
    answer = resp.json()["response"]
    assert answer["uid"] == "ep" and answer["allowed"] is True and answer["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(pod, json.loads(base64.b64decode(answer["patch"])))
    assert patched["metadata"]["annotations"] == {**(annotations or {}), "gpudra.io/echo": "patched"}
    patched["metadata"].pop("annotations")
    pod["metadata"].pop("annotations", None)
    assert patched == pod


def test_echo_patch_baseline_leaves_a_review_without_an_object_unpatched(client: TestClient) -> None:
    body = _review(operation="DELETE", object=None, oldObject=example("pod-legacy-vram.yaml"))
    assert client.post("/echo-patch", content=body).json()["response"] == {"uid": "u-1", "allowed": True}


def _review(**request: object) -> bytes:
    base: dict[str, object] = {
        "uid": "u-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": "team-a",
        "operation": "CREATE",
        "object": example("pod-legacy-vram.yaml"),
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {**base, **request}})


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nested more than 64 levels"),
        (b"[" * 70 + b"]" * 70, "nested more than 64 levels"),
        (_review(uid="\ud800").encode(), "/request/uid holds a lone UTF-16 surrogate"),
        (_review(uid="ok", namespace="team-\udfff").encode(), "/request/namespace holds a lone UTF-16 surrogate"),
        # each of the two forms a lone surrogate can take in the body's bytes (webhook.review scans for them apart)
        (_review(uid="X").encode().replace(b"X", b"\\uDBFF"), "/request/uid holds a lone UTF-16 surrogate"),
        (_review(uid="X").encode().replace(b"X", b"\xed\xa0\x80"), "/request/uid holds a lone UTF-16 surrogate"),
        (_review(dryRun="false").encode(), "'request.dryRun' must be a boolean"),
    ],
    ids=[
        "nested-10k",
        "nested-70",
        "surrogate-uid",
        "surrogate-namespace",
        "surrogate-escape-upper-case",
        "surrogate-utf8-bytes",
        "dryrun-string",
    ],
)
def test_hostile_bodies_are_400_naming_where_never_500(client: TestClient, body: bytes, reason: str) -> None:
    for endpoint in ("/mutate", "/validate"):
        resp = client.post(endpoint, content=body)
        assert resp.status_code == 400 and reason in resp.json()["error"]


def test_a_valid_surrogate_pair_is_fine(client: TestClient) -> None:
    pod = example("pod-legacy-vram.yaml")
    pod["metadata"]["annotations"] = {**pod["metadata"].get("annotations", {}), "note": "\U0001f600"}
    resp = client.post("/mutate", content=review_body(pod))
    assert resp.status_code == 200 and resp.json()["response"]["allowed"] is True


def test_operation_metric_label_is_a_closed_set(client: TestClient) -> None:
    for i in range(50):
        client.post("/validate", content=_review(operation=f"OP-{i}-" + "x" * 1000).encode())
    client.post("/validate", content=_review(operation="CREATE").encode())
    metrics = client.get("/metrics").text
    operations = {
        line.split('operation="')[1].split('"')[0]
        for line in metrics.splitlines()
        if line.startswith("gpudra_admission_reviews_total{")
    }
    assert operations == {"CREATE", "other"}
    assert len(metrics) < 20_000


def test_an_empty_policy_directory_is_refused_at_start(tmp_path: Path) -> None:
    empty = tmp_path / "no-policies"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no GPUClaimPolicy"):
        build_app(ServeSettings(policies=str(empty)))
