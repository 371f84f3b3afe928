"""The decision cache is charged what its decisions hold, not only their inputs: small pods whose policy builds
large values (variables live as long as the decision) cannot hold more than the cache's byte budget."""

from __future__ import annotations

import json
from pathlib import Path

from kubeapi import NamespaceCache
from policyengine import PolicySet, load_policies
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import parse_review

ROOT = Path(__file__).resolve().parents[2]
# A variable of 400,000 characters built from a 100 kB annotation: within every per-value and per-review bound.
GROWER = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: grower}
spec:
  matchConditions:
  - {name: legacy, expression: gpu.legacy}
  variables:
  - {name: big, expression: "object.metadata.annotations['pad'].replace('x', 'xxxx')"}
  validations:
  - {expression: "size(variables.big) > 0", message: never}
"""
CACHE_BYTES = 4 * 2**20


def test_decisions_holding_large_values_are_charged_for_them(tmp_path: Path) -> None:
    (tmp_path / "whole-gpu.yaml").write_text((ROOT / "policies" / "whole-gpu.yaml").read_text())
    (tmp_path / "grower.yaml").write_text(GROWER)
    store: PolicyStore[PolicySet] = PolicyStore(tmp_path, load_policies)
    api = RecordingApiServer({"team-a": example("namespace-team-a.yaml")})
    admission = Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api), cache_bytes=CACHE_BYTES)
    for i in range(30):
        pod = example("pod-legacy-vram.yaml")
        pod["metadata"]["name"] = f"pod-{i}"
        pod["metadata"]["annotations"]["pad"] = "x" * 100_000 + str(i)
        response = admission.mutate(parse_review(review_body(pod)))
        assert response["response"]["allowed"] is True
    cache = admission._cache
    entries = [entry for entry, _weight in cache._entries.values()]
    assert entries, "decisions of this size are cached"
    held = sum(len(json.dumps(dict(entry.decision.variables["grower"]))) for entry in entries)
    inputs = sum(len(json.dumps(entry.pod)) for entry in entries)
    assert held + inputs <= CACHE_BYTES, (len(entries), held, inputs)
    assert cache.weight <= CACHE_BYTES
