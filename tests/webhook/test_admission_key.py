"""The decision cache's key is derived from the decision's inputs (`_DecisionInputs`), not listed by hand: every field
is in it, and every input the decision and its translation read is a field."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from policyengine import ClaimCheck, PolicySet, load_policies, shipped_policies_dir
from policyengine.scheduler_path import scheduler_path
from policyengine.translate import translate
from webhook.admission import Admission, _DecisionInputs
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore

POD = {
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
}
BASE = _DecisionInputs(
    pod=POD,
    namespace={"metadata": {"name": "team-a"}},
    info={"uid": "u-1", "operation": "CREATE", "namespace": "team-a"},
    dra_devices=1,
    sizing="v1",
    mapped=(("nvidia.com/gpu", "gpu.nvidia.com"),),
    shapes="fold-1:7",
)
# Other values for each field, one at a time: a new field without one here fails the completeness check.
CHANGES: dict[str, Sequence[Any]] = {
    "pod": [{**POD, "metadata": {"name": "q"}}],
    "namespace": [None, {"metadata": {"name": "team-a", "labels": {"gpudra.io/max-gpus": "1"}}}],
    "info": [{"uid": "u-1", "operation": "CREATE", "namespace": "team-a", "dryRun": True}],
    "dra_devices": [0, 2],
    "sizing": ["", "v2"],
    "mapped": [(), (("nvidia.com/gpu", "other.example.com"),)],
    "shapes": ["", "fold-1:8"],
}
# Where each input of what a cached entry holds comes from: a field of the inputs, or (None, not keyed) the set of
# policies, whose change clears the cache, the decision, which is the entry's own output, a default never passed, or
# what every review passes alike (`with_variables`), or what changes how the decision is reached but never what it is
# (`memoize_facts`: the facts read afresh rather than from the memo).
READS: dict[Callable[..., Any], dict[str, str | None]] = {
    PolicySet.evaluate: {
        "pod": "pod", "namespace": "namespace", "request": "info", "dra_devices": "dra_devices",
        "sizing": "sizing", "extended_resources": "mapped", "with_variables": None,
        "memoize_facts": None,
    },
    scheduler_path: {"pod": "pod", "mapping": "mapped", "decision": None, "policies": None},
    translate: {"pod": "pod", "decision": None, "template_prefix": None},
    # The claim check inside the policies reads the shapes it was built with at every decision: their token is keyed.
    ClaimCheck.__init__: {"shapes": "shapes", "checker": None, "few_products": None, "where": None},
}  # fmt: skip


@pytest.fixture(scope="module")
def admission() -> Admission:
    return Admission(PolicyStore(shipped_policies_dir(), load_policies), WebhookMetrics())


def _key(admission: Admission, inputs: _DecisionInputs) -> bytes:
    keyed = admission._key(admission.store.current, inputs)
    assert keyed is not None
    return keyed[0]


def test_a_change_to_any_input_is_a_change_of_key(admission: Admission) -> None:
    names = set(_DecisionInputs._fields)
    assert names == set(CHANGES), f"list other values for: {sorted(names ^ set(CHANGES))}"
    base = _key(admission, BASE)
    seen = {base}
    for name, values in CHANGES.items():
        for value in values:
            key = _key(admission, BASE._replace(**{name: value}))
            assert key not in seen, (name, value)
            seen.add(key)
    assert _key(admission, _DecisionInputs(*BASE)) == base


def test_the_uid_is_left_out_unless_a_policy_reads_it(admission: Admission) -> None:
    other = BASE._replace(info={**BASE.info, "uid": "u-2"})
    assert _key(admission, other) == _key(admission, BASE)
    assert not admission._reads_uid  # no shipped policy reads it (tests/webhook/test_admission.py: one that does)


def test_every_input_the_decision_and_its_translation_read_is_a_keyed_field() -> None:
    names = set(_DecisionInputs._fields)
    for function, sources in READS.items():
        parameters = set(inspect.signature(function).parameters) - {"self"}
        assert parameters == set(sources), f"{function.__qualname__}: say where {parameters ^ set(sources)} come from"
        assert {source for source in sources.values() if source is not None} <= names
    assert names == {source for sources in READS.values() for source in sources.values() if source is not None}


def test_a_new_set_of_policies_clears_the_cache() -> None:
    admission = Admission(PolicyStore(shipped_policies_dir(), load_policies), WebhookMetrics())
    admission._key(admission.store.current, BASE)
    admission._cache.put(_key(admission, BASE), object(), 1)  # type: ignore[arg-type]
    assert len(admission._cache) == 1
    fresh = load_policies()
    assert _key(admission, BASE) == _key(admission, BASE) and len(admission._cache) == 1
    admission._key(fresh, BASE)
    assert admission._cache_policies is fresh and len(admission._cache) == 0
