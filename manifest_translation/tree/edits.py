"""A YAML document's text edited in place, so that a GitOps diff shows only what changed.

`edited_text(text, node, old, new)` turns the text of one document (`old`, composed as `node` by the strict reader
`dra.yamlio`) into text that reads as `new`, by editing only the lines of the keys and items that differ: a removed
key loses its lines, an added one is written right after its preceding sibling in the indentation of its
neighbours, a changed scalar's key (or item) is written again on its own lines. Everything else stays byte for
byte: comments, blank lines, quoting, block scalars, each sequence's own indentation (helm output mixes
`key:\\n  - item` and `key:\\n- item` in one document, which a round-trip emitter with one global indentation, such
as ruamel.yaml's, re-indents: 125 of the 180 lines of production-stack's rendered vLLM Deployment, measured).

The edit works on the text, located by the marks of the node graph the strict reader composed (so duplicate keys,
alias bombs and the size and depth limits are refused first, as for any input). Where the text cannot be edited
locally (flow style, an empty collection, a merge key, a compact `- - x` item), the smallest enclosing key or item
is written again instead, up to the whole document. The result is read back by the strict reader and must give
exactly `new`, or `edited_text` returns None (the caller then writes the document out whole).
"""

from __future__ import annotations

import difflib
import io
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from dra.errors import InputError
from dra.yamlio import load_yaml

__all__ = ["edited_text", "same_data"]


_FIRST = object()
_ITEM_PREFIX = re.compile(r"[ \t]*(?:-[ \t]+)*")


