"""dra.documents with and without libyaml: the same data, the same error lines, the same text.

libyaml (CSafeLoader / CSafeDumper) is used where PyYAML has it; without it the pure-Python loader and dumper are.
The libyaml-absent case is simulated by removing the C classes from the `yaml` module (monkeypatch).
"""

from __future__ import annotations

import importlib.util
import random
import string
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import dra.documents as documents
import dra.yamlio as yamlio
from dra.errors import InputError

HAS_LIBYAML = bool(getattr(yaml, "__with_libyaml__", False))
needs_libyaml = pytest.mark.skipif(not HAS_LIBYAML, reason="this PyYAML has no libyaml")

# Scalars YAML 1.1 would read as something else unless quoted, strings the emitters quote or fold, nesting, order.
TRICKY: list[Any] = [
    {
        "on": "on",
        "yes": "yes",
        "no": "NO",
        "y": "y",
        "off": "Off",
        "null": "null",
        "tilde": "~",
        "empty": "",
        "octal": "0123",
        "hex": "0x1F",
        "exp": "1e3",
        "inf": ".inf",
        "nan": ".NaN",
        "date": "2024-01-01",
        "sexagesimal": "12:30:45",
        "colon": "a: b",
        "hash": "a #b",
        "lead": " x",
        "trail": "x ",
        "star": "*x",
        "amp": "&x",
        "bang": "!x",
        "pct": "%x",
        "at": "@x",
        "dash": "- x",
        "quote": "it's",
        "dq": 'say "hi"',
        "flow": "[x",
        "brace": "{x",
        "question": "? x",
        "multi": "line1\nline2\n",
        "blank": "a\n\nb",
        "long": "word " * 60,
        "unbroken": "x" * 300,
        "int": 12,
        "neg": -1,
        "big": 2**70,
        "float": 1.5,
        "bool": True,
        "none": None,
        1: "int key",
        "list": [1, "2", [3, {}], []],
    },  # fmt: skip
    {"zeta": 1, "alpha": 2, "mid": {"b": [1, {"a": 2}], "a": "x"}},  # key order kept, not sorted
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"note": "héllo ☃", "tab": "a\tb"}}},
    {"deep": {"er": {"and": {"deeper": [{"still": ["é " * 40, "tab\t" * 30, "space \n break " * 20]}]}}}},
    ["a", "list", "document"],
    {"shared": [{"same": 1}] * 3},  # the same object three times: written out, no anchors
]


def _random_documents(count: int, seed: int) -> list[Any]:
    rng = random.Random(seed)
    alphabets = [string.printable + "é☃\u2028\x85\ufeff", string.ascii_letters + " \n'\":#-{}[]!&*%@`|>"]
    docs = []
    for i in range(count):
        alpha = alphabets[i % 2]
        doc = {
            "".join(rng.choices(alpha, k=rng.randint(1, 30))): "".join(rng.choices(alpha, k=rng.randint(0, 160)))
            for _ in range(4)
        }
        doc["nested"] = {"items": ["".join(rng.choices(alpha, k=rng.randint(0, 150))) for _ in range(3)]}
        docs.append(doc)
    return docs


CORPUS = TRICKY + _random_documents(120, seed=11)


