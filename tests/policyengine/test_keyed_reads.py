"""Reads narrowed to the keys an expression asks for (`_deps.keyed_uses`): `'k' in p`, `p['k']`, `has(p)` and
`p != null` read only those keys of `p`, so pods differing elsewhere in `p` share memo entries; any other use of `p`
reads all of it, and a decision is always the one computed without the memo."""

from __future__ import annotations

import copy
import itertools
import random
from typing import Any

import pytest

from policyengine import PolicySet, load_policies, load_policy_text
from policyengine._deps import paths

SHIPPED = load_policies()

LABELS = ("object", ("metadata", "labels"))


def _narrowed(source: str) -> set[tuple[str, tuple[str, ...]]]:
    return set(paths(source)[0])


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("'ray.io/node-type' in object.metadata.labels", {("object", ("metadata", "labels", "ray.io/node-type"))}),
        ("object.metadata.labels['k'] == 'v'", {("object", ("metadata", "labels", "k"))}),
        ('object . metadata . labels [ "k" ]', {("object", ("metadata", "labels", "k"))}),
        ("has(object.metadata.labels)", {("object", ("metadata", "labels", ""))}),
        ("object.metadata.labels == null", {("object", ("metadata", "labels", ""))}),
        ("null != namespaceObject", {("namespaceObject", ("",))}),
        ("object.metadata.labels['k'] == null", {("object", ("metadata", "labels", "k"))}),
        ("'k' in object.metadata.labels == true", {("object", ("metadata", "labels", "k"))}),
        ("legacy['nvidia.com/gpu']", {("legacy", ("nvidia.com/gpu",))}),
        (
            "has(object.metadata.labels) && 'a' in object.metadata.labels ? object.metadata.labels['b'] : ''",
            {("object", ("metadata", "labels", key)) for key in ("", "a", "b")},
        ),
    ],
)
def test_uses_that_ask_for_named_keys_read_only_those(source: str, expected: set[Any]) -> None:
    assert _narrowed(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "object.metadata.labels",  # the whole map, returned
        "'k' in object.metadata.labels && size(object.metadata.labels) > 1",  # one whole use: all of it
        "object.metadata.labels.exists(k, k == 'a')",  # a method on it
        "'a' + 'k' in object.metadata.labels",  # the key is computed
        "'k' in object.metadata.labels + {'z': 'y'}",  # the operand is a new map
        "object.metadata.labels['a\\'b']",  # an escape in the key: not read as plain text
        "r'k' in object.metadata.labels",  # raw string
        "object.metadata.labels[?'k']",  # optional index
        "object.metadata.labels[variables.key]",  # a key not known statically
        "(true ? object.metadata.labels : {})['k']",  # the map flows through a conditional
        "object.metadata.labels['k'].size() > 0 // object.metadata.labels in a comment",  # counts differ
        ".object.metadata.labels['k']",  # a leading-dot name the tree walk does not follow
        "object.metadata.labels in [{}]",  # compared whole
    ],
)
def test_any_other_use_reads_the_whole_value(source: str) -> None:
    assert LABELS in _narrowed(source) or ("object", ()) in _narrowed(source)
    assert not any(len(path) > 2 for root, path in _narrowed(source) if root == "object" and path[:2] == LABELS[1])


TEAM = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: team}
spec:
  priority: 2000
  matchConditions:
  - {name: legacy, expression: gpu.legacy}
  - {name: labelled, expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"}
  variables:
  - {name: team, expression: "object.metadata.labels['team']"}
  validations:
  - expression: "variables.team != 'blocked'"
    messageExpression: "'team ' + variables.team + ' may not use GPUs'"
  warnings:
  - expression: >-
      namespaceObject == null || !has(namespaceObject.metadata.labels)
        || !('quiet' in namespaceObject.metadata.labels)
    message: namespace asks for quiet
---
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: tiers}
spec:
  priority: 1900
  matchConditions:
  - {name: tiered, expression: "has(object.metadata.labels) && 'tier' in object.metadata.labels"}
  variables:
  - {name: labelCount, expression: "size(object.metadata.labels)"}
  validations:
  - expression: "variables.labelCount < 4"
    messageExpression: "'tiered pods carry at most 3 labels (got ' + string(variables.labelCount) + ')'"
