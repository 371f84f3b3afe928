"""The decision cache is charged what its decisions hold, not only their inputs: small pods whose policy builds
large values (variables live as long as a decision) cannot hold more than the cache's byte budget; a cached
decision keeps no variables at all (`webhook.admission._served`), and is charged what it held when made."""

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
    # A cached decision keeps no variables (no answer shows them): the 400,000-character value is not held by it...
    assert all(not entry.decision.variables for entry in entries)
    assert all(not c.variables for entry in entries for c in entry.decision.containers)
    # ...and each entry is still charged at least its inputs and what its decision held when made (an upper bound)
    inputs = sum(len(json.dumps(entry.pod)) for entry in entries)
    assert inputs <= cache.weight <= CACHE_BYTES, (len(entries), inputs, cache.weight)
    assert all(weight >= 400_000 for _entry, weight in cache._entries.values())
    # the decision served from the cache is the one computed: same answer for the same pod again
    pod = example("pod-legacy-vram.yaml")
    pod["metadata"]["name"] = "pod-29"
    pod["metadata"]["annotations"]["pad"] = "x" * 100_000 + "29"
    again = admission.mutate(parse_review(review_body(pod)))
    fresh = Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api)).mutate(
        parse_review(review_body(pod))
    )
    assert again == fresh
