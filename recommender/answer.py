"""Prometheus HTTP API answers (`/api/v1/query`, `/api/v1/query_range`) read in bounded memory, stdlib only.

`json.loads` of a range answer builds a list, a float and a str per sample: 12-30x the JSON (a 120 MB answer took
3.95 GB). Here the bytes are walked by hand, never decoded whole: the small parts (status, labels, one odd sample)
are decoded with `json`, the sample arrays by regular expressions in blocks of at most 4,096 samples straight into
`array('d')` (8 bytes a number), and what is not understood is skipped without being built. Peak memory is the
body plus the arrays (16 bytes a sample, ~0.6x the body) plus one block.
"""

from __future__ import annotations

import json
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "AnswerError", "AnswerSeries", "read_answer"]

_BLOCK = 4096
_SMALL = 1 << 20  # the most text a label set, a status or a warning may take before it is not decoded

_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_SCALAR = re.compile(rb"[^ \t\n\r,\]}]+")
_NUM = rb"-?[0-9][0-9.eE+-]*"
_W = rb"[ \t\n\r]*"
_PAIR = rb"\[" + _W + rb"(" + _NUM + rb")" + _W + rb"," + _W + rb'"([^"\\]*)"' + _W + rb"\]"
_RUN = re.compile(rb"(?:" + _PAIR + _W + rb"(?:," + _W + rb"|(?=\])))" + b"{1,%d}" % _BLOCK)
_PAIRS = re.compile(_PAIR)


