"""`dra.documents`' dumpers build the representer's nodes in one pass and remember resolved scalar tags (a long
`gpudra translate` stream is written about twice as fast): the text must stay exactly PyYAML's, for any JSON-like
data, with libyaml's emitter and with the pure-Python one."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dra import documents

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(["yes", "on", "1:30", "0x1F", "1e3", "~", "null", "2024-01-01", "- a", "a: b", "#x", "'q'"])
)
_KEYS = st.text(max_size=12) | st.integers(-5, 5) | st.booleans() | st.none()
_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=25,
)


class _PlainPy(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


_PlainC: type | None = None
if hasattr(yaml, "CSafeDumper"):

    class _C(yaml.CSafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    _PlainC = _C


def _text(docs: list[Any], dumper: type, **options: Any) -> str:
    kwargs: dict[str, Any] = {"sort_keys": False, "default_flow_style": False, "width": 120, **options}
    return str(yaml.dump_all(docs, Dumper=dumper, **kwargs))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _DATA, max_size=5) | st.lists(_DATA, max_size=4), min_size=1, max_size=3))
def test_the_pure_python_dumper_writes_pyyamls_text(docs: list[Any]) -> None:
    assert _text(docs, documents._PyDumper) == _text(docs, _PlainPy)
    assert _text(docs, documents._PyDumper, allow_unicode=True) == _text(docs, _PlainPy, allow_unicode=True)


@pytest.mark.skipif(_PlainC is None or not documents.libyaml_available(), reason="PyYAML without libyaml")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _DATA, max_size=5) | st.lists(_DATA, max_size=4), min_size=1, max_size=3))
def test_the_libyaml_dumper_writes_libyamls_text(docs: list[Any]) -> None:
    assert _PlainC is not None
    assert _text(docs, documents._Dumper) == _text(docs, _PlainC)


def test_other_options_and_types_go_through_the_representer() -> None:
    class Tagged(str):
        pass

    docs: list[Any] = [{"b": 1, "a": [1.5, float("inf")]}, {"s": Tagged("x")}]
    assert _text(docs[:1], documents._PyDumper, sort_keys=True) == _text(docs[:1], _PlainPy, sort_keys=True)
    flow = {"default_flow_style": None}
    assert _text(docs[:1], documents._PyDumper, **flow) == _text(docs[:1], _PlainPy, **flow)
    with pytest.raises(yaml.representer.RepresenterError):  # a str subclass is refused, as SafeDumper refuses it
        _text(docs[1:], documents._PyDumper)
