"""Reading Kubernetes objects from YAML or JSON files and text: streams, `List` objects, typed DRA models.

YAML is read the way sigs.k8s.io/yaml reads it for the API server: timestamps stay strings. Duplicate keys are an
error (PyYAML would silently keep the last one). Every error is an `InputError` naming the file and line.

Parsing and `dump_documents` use libyaml (PyYAML's `CSafeLoader` / `CSafeDumper`, several times faster) when PyYAML
was built with it, and the pure-Python `SafeLoader` / `SafeDumper` otherwise, with the same result: the same data,
the same error lines, the same text. Where the two emitters differ (they fold long double-quoted scalars, those
with escapes, at different columns) a document holding such a scalar is written by the pure-Python emitter. Both
build the representer's nodes in one pass for JSON-like data and remember resolved scalar tags (`_represent`,
`dra.yamlio.resolve_cached`: the same text, a long stream written about twice as fast). `iter_documents` reads a
stream one document at a time (`gpudra translate` on a long stream).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import yaml

from dra.errors import InputError, ModelValidationError
from dra.model import KIND_NAMES

if TYPE_CHECKING:
    from dra.model import K8sModel
from dra.yamlio import Source, libyaml_available, load_yaml, read_source, resolve_cached

__all__ = [
    "DRA_GROUP",
    "Document",
    "dump_documents",
    "iter_documents",
    "iter_text_documents",
    "libyaml_available",
    "load_documents",
    "load_objects",
    "load_objects_by_kind",
    "parse_yaml",
    "read_documents",
]

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _represent(dumper: Any, data: Any) -> None:
    """SafeRepresenter's `represent` for JSON-like data (exact `dict`, `list`, `str`, `int`, `bool`, None; anything
    else goes to SafeRepresenter), building its nodes in one pass exactly as SafeRepresenter builds them with
    `sort_keys=False`, `default_flow_style=False` and no aliases: the same text, a long stream written about twice
    as fast."""
    if dumper.sort_keys or dumper.default_flow_style is not False or dumper.default_style is not None:
        yaml.representer.BaseRepresenter.represent(dumper, data)
        return
    represent_data = dumper.represent_data

    def node(data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_STR, data)
        if kind is dict:
            return yaml.MappingNode(_MAP, [(node(k), node(v)) for k, v in data.items()], flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [node(v) for v in data], flow_style=False)
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if kind is int:
            return yaml.ScalarNode(_INT, str(data))
        if data is None:
            return yaml.ScalarNode(_NULL, "null")
        built: yaml.Node = represent_data(data)
        return built

    dumper.serialize(node(data))
    dumper.represented_objects = {}
    dumper.object_keeper = []
    dumper.alias_key = None


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """SafeDumper (libyaml when available) that writes repeated objects out instead of as anchors and aliases."""

    represent = _represent
    resolve = resolve_cached

    def ignore_aliases(self, data: Any) -> bool:
        return True


class _PyDumper(yaml.SafeDumper):
    """The pure-Python dumper, with the same rule."""

    represent = _represent
    resolve = resolve_cached

    def ignore_aliases(self, data: Any) -> bool:
        return True


class Document(NamedTuple):
    """One object read from a source, with where it starts (1-based line)."""

    data: dict[str, Any]
    source: str
    line: int


def _yaml_documents(text: str, name: str) -> Iterator[tuple[Any, yaml.Node]]:
    return load_yaml(text, name)


def _item_nodes(node: yaml.Node | None) -> list[yaml.Node | None]:
    """The nodes of a mapping's `items` sequence (for their line numbers)."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "items" and isinstance(value, yaml.SequenceNode):
                return list(value.value)
    return []


def _is_list(data: dict[str, Any]) -> bool:
    kind = data.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list)


def _expand(data: Any, node: yaml.Node | None, name: str, line: int) -> Iterator[Document]:
    if data is None:
        return
    if isinstance(data, list):
        nodes = list(node.value) if isinstance(node, yaml.SequenceNode) else []
        for index, item in enumerate(data):
            item_node = nodes[index] if index < len(nodes) else None
            yield from _expand(item, item_node, name, item_node.start_mark.line + 1 if item_node else line)
        return
    if not isinstance(data, dict):
        raise InputError(f"expected a Kubernetes object (a mapping), got {type(data).__name__}", source=name, line=line)
    if _is_list(data):
        nodes = _item_nodes(node)
        for index, item in enumerate(data["items"]):
            item_node = nodes[index] if index < len(nodes) else None
            item_line = item_node.start_mark.line + 1 if item_node is not None else line
            if not isinstance(item, dict):
                raise InputError(
                    f"items[{index}] of {data['kind']}: expected an object, got {type(item).__name__}",
                    source=name,
                    line=item_line,
                )
            yield from _expand(item, item_node, name, item_line)
        return
    yield Document(data, name, line)


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _json_documents(text: str, name: str) -> Iterator[Document]:
    try:
        data = json.loads(text, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as err:
        raise InputError(f"invalid JSON: {err.msg} at column {err.colno}", source=name, line=err.lineno) from None
    except ValueError as err:
        raise InputError(f"invalid JSON: {err}", source=name) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=name) from None
    yield from _expand(data, None, name, 1)


