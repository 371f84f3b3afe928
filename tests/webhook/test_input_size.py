"""webhook.input_size: True only when the JSON text is longer than the bound, whatever the separators or escapes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webhook.input_size import json_text_longer_than

_VALUES: list[Any] = [
    {},
    [],
    "",
    {"a": 1, "b": [True, None, 2.5, "x"], "c": {"d": ""}},
    {1: "int key", None: "null key", 2.5: [[], {}]},
    {"env": [{"name": f"V{i}", "value": "é€" * i} for i in range(40)]},  # non-ASCII: escapes make it longer
    ("tuple", ["nested", ["deeper", ["deepest"]]]),
    "x" * 1000,
]


@pytest.mark.parametrize("value", _VALUES)
def test_it_never_says_longer_when_the_text_is_not(value: Any) -> None:
    shortest = min(
        len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()),
        len(json.dumps(value, separators=(",", ":"))),
    )
    for limit in range(0, shortest + 64):
        if json_text_longer_than(value, limit):
            assert shortest > limit, (value, limit)


def test_it_says_so_for_a_large_pod_before_walking_all_of_it() -> None:
    env = [{"name": f"SETTING_{i}", "value": "v" * 1000} for i in range(2500)]
    pod = {"spec": {"containers": [{"name": "c", "env": env}]}}
    assert json_text_longer_than(pod, 256 * 1024)
    assert not json_text_longer_than(pod, len(json.dumps(pod, separators=(",", ":"))))
    assert json_text_longer_than(pod, 100_000)
    assert not json_text_longer_than({"spec": {}}, 256 * 1024)


def test_deep_nesting_does_not_overflow() -> None:
    value: Any = "leaf"
    for _ in range(100_000):
        value = [value]
    assert json_text_longer_than(value, 150_000)