"""


def _team_policies(memoize: bool = True) -> PolicySet:
    extra, errors = load_policy_text(TEAM, "team.yaml")
    assert errors == []
    return PolicySet.of([*SHIPPED.policies, *extra], memoize=memoize)


def _pod(labels: dict[str, str] | None, annotations: dict[str, str] | None, gpus: int, args: list[str]) -> Any:
    metadata: dict[str, Any] = {"name": "p", "namespace": "default"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    container = {"name": "c", "image": "i", "args": args, "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [container]}}


def _same(a: Any, b: Any) -> None:
    assert a.to_json() == b.to_json()
    assert {k: list(v) for k, v in a.variables.items()} == {k: list(v) for k, v in b.variables.items()}
    assert [dict(c.variables) for c in a.containers] == [dict(c.variables) for c in b.containers]
    assert a.held_bytes == b.held_bytes


def test_pods_varied_in_the_keys_policies_ask_for_decide_as_without_the_memo() -> None:
    rng = random.Random(4)
    label_choices = [
        None,
        {},
        {"team": "ml"},
        {"team": "blocked"},
        {"ray.io/node-type": "worker"},
        {"leaderworkerset.sigs.k8s.io/name": "lws"},
        {"tier": "a", "team": "ml"},
        {"tier": "a", "team": "ml", "x": "1", "y": "2"},
    ]
    annotation_choices = [None, {}, {"gpudra.io/topology": "pcie"}, {"gpudra.io/vram": "8Gi"}, {"other": "x"}]
    namespaces = [
        None,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {"quiet": "1"}}},
        *(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": labels}}
            for labels in ({"gpudra.io/max-vram": "20Gi"}, {"gpudra.io/topology": "pcie"})
        ),
    ]
    memoized, cold = _team_policies(), _team_policies(memoize=False)
    cases = list(itertools.product(label_choices, annotation_choices, namespaces, [1, 2, 4], [[], ["--tp", "4"]]))
    rng.shuffle(cases)
    for labels, notes, namespace, gpus, args in cases[:400]:
        for extra in ({}, {"unrelated": str(rng.randrange(1000))}):  # labels no policy asks for
            pod = _pod(None if labels is None else {**labels, **extra}, copy.deepcopy(notes), gpus, args)
            _same(memoized.evaluate(pod, namespace), cold.evaluate(pod, namespace))
    assert memoized.memo_sizes()["outcome"] > 0


def test_a_label_no_policy_asks_for_shares_the_outcome_and_one_it_asks_for_does_not() -> None:
    policies = _team_policies()
    base = _pod({"team": "ml"}, None, 1, [])
    policies.evaluate(base)
    outcomes = policies.memo_sizes()["outcome"]
    for i in range(10):
        policies.evaluate(_pod({"team": "ml", "pod-template-hash": f"h{i}"}, None, 1, []))
    # one new outcome each, of `tiers` (its variable reads the whole map); every other policy's is shared
    assert policies.memo_sizes()["outcome"] == outcomes + 10
    blocked = policies.evaluate(_pod({"team": "blocked", "pod-template-hash": "h0"}, None, 1, []))
    assert not blocked.allowed and "team blocked may not use GPUs" in blocked.message
    # `tier` makes labelCount read the whole map: then every label counts
    extras: list[dict[str, str]] = [{}, {"x": "1", "y": "2"}]
    tiered = [policies.evaluate(_pod({"team": "ml", "tier": "a", **extra}, None, 1, [])) for extra in extras]
    assert tiered[0].allowed and not tiered[1].allowed and "at most 3 labels (got 4)" in tiered[1].message
