"""The bounded-memory reader of Prometheus answers agrees with `json.loads` on every answer of the API's shape
(hypothesis: labels with escapes and unicode, odd samples, unknown keys holding brackets inside strings, any
spacing), and names what is not JSON or not an object."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender import AnswerError, read_answer

_times = st.one_of(st.integers(0, 2_000_000_000), st.floats(0, 2e9, allow_nan=False))
_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["NaN", "+Inf", "-Inf", "1e+06", "-5", "0", "x", "", "1_0", " 7 "]),
    st.integers(-(10**6), 10**12).map(str),
)
_sample = st.one_of(
    st.tuples(_times, _values).map(list),
    st.tuples(_times, st.integers()).map(list),  # a number where a string belongs
    st.tuples(_times).map(list),
    st.tuples(st.booleans(), _values).map(list),
    st.just("not a pair"),
    st.just([[1, "2"], "3"]),
)
_labels = st.one_of(
    st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), min_size=1, max_size=2),
)
_series = st.one_of(
    st.fixed_dictionaries({"metric": _labels, "values": st.lists(_sample, max_size=30)}),
    st.fixed_dictionaries({"metric": _labels, "value": _sample}),
    st.fixed_dictionaries({"metric": _labels, "values": st.just("nope")}),
    st.fixed_dictionaries({"values": st.lists(_sample, max_size=3)}),
    st.just("not a series"),
)
_unknown = st.recursive(
    st.text(alphabet='[]{}",\\ab', max_size=6), lambda inner: st.lists(inner, max_size=3), max_leaves=6
)


def _pair(item: Any) -> tuple[float, float] | None:
    if not isinstance(item, list) or len(item) != 2:
        return None
    t, v = item
    if isinstance(t, bool) or not isinstance(t, int | float) or not isinstance(v, str):
        return None
    try:
        return float(t), float(v)
    except ValueError:
        return None


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=300, deadline=None)
@given(
    result=st.lists(_series, max_size=6),
    unknown=_unknown,
    indent=st.sampled_from([None, 0, 2, "\t"]),
    first=st.booleans(),
)
def test_the_reader_agrees_with_json_loads(result: list[Any], unknown: Any, indent: Any, first: bool) -> None:
    data = {"resultType": "matrix", "stats": {"x": unknown}, "result": result}
    doc = {"status": "success", "data": data, "infos": unknown} if first else {"data": data, "status": "success"}
    answer = read_answer(json.dumps(doc, indent=indent).encode())
    assert answer.status == "success" and answer.result_type == "matrix" and answer.result is not None
    assert len(answer.result) == len(result)
    for got, want in zip(answer.result, result, strict=True):
        labels = want.get("metric") if isinstance(want, dict) else None
        ok_labels = isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values())
        assert got.labels == (labels if ok_labels else None)
        raw = want.get("values", want.get("value")) if isinstance(want, dict) else None
        samples: list[Any] = raw if isinstance(want, dict) and "values" in want and isinstance(raw, list) else [raw]
        assert got.samples_ok == (isinstance(want, dict) and ("value" in want or isinstance(raw, list)))
        if not got.samples_ok:
            continue
        pairs = [_pair(s) for s in samples]
        good = [p for p in pairs if p is not None]
        assert got.unparseable == len(pairs) - len(good)
        assert len(got.times) == len(good) and len(got.values) == len(good)
        assert all(_same(g, w[0]) for g, w in zip(got.times, good, strict=True))
        assert all(_same(g, w[1]) for g, w in zip(got.values, good, strict=True))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (b"<html>not json</html>", "bad_json"),
        (b"[1, 2, 3]", "bad_shape"),
        (b'{"status": "success", "data": {"result": [}', "bad_json"),
        (b'{"status": "success"} trailing', "bad_json"),
        (b'{"status": "success", "data": {"result": [{"metric": {"a": "\xff"}}]}}', "bad_json"),
        (b'{"status": "success", "data": {"result": [{"values": [[1, "2"] [3, "4"]]}]}}', "bad_json"),
    ],
)
def test_what_is_not_an_answer_is_named(text: bytes, kind: str) -> None:
    with pytest.raises(AnswerError) as err:
        read_answer(text)
    assert err.value.kind == kind


def test_an_error_answer_keeps_its_error() -> None:
    answer = read_answer(b'{"status":"error","errorType":"bad_data","error":"parse error at char 5"}')
    assert (answer.status, answer.error_type, answer.error, answer.result) == (
        "error",
        "bad_data",
        "parse error at char 5",
        None,
    )
