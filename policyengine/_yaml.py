"""YAML documents with source positions, so policy errors can name file:line:column.

`load_located(text)` returns each document's plain data together with a `Positions` index from a field path
(`("spec", "variables", 0, "expression")`) to the 1-based line and column of that value in the source. Parsing is
`dra.yamlio`'s (duplicate keys, alias bombs and oversized text refused, as for every YAML input).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from dra.errors import InputError
from dra.yamlio import MAX_YAML_BYTES, yaml_error, yaml_nodes

__all__ = ["LocatedDocument", "Path", "Positions", "load_located"]

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class _Span:
    line: int  # 1-based, where the value starts
    column: int  # 1-based
    style: str | None  # None (plain), "'", '"', "|", ">"
    end_line: int


@dataclass
class Positions:
    """Where each value of one document sits in its file."""

    source_lines: list[str]
    spans: dict[Path, _Span] = field(default_factory=dict)

    def at(self, path: Path) -> tuple[int | None, int | None]:
        """Line and column of the value at `path`, or of its nearest located parent."""
        for cut in range(len(path), -1, -1):
            span = self.spans.get(path[:cut])
            if span is not None:
                return span.line, span.column
        return None, None

    def offset(self, path: Path, offset: int | None) -> tuple[int | None, int | None]:
        """Line and column of character `offset` inside the string scalar at `path` (start when unknown)."""
        span = self.spans.get(path)
        if span is None:
            return self.at(path)
        if offset is None or offset < 0:
            return span.line, span.column
        if span.style in (None, "'", '"') and span.line == span.end_line:
            return span.line, span.column + offset + (1 if span.style else 0)
        if span.style in ("|", ">"):
            return self._in_block(span, offset)
        return span.line, span.column

    def _in_block(self, span: _Span, offset: int) -> tuple[int, int]:
        # Block scalars start on the line after the indicator; literal keeps newlines, folded joins lines
        # with one space. Either way each source line contributes len(stripped) + 1 characters.
        # The block's indentation is its first content line's; deeper indentation is part of the text.
        remaining = offset
        base: int | None = None
        for index in range(span.line, min(span.end_line, len(self.source_lines))):
            raw = self.source_lines[index].rstrip()
            if not raw.strip():
                continue
            if base is None:
                base = len(raw) - len(raw.lstrip())
            text = raw[base:]
            if remaining <= len(text):
                return index + 1, base + remaining + 1
            remaining -= len(text) + 1
        return span.line, span.column


@dataclass(frozen=True)
class LocatedDocument:
    """One YAML document: its data, where each field is, and the line the document starts on."""

    data: Any
    positions: Positions
    line: int


def _record(node: yaml.Node, path: Path, spans: dict[Path, _Span]) -> None:
    # libyaml writes a plain scalar's style as "", PyYAML as None.
    style = (node.style or None) if isinstance(node, yaml.ScalarNode) else None
    spans[path] = _Span(node.start_mark.line + 1, node.start_mark.column + 1, style, node.end_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                _record(value_node, (*path, str(key_node.value)), spans)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record(item, (*path, index), spans)


def load_located(text: str, name: str = "<string>", *, max_bytes: int = MAX_YAML_BYTES) -> list[LocatedDocument]:
    """Every document of a YAML stream with its positions; raises `InputError` (file and line) on bad YAML."""
    lines = text.splitlines()
    documents: list[LocatedDocument] = []
    nodes = yaml_nodes(text, name, max_bytes=max_bytes)
    for node, loader in nodes:
        spans: dict[Path, _Span] = {}
        try:
            _record(node, (), spans)
            data = loader.construct_document(node)
        except yaml.YAMLError as err:
            nodes.close()
            raise yaml_error(err, name) from None
        except RecursionError:
            nodes.close()
            raise InputError("invalid YAML: nested too deeply", source=name) from None
        documents.append(LocatedDocument(data, Positions(lines, spans), node.start_mark.line + 1))
    return documents