class AnswerError(ValueError):
    """The text is not a JSON answer of the API's shape; `kind` is "bad_json" or "bad_shape"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class AnswerSeries:
    """One element of `data.result`: its labels (None when not a map of strings) and its parseable samples.
    `samples_ok` is False when `values` (or `value`) is not a list; `unparseable` counts samples that are not a
    `[time, "number"]` pair."""

    labels: dict[str, str] | None
    times: array[float] = field(default_factory=lambda: array("d"))
    values: array[float] = field(default_factory=lambda: array("d"))
    samples_ok: bool = True
    unparseable: int = 0
    first_unparseable: tuple[int, str] | None = None  # (its index among the samples, its JSON text, cut to 64)


@dataclass
class Answer:
    status: Any = None
    kind: Any = None  # a top-level `kind`: a Kubernetes object, not an answer
    error_type: Any = None
    error: Any = None
    warnings: list[Any] = field(default_factory=list)
    data_is_object: bool = False
    result_type: Any = None
    result: list[AnswerSeries] | None = None  # None: no `data.result` list
    problems: Counter[str] = field(default_factory=Counter)


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


class _Reader:
    def __init__(self, text: bytes | bytearray) -> None:
        self.s = text
        self.pos = 0

    def fail(self, what: str) -> AnswerError:
        shown = bytes(self.s[self.pos : self.pos + 40]).decode("utf-8", errors="replace")
        return AnswerError("bad_json", f"not JSON at character {self.pos}: {what} (found {shown!r})")

    def ws(self) -> str:
        self.pos += len(_WS.match(self.s, self.pos)[0])  # type: ignore[index]  # `*`: it always matches
        return chr(self.s[self.pos]) if self.pos < len(self.s) else ""

    def expect(self, char: str) -> None:
        if self.ws() != char:
            raise self.fail(f"expected {char!r}")
        self.pos += 1

    def skip(self) -> tuple[int, int]:
        """Pass over one value without building it; its span."""
        head = self.ws()
        start = self.pos
        if head == '"':
            m = _STRING.match(self.s, self.pos)
            if m is None:
                raise self.fail("unterminated string")
            self.pos = m.end()
        elif head in ("[", "{"):
            depth = 0
            for m in _TOKEN.finditer(self.s, self.pos):
                token = m.group()
                depth += 1 if token in (b"[", b"{") else -1 if token in (b"]", b"}") else 0
                if depth == 0:
                    self.pos = m.end()
                    break
            else:
                raise self.fail("unterminated array or object")
        else:
            m = _SCALAR.match(self.s, self.pos)
            if m is None:
                raise self.fail("expected a value")
            try:
                json.loads(m.group())
            except ValueError:
                raise self.fail("expected a value") from None
            self.pos = m.end()
        return start, self.pos

    def small(self, limit: int = _SMALL) -> tuple[bool, Any]:
        """(True, the value) when its text is at most `limit` characters; (False, None) when skipped."""
        self.ws()
        start, end = self.skip()
        if end - start > limit:
            return False, None
        try:
            return True, json.loads(self.s[start:end])
        except ValueError:
            self.pos = start
            raise self.fail("malformed value") from None

    def members(self) -> Any:
        """The keys of an object, the cursor on each key's value when it is yielded."""
        self.expect("{")
        if self.ws() == "}":
            self.pos += 1
            return
        while True:
            if self.ws() != '"':
                raise self.fail("expected a key")
            m = _STRING.match(self.s, self.pos)
            if m is None:
                raise self.fail("unterminated key")
            try:
                key = json.loads(m.group())
            except ValueError:
                raise self.fail("malformed key") from None
            self.pos = m.end()
            self.expect(":")
            yield key
            head = self.ws()
            self.pos += 1
            if head == "}":
                return
            if head != ",":
                self.pos -= 1
                raise self.fail("expected ',' or '}'")

    def elements(self) -> Any:
        self.expect("[")
        if self.ws() == "]":
            self.pos += 1
            return
        while True:
            yield
            head = self.ws()
            self.pos += 1
            if head == "]":
                return
            if head != ",":
                self.pos -= 1
                raise self.fail("expected ',' or ']'")

    # -- the answer's shape ---------------------------------------------------------------------------------------
    def answer(self) -> Answer:
        out = Answer()
        if self.ws() != "{":
            if len(self.s) <= _SMALL:  # tell "some other JSON" from "not JSON" when that is cheap
                try:
                    json.loads(self.s)
                except ValueError:
                    raise self.fail("expected a JSON object") from None
            raise AnswerError("bad_shape", "expected a JSON object")
        for key in self.members():
            if key == "data":
                self.data(out)
            elif key in ("status", "kind", "errorType", "error", "warnings"):
                ok, value = self.small()
                value = value if ok else "(too long to show)"
                if key == "status":
                    out.status = value
                elif key == "kind":
                    out.kind = value
                elif key == "errorType":
                    out.error_type = value
                elif key == "error":
                    out.error = value
                elif isinstance(value, list):
                    out.warnings = value[:100]
            else:
                self.skip()
        if self.ws():
            raise self.fail("text after the answer")
        return out

    def data(self, out: Answer) -> None:
        if self.ws() != "{":
            self.skip()
            return
        out.data_is_object = True
        for key in self.members():
            if key == "resultType":
                out.result_type = self.small(1024)[1]
            elif key == "result" and self.ws() == "[":
                out.result = [self.series(out) for _ in self.elements()]
            else:
                self.skip()

    def series(self, out: Answer) -> AnswerSeries:
        if self.ws() != "{":
            self.skip()
            return AnswerSeries(None, samples_ok=False)
        item = AnswerSeries(None, samples_ok=False)
        for key in self.members():
            if key == "metric":
                ok, labels = self.small()
                if ok and isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
                    item.labels = labels
            elif key == "values" and self.ws() == "[":
                item.samples_ok = True
                self.samples(item)
            elif key == "value":
                ok, one = self.small(4096)
                item.samples_ok = True
                self.add(item, one if ok else None)
            else:
                self.skip()
        return item

    def add(self, item: AnswerSeries, raw: Any, text: str = "") -> None:
        pair = _pair(raw)
        if pair is None:
            if item.first_unparseable is None:
                item.first_unparseable = (len(item.times) + item.unparseable, text[:64] or json.dumps(raw)[:64])
            item.unparseable += 1
        else:
            item.times.append(pair[0])
            item.values.append(pair[1])

    def samples(self, item: AnswerSeries) -> None:
        self.expect("[")
        while self.ws() != "]":
            run = _RUN.match(self.s, self.pos)
            if run is not None:
                found = _PAIRS.findall(self.s, run.start(), run.end())
                try:
                    times = array("d", map(float, (t for t, _ in found)))
                    values = array("d", map(float, (v for _, v in found)))
                except ValueError:  # one odd number in the block: take the block sample by sample
                    for t, v in found:
                        self.add(item, _number_pair(t, v), f'[{t.decode()}, "{v.decode()}"]')
                else:
                    item.times.extend(times)
                    item.values.extend(values)
                self.pos = run.end()
                continue
            start = self.pos
            ok, raw = self.small(4096)
            text = bytes(self.s[start : min(self.pos, start + 64)]).decode(errors="replace")
            self.add(item, raw if ok else None, text)
            head = self.ws()
            if head == ",":
                self.pos += 1
            elif head != "]":
                raise self.fail("expected ',' or ']'")
        self.pos += 1


def _number_pair(t: bytes, v: bytes) -> list[Any] | None:
    try:
        return [float(t), v.decode()]
    except ValueError:
        return None


def read_answer(text: str | bytes | bytearray) -> Answer:
    """The answer's status, error, warnings and series; AnswerError when it is not JSON or not an object."""
    return _Reader(text.encode() if isinstance(text, str) else text).answer()
