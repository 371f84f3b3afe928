"""The one strict YAML reader: every YAML input of gpudra (objects, policies, tests, specs) is parsed here.

Strict as the API server's reader is: duplicate keys are an error naming the key and its line, timestamps stay
strings. Bounded, so that no input costs more than its size: files above a size cap are refused before they are
read; aliases may add at most `MAX_ALIAS_NODES` nodes to a stream once expanded (a 512-byte "billion laughs"
document expands to billions: the node graph is checked after composing, before anything walks the tree); recursive
aliases and nesting deeper than any Kubernetes object are refused. libyaml (PyYAML's C loader) parses when PyYAML
has it, the pure-Python loader otherwise, with the same data and error lines. A document without aliases is built
in one recursive pass (`_constructed`, the same data and errors as the loader's `construct_document`); only a
document whose text holds a `*` has its node graph walked for the alias allowance.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, Final

import yaml

from dra.errors import InputError

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_YAML_BYTES",
    "Source",
    "libyaml_available",
    "load_yaml",
    "read_source",
    "yaml_error",
    "yaml_nodes",
]

Source = str | os.PathLike[str]

# Larger than any object the API server stores (etcd's request limit is 1.5 MiB) and than a recorded ResourceSlice
# dump of a few thousand GPU nodes; callers reading smaller things (policies: a ConfigMap holds 1 MiB) pass less.
MAX_YAML_BYTES: Final = 64 * 2**20
# Nodes that aliases may add to a stream once expanded. Manifests and policies use a few anchors for shared
# snippets (hundreds of nodes); a bomb needs millions. go-yaml refuses bombs by a similar rule (decode.go).
MAX_ALIAS_NODES: Final = 10_000
_SAFE_DEPTH: Final = 200
_MAX_DEPTH: Final = 1000

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def libyaml_available() -> bool:
    """True when PyYAML has libyaml (its C loader and dumper), checked on each call."""
    return (
        bool(getattr(yaml, "__with_libyaml__", False)) and hasattr(yaml, "CSafeLoader") and hasattr(yaml, "CSafeDumper")
    )


# Implicit tags of plain scalars already resolved (a stream of manifests repeats its keys and many values; PyYAML
# tries its regular expressions on each, the loader once, the dumper's serializer twice): by loader or dumper class
# (a subclass may carry resolvers of its own), value and implicit flags, for values up to 200 characters. Loaders
# and dumpers (dra.documents) share it.
_RESOLVED: dict[tuple[type, str, Any], str] = {}
_RESOLVED_MAX = 100_000
_BASE_RESOLVE: Any = yaml.resolver.BaseResolver.resolve


def resolve_cached(loader: Any, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
    """`BaseResolver.resolve`, remembered for short scalars (`_RESOLVED`)."""
    if kind is not yaml.ScalarNode or loader.yaml_path_resolvers or len(value) > 200:
        return str(_BASE_RESOLVE(loader, kind, value, implicit))
    key = (type(loader), value, implicit)
    tag = _RESOLVED.get(key)
    if tag is None:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        tag = _RESOLVED[key] = str(_BASE_RESOLVE(loader, kind, value, implicit))
    return tag


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader (libyaml when available) without implicit timestamps, rejecting duplicate keys."""

    resolve = resolve_cached


class _PyLoader(yaml.SafeLoader):
    """The pure-Python loader: without libyaml, and for input nested deeply enough to overflow libyaml's C stack."""

    resolve = resolve_cached


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            )
        if key in result:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


def _construct_timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


for _cls in (_Loader, _PyLoader):
    _cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _cls.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_text)


def read_source(source: Source, max_bytes: int = MAX_YAML_BYTES) -> tuple[str, str]:
    """(text, name): a path that exists is read (refused above `max_bytes`, before reading), `-` is stdin, anything
    else is the text itself."""
    if isinstance(source, os.PathLike):
        path = Path(source)
        try:
            with path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > max_bytes:
                    raise InputError(
                        f"file is {size} bytes, more than the {max_bytes} a YAML input may be", source=str(path)
                    )
                # Read what the size says, plus one byte to see growth: a read of `max_bytes + 1` would allocate
                # that much (64 MiB) for every file, however small.
                data = handle.read(size + 1)
                if len(data) > size:  # it grew while being read: read on, to the limit
                    data += handle.read(max_bytes + 1 - len(data))
        except OSError as err:
            raise InputError(f"cannot read file: {err.strerror or err}", source=str(path)) from None
        if len(data) > max_bytes:  # grew while being read, or a pipe with no size
            raise InputError(f"file is more than the {max_bytes} bytes a YAML input may be", source=str(path))
        try:
            return data.decode("utf-8"), str(path)
        except UnicodeDecodeError as err:
            raise InputError(f"not UTF-8 text: {err.reason}", source=str(path)) from None
    if source == "-":
        text = sys.stdin.read(max_bytes + 1)
        if len(text) > max_bytes:
            raise InputError(f"input is more than the {max_bytes} bytes a YAML input may be", source="<stdin>")
        return text, "<stdin>"
    if "\n" not in source and source.strip() and not source.lstrip().startswith(("{", "[")):
        if os.path.isfile(source):
            return read_source(Path(source), max_bytes)
        if os.path.isdir(source):
            raise InputError("is a directory, expected a YAML or JSON file", source=source)
        if source.endswith((".yaml", ".yml", ".json")):
            raise InputError("no such file", source=source)
    if len(source) > max_bytes:
        raise InputError(f"text is {len(source)} characters, more than the {max_bytes} a YAML input may be")
    return source, "<string>"