def read_documents(source: Source) -> list[Document]:
    """Every object in a file or text (YAML or JSON, multi-document, `List`s expanded), with its line."""
    return list(iter_documents(source))


Progress = Callable[[int, int], None]


def iter_documents(source: Source, progress: Progress | None = None) -> Iterator[Document]:
    """`read_documents` one YAML document at a time: a stream of any length costs the memory of its text and of one
    document (JSON is one document, read whole). `progress(done, total)` is called after each YAML document with
    the characters read so far and the text's length. The checks are `read_documents`' (size, depth, duplicate
    keys, aliases, the stream's alias allowance counted across its documents); an error is raised when its
    document is reached, after the documents before it were yielded."""
    text, name = read_source(source)
    return iter_text_documents(text, name, progress)


def iter_text_documents(text: str, name: str, progress: Progress | None = None) -> Iterator[Document]:
    """`iter_documents` of text already read (`dra.yamlio.read_source`), errors naming `name`."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            documents = list(_json_documents(text, name))
        except InputError as err:
            if name.endswith(".json") or "nested too deeply" in err.message:
                raise
            # Flow-style YAML also starts with a brace; fall through to the YAML reader.
        else:
            yield from documents
            return
    for data, node in _yaml_documents(text, name):
        yield from _expand(data, node, name, node.start_mark.line + 1)
        if progress is not None:
            progress(int(node.end_mark.index), len(text))


def parse_yaml(source: Source) -> list[Any]:
    """The documents of a YAML stream as plain data, empty documents left out, with this module's rules (duplicate
    keys rejected, timestamps as text, libyaml when available); errors are `InputError`s naming the file and line.
    Unlike `read_documents`, `List`s are not expanded and documents need not be objects."""
    text, name = read_source(source)
    return [data for data, _node in _yaml_documents(text, name) if data is not None]


# An escape is at most 10 characters (`\UXXXXXXXX`); a key and its indentation are counted on top of that.
_ESCAPE_WIDTH = 10


def _needs_double_quotes(text: str) -> bool:
    """Whether the emitter may write `text` double-quoted: characters outside printable ASCII and the line break,
    or a space next to a line break (PyYAML's `analyze_scalar` rules for SafeDumper without `allow_unicode`)."""
    return not text.isascii() or not (text.replace("\n", "").isprintable()) or " \n" in text or "\n " in text


def _emitters_agree(data: Any, width: int) -> bool:
    """False when some string of `data` may be folded as a double-quoted scalar, where libyaml and PyYAML differ."""
    try:  # JSON escapes every character that makes a string double-quoted (non-ASCII, controls, a line break) but DEL
        flat = json.dumps(data, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        flat = "\\"
    if "\\" not in flat and "\x7f" not in flat:
        return True  # no string needs double quotes: nothing to fold differently
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if type(item) is str:
            if len(item) * _ESCAPE_WIDTH + 2 * depth + 8 >= width and _needs_double_quotes(item):
                return False
        elif type(item) is dict:
            for key, value in item.items():
                if type(key) is str and len(key) * _ESCAPE_WIDTH + 2 * depth + 8 >= width and _needs_double_quotes(key):
                    return False
                stack.append((value, depth + 1 + (len(key) if type(key) is str else 8) // 2))
        elif type(item) is list:
            stack.extend((value, depth + 1) for value in item)
    return True


def dump_documents(documents: Iterable[Any], *, explicit_start: bool = False, width: int = 120) -> str:
    """Documents as one YAML stream: block style, keys in their order, no anchors, `---` between documents (and before
    the first with `explicit_start`). libyaml writes it when available, with the pure-Python emitter's exact text:
    a stream with a top-level scalar (libyaml leaves out the `...` that ends it) or a scalar that the two emitters
    fold differently is written by the pure-Python emitter."""
    items = list(documents)
    fast = (
        _Dumper is not _PyDumper
        and libyaml_available()
        and all(type(item) in (dict, list) and _emitters_agree(item, width) for item in items)
    )
    text = yaml.dump_all(
        items,
        Dumper=_Dumper if fast else _PyDumper,
        sort_keys=False,
        default_flow_style=False,
        width=width,
        explicit_start=explicit_start or None,
    )
    return str(text)


def load_documents(source: Source) -> list[dict[str, Any]]:
    """The objects in a file or text as dicts (YAML or JSON, multi-document streams, `kind: List`/`*List`)."""
    return [doc.data for doc in read_documents(source)]


Others = Literal["keep", "skip", "error"]

DRA_GROUP = "resource.k8s.io"
# Kinds of the resource.k8s.io group that dra.model does not model: read as other kinds are (`others`). Any other
# kind of the group (v1alpha2's ResourceClass, a typo) is an error in strict mode, never silently skipped.
_UNMODELLED_DRA_KINDS = frozenset({"DeviceTaintRule"})


def _label(doc: Document) -> str:
    kind = doc.data.get("kind")
    meta = doc.data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{kind} {name!r}" if isinstance(name, str) and name else str(kind)


def _typed(
    doc: Document, kinds: frozenset[str] | None, others: Others, validate: bool, notes: list[str] | None
) -> K8sModel | dict[str, Any]:
    """`notes` is None for the lenient read (`from_k8s`), the list strict reads append conversion notes to."""
    kind = doc.data.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError("object has no kind", source=doc.source, line=doc.line)
    if kinds is not None and kind not in kinds:
        expected = ", ".join(sorted(kinds))
        raise InputError(f"expected {expected}, got kind {kind!r}", source=doc.source, line=doc.line)
    if kind not in KIND_NAMES:  # the models are built only when a DRA kind turns up
        version = doc.data.get("apiVersion")
        in_group = isinstance(version, str) and version.startswith(DRA_GROUP + "/")
        if others == "error" or (notes is not None and in_group and kind not in _UNMODELLED_DRA_KINDS):
            raise InputError(
                f"unsupported kind {kind!r}" + (f" of {version}" if in_group else "")
                + f" (gpudra reads {', '.join(sorted(KIND_NAMES))})",
                source=doc.source,
                line=doc.line,
            )  # fmt: skip
        return doc.data
    from dra.model import KINDS, parse_strict

    try:
        if notes is None:
            obj = KINDS[kind].from_k8s(doc.data)
        else:
            obj, converted = parse_strict(doc.data)
            if converted.converted:
                notes.append(
                    f"note: {doc.source}:{doc.line}: {_label(doc)} is {converted.source_version}; "
                    f"converted to {DRA_GROUP}/v1 as the API server converts it"
                )
        if validate:
            obj.validate_k8s()
    except ModelValidationError as err:
        raise InputError(f"invalid {_label(doc)}: {err}", source=doc.source, line=doc.line) from None
    return obj


def load_objects(
    *sources: Source,
    kinds: Iterable[str] | None = None,
    others: Others = "keep",
    validate: bool = False,
    strict: bool = False,
    notes: list[str] | None = None,
) -> list[K8sModel | dict[str, Any]]:
    """Objects from one or more sources, DRA kinds as typed models (`dra.model.KINDS`), in order.

    `kinds` restricts what may appear (anything else is an `InputError`); objects of other kinds are kept as dicts
    (`others="keep"`), dropped (`"skip"`) or rejected (`"error"`). `validate=True` also applies `validate_k8s()`.
    `strict=True` reads DRA objects as the API server does with `fieldValidation=Strict` (`dra.model.parse_strict`):
    an unknown field is an error naming its path, so is an apiVersion other than resource.k8s.io/v1, v1beta2 or
    v1beta1, or a resource.k8s.io kind gpudra does not know; v1beta1/v1beta2 objects are converted to v1 as the API
    server converts them, with a note for each appended to `notes`.
    """
    wanted = frozenset(kinds) if kinds is not None else None
    strict_notes = (notes if notes is not None else []) if strict else None
    found: list[K8sModel | dict[str, Any]] = []
    for source in sources:
        for doc in read_documents(source):
            obj = _typed(doc, wanted, others, validate, strict_notes)
            if isinstance(obj, dict) and obj is doc.data and others == "skip":
                continue
            found.append(obj)
    return found


def load_objects_by_kind(
    *sources: Source, kinds: Iterable[str] | None = None, others: Others = "keep", validate: bool = False
) -> dict[str, list[K8sModel | dict[str, Any]]]:
    """`load_objects` grouped by `kind` (each list in source order)."""
    grouped: dict[str, list[K8sModel | dict[str, Any]]] = {}
    for obj in load_objects(*sources, kinds=kinds, others=others, validate=validate):
        kind = obj.get("kind") if isinstance(obj, dict) else getattr(obj, "kind", "")
        grouped.setdefault(str(kind), []).append(obj)
    return grouped
