"""`dra.yamlio.load_yaml` builds a document without aliases in one recursive pass (`_constructed`): the data and the
errors must be those of the loader's own `construct_document`, for every scalar form YAML 1.1 has and for the
tags and keys the one-pass build hands back to it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.errors import InputError
from dra.yamlio import load_yaml, yaml_error, yaml_nodes

TEXTS = [
    "a: 1\nb: 0x1F\nc: 0o17\nd: 017\ne: 1:30\nf: 1_000\ng: -0b101\n",
    "a: 1.5\nb: .inf\nc: -.Inf\nd: .nan\ne: 1e3\nf: 6.8523015e+5\ng: 190:20:30.15\n",
    "a: yes\nb: No\nc: on\nd: OFF\ne: true\nf: ~\ng: null\nh:\ni: ''\n",
    "when: 2024-01-01T00:00:00Z\nday: 2002-12-14\n",
    "bin: !!binary aGVsbG8=\nset: !!set {a, b}\nomap: !!omap [{a: 1}, {b: 2}]\npairs: !!pairs [{a: 1}]\n",
    "base: {a: 1}\nmerged: {<<: {a: 2, b: 3}, c: 4}\n",
    "? [a, b]\n: 1\n",
    "? {a: 1}\n: 1\n",
    "a: 1\na: 2\n",
    "outer:\n  x: 1\n  x: 2\n",
    "1: one\n2.5: two\ntrue: three\n~: four\n",
    "s: !!str 123\ni: !!int '7'\nf: !!float '1'\nb: !!bool 'yes'\n",
    "l: [1, [2, [3, {a: [4]}]], {}]\nm: {}\n",
    "a: !custom 1\n",
    "- 1\n- a: b\n- [x]\n",
    "just text\n",
]


def _old(text: str) -> list[Any]:
    return [loader.construct_document(node) for node, loader in yaml_nodes(text, "t")]


def _outcome(read: Any, text: str) -> tuple[str, Any]:
    try:
        return "data", read(text)
    except (InputError, yaml.YAMLError) as exc:
        return "error", str(exc)


def _new(text: str) -> list[Any]:
    return [data for data, _node in load_yaml(text, "t")]


@pytest.mark.parametrize("text", TEXTS)
def test_one_pass_reads_as_construct_document(text: str) -> None:
    new = _outcome(_new, text)
    try:
        old: tuple[str, Any] = ("data", _old(text))
    except yaml.YAMLError as exc:
        old = ("error", str(yaml_error(exc, "t")))
    assert new == old
    if new[0] == "data":
        assert [type(v) for v in new[1]] == [type(v) for v in old[1]]


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=3)
        ),
        max_leaves=15,
    ),
    st.booleans(),
)
def test_any_document_reads_as_construct_document(data: Any, flow: bool) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow)
    assert _new(text) == _old(text)