def yaml_error(err: yaml.YAMLError, name: str) -> InputError:
    """The `InputError` for a PyYAML error: its problem, and the file and line (column in the text)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    text = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    if mark is None:
        return InputError(text, source=name)
    return InputError(f"{text} at column {mark.column + 1}", source=name, line=mark.line + 1)


_BRACKET = re.compile(r"[\[\]{}]")
# A line (as YAML and str.splitlines break them) that opens with two or more `- ` items: `- - x`.
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_NESTED_ITEMS = re.compile(rf"(?:\A|(?<=[{_BREAKS}]))[^\S{_BREAKS}]*(?:-[ \t][^\S{_BREAKS}]*){{2,}}")


def _nesting_estimate(text: str) -> int:
    """A cheap over-estimate of YAML nesting depth (flow brackets, or `- - -` on one line).

    libyaml recurses in C and crashes the process on very deep input, so such input goes to the pure-Python parser,
    and input deeper than any Kubernetes object is rejected before parsing. Only the brackets and the lines of
    nested items are looked at (regular expressions), so a long stream costs milliseconds here.
    """
    deepest = 0
    if text.count("[") + text.count("{") > _SAFE_DEPTH:
        depth = 0
        for match in _BRACKET.finditer(text):
            if match.group() in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif depth:
                depth -= 1
    if text.count("- ") > _SAFE_DEPTH:
        for match in _NESTED_ITEMS.finditer(text):
            deepest = max(deepest, match.group().count("-") * (_SAFE_DEPTH // 32))
    return deepest


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _expanded_size(root: yaml.Node, name: str, allowance: int) -> int:
    """Nodes that aliases add to the document at `root` once expanded, by one walk of the node graph (each distinct
    node once). Refuses a recursive alias, and stops as soon as the aliases add more than `allowance` nodes."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    added = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:  # a second reference: an alias, as large as what it names
            added += sizes[key]
            if added > allowance:
                raise InputError(
                    f"invalid YAML: aliases expand to more than {MAX_ALIAS_NODES} nodes (anchor at line "
                    f"{node.start_mark.line + 1}); write the values out instead",
                    source=name,
                    line=root.start_mark.line + 1,
                )
            continue
        if key in open_nodes:
            raise InputError(
                f"invalid YAML: the anchor at line {node.start_mark.line + 1} refers to itself", source=name,
                line=node.start_mark.line + 1,
            )  # fmt: skip
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(_children(node)))
    return added


def yaml_nodes(
    text: str, name: str, *, max_bytes: int = MAX_YAML_BYTES
) -> Generator[tuple[yaml.Node, yaml.SafeLoader]]:
    """Each document's root node of a YAML stream, checked (size, depth, aliases), with the loader that composed it
    (to construct the document's data: `loader.construct_document(node)`). Errors are `InputError`s."""
    if len(text) > max_bytes:
        raise InputError(f"YAML text is {len(text)} characters, more than the {max_bytes} allowed", source=name)
    depth = _nesting_estimate(text)
    if depth > _MAX_DEPTH:
        raise InputError(f"invalid YAML: nested too deeply (more than {_MAX_DEPTH} levels)", source=name)
    fast = depth <= _SAFE_DEPTH and _Loader is not _PyLoader and libyaml_available()
    loader = _Loader(text) if fast else _PyLoader(text)
    allowance = MAX_ALIAS_NODES
    may_alias = "*" in text  # an alias is written `*name`: a document without a `*` has none to expand
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if may_alias and text.find("*", node.start_mark.index, node.end_mark.index) >= 0:
                allowance -= _expanded_size(node, name, allowance)
            yield node, loader
    except yaml.YAMLError as err:
        raise yaml_error(err, name) from None
    except RecursionError:
        raise InputError("invalid YAML: nested too deeply", source=name) from None
    finally:
        loader.dispose()


_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")
)  # fmt: skip


def _constructed(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """The data of a document without aliases, built in one recursive pass: what `construct_document` builds, with
    the same errors (duplicate and unhashable keys), at a fraction of its bookkeeping. Merge keys and tags other
    than the plain JSON-like ones go through `construct_document`."""
    kind = type(node)
    tag = node.tag
    if kind is yaml.ScalarNode:
        if tag == _STR_TAG:
            return node.value
        if tag in _SCALAR_TAGS:
            return loader.yaml_constructors[tag](loader, node)
    elif kind is yaml.MappingNode and tag == _MAP_TAG:
        if not any(key.tag == _MERGE_TAG for key, _ in node.value):
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = _constructed(loader, key_node)
                if not isinstance(key, str | int | float | bool) and key is not None:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, "found an unhashable key",
                        key_node.start_mark,
                    )  # fmt: skip
                if key in result:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )  # fmt: skip
                result[key] = _constructed(loader, value_node)
            return result
    elif kind is yaml.SequenceNode and tag == _SEQ_TAG:
        return [_constructed(loader, item) for item in node.value]
    return loader.construct_document(node)


def load_yaml(text: str, name: str = "<string>", *, max_bytes: int = MAX_YAML_BYTES) -> Iterator[tuple[Any, yaml.Node]]:
    """Each document of a YAML stream as plain data, with its root node (for line numbers)."""
    nodes = yaml_nodes(text, name, max_bytes=max_bytes)
    for node, loader in nodes:
        try:
            if text.find("*", node.start_mark.index, node.end_mark.index) < 0:  # no alias: no node is shared
                data = _constructed(loader, node)
            else:
                data = loader.construct_document(node)
        except yaml.YAMLError as err:
            nodes.close()
            raise yaml_error(err, name) from None
        except RecursionError:
            nodes.close()
            raise InputError("invalid YAML: nested too deeply", source=name) from None
        yield data, node