@pytest.fixture
def no_libyaml(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """PyYAML as built without libyaml: no `CSafeLoader` / `CSafeDumper`, `__with_libyaml__` false."""
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    for name in ("CSafeLoader", "CSafeDumper", "CLoader", "CDumper", "CParser", "CEmitter"):
        monkeypatch.delattr(yaml, name, raising=False)
    yield


def _python_text(docs: list[Any], **options: Any) -> str:
    class Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    kwargs: dict[str, Any] = {"sort_keys": False, "default_flow_style": False, "width": 120, **options}
    return str(yaml.dump_all(docs, Dumper=Plain, **kwargs))


@needs_libyaml
def test_libyaml_is_used_when_present() -> None:
    assert documents.libyaml_available()
    assert issubclass(yamlio._Loader, yaml.CSafeLoader)
    assert issubclass(documents._Dumper, yaml.CSafeDumper)


@pytest.mark.parametrize("index", range(len(CORPUS)))
@pytest.mark.parametrize("explicit_start", [False, True])
def test_dump_gives_the_pure_python_emitters_text(index: int, explicit_start: bool) -> None:
    docs = [CORPUS[index], CORPUS[(index + 1) % len(CORPUS)]]
    expected = _python_text(docs, explicit_start=explicit_start or None)
    assert documents.dump_documents(docs, explicit_start=explicit_start) == expected


@needs_libyaml
def test_the_c_emitter_writes_the_documents_it_is_given_exactly_as_python_does() -> None:
    class Fast(yaml.CSafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    fast = [doc for doc in CORPUS if isinstance(doc, dict | list) and documents._emitters_agree(doc, 120)]
    assert len(fast) > 40  # most documents take the C path; the check below is not vacuous
    for doc in fast:
        text = yaml.dump(doc, Dumper=Fast, sort_keys=False, default_flow_style=False, width=120)
        assert text == _python_text([doc])


def test_scalars_the_emitters_fold_differently_take_the_python_path() -> None:
    folded = {"k": "é " * 40}
    assert not documents._emitters_agree(folded, 120)
    assert documents._emitters_agree({"k": "é", "ascii": "a long plain value " * 20}, 120)


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_parse_gives_the_same_data_with_and_without_libyaml(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _python_text([CORPUS[index]])
    fast = documents.parse_yaml(text)
    monkeypatch.setattr(yamlio, "libyaml_available", lambda: False)
    slow = documents.parse_yaml(text)
    assert fast == slow == [yaml.safe_load(text)]


BAD_YAML = [
    "a: 1\nb: [1, 2\nc: 3\n",
    "a: 1\n  b: 2\n",
    "key: value\n\t- tab\n",
    "a: 1\na: 2\n",
    "x: {a: 1, a: 2}\n",
    "list:\n- a\n- b\n  c: d\n",
    "ok: 1\n---\nbad: 'unterminated\n",
    "a: !!python/object:os.system x\n",
    "a: *undefined\n",
]


@pytest.mark.parametrize("text", BAD_YAML)
def test_errors_name_the_same_line_with_and_without_libyaml(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError) as fast:
        documents.read_documents(text)
    monkeypatch.setattr(yamlio, "libyaml_available", lambda: False)
    with pytest.raises(InputError) as slow:
        documents.read_documents(text)
    assert fast.value.line is not None and fast.value.line == slow.value.line
    assert fast.value.message.startswith("invalid YAML") and slow.value.message.startswith("invalid YAML")


class _Recorder:
    """Records which loader (dra.yamlio) and dumper (dra.documents) classes are instantiated."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.used: list[str] = []
        for module, name in (
            (yamlio, "_Loader"),
            (yamlio, "_PyLoader"),
            (documents, "_Dumper"),
            (documents, "_PyDumper"),
        ):
            original = getattr(module, name)
            spy = type(name, (original,), {"__init__": self._init(name, original)})
            monkeypatch.setattr(module, name, spy)

    def _init(self, name: str, original: type) -> Any:
        used = self.used

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            used.append(name)
            original.__init__(self, *args, **kwargs)

        return __init__


def test_without_libyaml_the_pure_python_loader_and_dumper_are_used(
    monkeypatch: pytest.MonkeyPatch, no_libyaml: None
) -> None:
    recorder = _Recorder(monkeypatch)
    assert not documents.libyaml_available()
    text = documents.dump_documents(TRICKY)
    assert documents.parse_yaml(text) == [yaml.safe_load(t) for t in [_python_text([d]) for d in TRICKY]]
    assert text == _python_text(TRICKY)
    assert set(recorder.used) == {"_PyLoader", "_PyDumper"}


@needs_libyaml
def test_with_libyaml_the_c_loader_and_dumper_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder(monkeypatch)
    documents.parse_yaml(documents.dump_documents([TRICKY[1], TRICKY[2]]))
    assert set(recorder.used) == {"_Loader", "_Dumper"}


def _fresh_module(name: str, path: str) -> ModuleType:
    """A second copy of a module imported now (the module's classes are chosen at import)."""
    spec = importlib.util.spec_from_file_location(name, Path(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_a_pyyaml_without_libyaml_imports_and_reads_and_writes_the_same(
    monkeypatch: pytest.MonkeyPatch, no_libyaml: None
) -> None:
    reader = _fresh_module("_yamlio_without_libyaml", yamlio.__file__)
    monkeypatch.setitem(sys.modules, "dra.yamlio", reader)  # the fresh dra.documents imports this one
    module = _fresh_module("_documents_without_libyaml", documents.__file__)
    assert not module.libyaml_available()
    assert reader._Loader.__mro__[1] is yaml.SafeLoader and module._Dumper.__mro__[1] is yaml.SafeDumper
    text = module.dump_documents(CORPUS)
    assert text == _python_text(CORPUS)
    assert module.parse_yaml(text) == documents.parse_yaml(text)
    with pytest.raises(InputError) as caught:
        module.read_documents(BAD_YAML[0])
    assert caught.value.line == 3


def test_deep_input_still_takes_the_python_parser_and_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder(monkeypatch)
    text = "a: " + "[" * 205 + "]" * 205 + "\n"  # over _SAFE_DEPTH (200), within what the Python parser handles
    assert documents.parse_yaml(text)[0]["a"] is not None
    assert recorder.used == ["_PyLoader"]