class _Unsupported(Exception):
    """This node's text cannot be edited locally; its parent writes it again."""


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def same_data(a: Any, b: Any) -> bool:
    """Equal, and of the same types throughout (`1`, `1.0` and `True` differ, as they do in a manifest)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(same_data(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN is NaN


class _Dumper(yaml.SafeDumper):
    """The pure-Python emitter (its text is the project's reference), repeated objects written out, multi-line
    strings as literal block scalars, and sequences indented under their key or not, as the document does."""

    indented_sequences = False

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, indentless and not self.indented_sequences)


class _IndentedDumper(_Dumper):
    indented_sequences = True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value.rstrip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


for _cls in (_Dumper, _IndentedDumper):
    _cls.add_representer(str, _represent_str)


@dataclass(frozen=True)
class _Style:
    """How the document indents: its mapping step and whether its sequences sit under their key (`key:\\n  - x`)."""

    step: int
    indented_sequences: bool


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """The index just after the line break that ends the line holding `index` (the text's end on its last line)."""
    found = text.find("\n", index)
    return len(text) if found < 0 else found + 1


def _blank_before(text: str, index: int) -> bool:
    return not text[_line_start(text, index) : index].strip(" \t")


def _content_end(text: str, node: yaml.Node) -> int:
    """The index just after the node's last character of content (comments and blank lines after it left out)."""
    if isinstance(node, yaml.ScalarNode):
        end = int(node.end_mark.index)
        if node.style in ("|", ">"):
            while end > node.start_mark.index and text[end - 1] in " \t\r\n":
                end -= 1
        return end
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(text, last[1] if isinstance(last, tuple) else last)
    return int(node.end_mark.index)


def _dash(text: str, item: yaml.Node) -> int:
    """The index of the `-` that opens a block sequence's item; `_Unsupported` for `- - x` (compact nesting)."""
    index = int(item.start_mark.index) - 1
    while index >= 0 and text[index] in " \t\r\n":
        index -= 1
    if index < 0 or text[index] != "-" or not _blank_before(text, index):
        raise _Unsupported
    return index


class _Editor:
    def __init__(self, text: str, style: _Style, newline: str) -> None:
        self.text = text
        self.style = style
        self.newline = newline

    # The text written for new keys and items.

    def _emit(self, data: Any, column: int, indented: bool, flow: bool = False) -> str:
        """`data` as block YAML (with `flow`, a mapping whose values are written in flow style), every line after the
        first indented by `column` (the first sits where the replaced text began); ends without a line break."""
        dumper = _IndentedDumper if indented else _Dumper
        options: dict[str, Any] = {"allow_unicode": True, "width": 4096, "indent": self.style.step}
        if flow:
            representer = dumper(io.StringIO(), default_flow_style=True, sort_keys=False, **options)
            node: Any = representer.represent_data(data)
            node.flow_style = False
            dumped = yaml.serialize(node, Dumper=dumper, **options)
        else:
            dumped = yaml.dump(data, Dumper=dumper, sort_keys=False, default_flow_style=False, **options)
        lines = str(dumped).rstrip("\n").split("\n")
        if lines[-1] == "...":  # a top-level scalar's end marker, never part of a key or item
            lines.pop()
        pad = " " * column
        return (self.newline + pad).join(lines)

    def _emit_lines(self, data: Any, column: int, indented: bool) -> str:
        """Whole lines (each indented by `column`, each ending with the document's line break)."""
        return " " * column + self._emit(data, column, indented) + self.newline

    def _sequences_indented(self, mapping: yaml.MappingNode) -> bool:
        for key, value in mapping.value:
            if isinstance(value, yaml.SequenceNode) and not value.flow_style and value.value:
                try:
                    dash = _dash(self.text, value.value[0])
                except _Unsupported:
                    continue
                return bool(dash - _line_start(self.text, dash) > key.start_mark.column)
        return self.style.indented_sequences

    # Mappings.

    def diff(self, node: yaml.Node, old: Any, new: Any) -> list[_Edit]:
        if same_data(old, new):
            return []
        if isinstance(node, yaml.MappingNode) and type(old) is dict and type(new) is dict:
            return self._mapping(node, old, new)
        if isinstance(node, yaml.SequenceNode) and type(old) is list and type(new) is list:
            return self._sequence(node, old, new)
        raise _Unsupported

    def _mapping(self, node: yaml.MappingNode, old: dict[Any, Any], new: dict[Any, Any]) -> list[_Edit]:
        if node.flow_style or not node.value or len(node.value) != len(old) or not new:  # `{}`, flow, a merge key
            raise _Unsupported
        pairs = dict(zip(old, node.value, strict=True))
        if any(not isinstance(k, yaml.ScalarNode) or not self._plain_key(k) for k, _ in node.value):
            raise _Unsupported
        edits: list[_Edit] = []
        for key, (key_node, value_node) in pairs.items():
            if key not in new:
                edits.append(self._delete_pair(key_node, value_node))
            elif not same_data(old[key], new[key]):
                try:
                    edits.extend(self.diff(value_node, old[key], new[key]))
                except _Unsupported:
                    edits.append(self._replace_pair(key_node, value_node, key, new[key], node))
        edits.extend(self._added_keys(node, pairs, new))
        return edits

    def _plain_key(self, key: yaml.Node) -> bool:
        """The key opens its line, or follows its item's `- ` (not `? key`, not a key after a flow indicator)."""
        start = int(key.start_mark.index)
        return _ITEM_PREFIX.fullmatch(self.text, _line_start(self.text, start), start) is not None

    def _delete_pair(self, key: yaml.Node, value: yaml.Node) -> _Edit:
        start = int(key.start_mark.index)
        if not _blank_before(self.text, start):  # the first key of a `- key: value` item
            raise _Unsupported
        return _Edit(_line_start(self.text, start), _line_end(self.text, _content_end(self.text, value)), "")

    def _replace_pair(self, key: yaml.Node, value: yaml.Node, name: Any, data: Any, mapping: yaml.MappingNode) -> _Edit:
        column = int(key.start_mark.column)
        flow = isinstance(value, yaml.CollectionNode) and bool(value.flow_style) and type(data) in (dict, list)
        text = self._emit({name: data}, column, self._sequences_indented(mapping), flow)
        return _Edit(int(key.start_mark.index), _content_end(self.text, value), text)

    def _added_keys(
        self, node: yaml.MappingNode, pairs: dict[Any, tuple[yaml.Node, yaml.Node]], new: dict[Any, Any]
    ) -> list[_Edit]:
        """New keys, each run of them right after the kept key that precedes it in `new`."""
        column = int(node.value[0][0].start_mark.column)
        indented = self._sequences_indented(node)
        runs: dict[Any, dict[Any, Any]] = {}  # the kept key each run follows (_FIRST: before them all) -> the run
        anchor: Any = _FIRST
        for key, value in new.items():
            if key in pairs:
                anchor = key
            else:
                runs.setdefault(anchor, {})[key] = value
        edits: list[_Edit] = []
        for after, run in runs.items():
            if after is _FIRST:
                first = node.value[0][0]  # before the mapping's first key, kept or removed
                if not _blank_before(self.text, first.start_mark.index):
                    raise _Unsupported
                at = _line_start(self.text, first.start_mark.index)
            else:
                at = _line_end(self.text, _content_end(self.text, pairs[after][1]))
                if at == len(self.text) and not self.text.endswith("\n"):
                    run_text = self.newline + self._emit_lines(run, column, indented)
                    edits.append(_Edit(at, at, run_text.removesuffix(self.newline)))
                    continue
            edits.append(_Edit(at, at, self._emit_lines(run, column, indented)))
        return edits

    # Sequences.

    def _sequence(self, node: yaml.SequenceNode, old: list[Any], new: list[Any]) -> list[_Edit]:
        if node.flow_style or not node.value or len(node.value) != len(old) or not new:  # `[]` is written again
            raise _Unsupported
        items = list(node.value)
        dashes = [_dash(self.text, item) for item in items]
        column = dashes[0] - _line_start(self.text, dashes[0])
        edits: list[_Edit] = []
        if len(old) == len(new):
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                edits.extend(self._changed_item(items[i], dashes[i], column, a, b))
            return edits
        matcher = difflib.SequenceMatcher(None, [_canonical(x) for x in old], [_canonical(x) for x in new], False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                continue
            if op == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    edits.extend(self._changed_item(items[i], dashes[i], column, old[i], new[j]))
                continue
            for i in range(i1, i2):
                start = _line_start(self.text, dashes[i])
                edits.append(_Edit(start, _line_end(self.text, _content_end(self.text, items[i])), ""))
            if j2 > j1:
                if i1 > 0:
                    at = _line_end(self.text, _content_end(self.text, items[i1 - 1]))
                    if at == len(self.text) and not self.text.endswith("\n"):
                        raise _Unsupported
                else:
                    at = _line_start(self.text, dashes[0])
                edits.append(_Edit(at, at, self._emit_lines(new[j1:j2], column, False)))
        return edits

    def _changed_item(self, item: yaml.Node, dash: int, column: int, old: Any, new: Any) -> list[_Edit]:
        if same_data(old, new):
            return []
        try:
            return self.diff(item, old, new)
        except _Unsupported:
            return [_Edit(dash, _content_end(self.text, item), self._emit([new], column, False))]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _style(text: str, root: yaml.Node) -> _Style:
    """The document's mapping step and sequence placement, by majority over its block collections."""
    steps: dict[int, int] = {}
    indented = flat = 0
    stack = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.append(value)
                if value.flow_style if isinstance(value, yaml.CollectionNode) else True:
                    continue
                if not value.value:
                    continue
                if isinstance(value, yaml.MappingNode) and value.start_mark.line > key.start_mark.line:
                    step = int(value.value[0][0].start_mark.column - key.start_mark.column)
                    steps[step] = steps.get(step, 0) + 1
                elif isinstance(value, yaml.SequenceNode):
                    try:
                        dash = _dash(text, value.value[0])
                    except _Unsupported:
                        continue
                    if dash - _line_start(text, dash) > key.start_mark.column:
                        indented += 1
                    else:
                        flat += 1
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    step = max(steps, key=lambda s: (steps[s], -s)) if steps else 2
    return _Style(step if 2 <= step <= 9 else 2, indented > flat)


def edited_text(text: str, node: yaml.Node, old: Any, new: Any, name: str = "<document>") -> str | None:
    """The document's text edited to read as `new` (see the module's docstring); None when it cannot be."""
    newline = "\r\n" if "\r\n" in text else "\n"
    editor = _Editor(text, _style(text, node), newline)
    try:
        edits = editor.diff(node, old, new)
    except (_Unsupported, yaml.YAMLError):
        return None
    edits.sort(key=lambda e: (e.start, e.end))
    for before, after in zip(edits, edits[1:], strict=False):
        if before.end > after.start:
            return None
    out = text
    for edit in reversed(edits):
        out = out[: edit.start] + edit.text + out[edit.end :]
    try:
        documents = [data for data, _node in load_yaml(out, name) if data is not None]
    except InputError:
        return None
    return out if len(documents) == 1 and same_data(documents[0], new) else None
