"""Which activation roots a policy expression can read, found conservatively from its source text.

Used to memoize results that depend only on cheap-to-key inputs (the `gpu` facts, `legacy`, `params`). Any
identifier spelled like a root counts as a read (as a comprehension variable, in a comment) unless it is a field
selection (`x.legacy`) or inside a string literal (blanked first, at the positions CEL's own lexer found, so
`'container ' + x` reads no `container`), so the answer can only over-approximate; `variables` read other than as
`variables.<name>` means every variable.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ROOTS", "ALL_VARIABLES", "reads"]

ROOTS = frozenset(
    {"object", "oldObject", "request", "namespaceObject", "variables", "params", "gpu", "pod", "container", "legacy"}
)
ALL_VARIABLES = "*"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACED_DOT = re.compile(r"\s*\.\s*")
# What may end the operand of a field selection: `a.b`, `f().b`, `m[k].b`, `{...}.b`, `'s'.b`.
_OPERAND_END = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_)]}'\"")
_VARIABLE = re.compile(r"\bvariables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


@functools.lru_cache(maxsize=4096)
def code_text(source: str) -> str:
    """`source` with each string and bytes literal's text blanked (`'` and spaces, same length), where the CEL
    lexer (dra.cel.parse, the grammar expressions are compiled with) finds them: no identifier inside a literal is
    a read. Unchanged when it does not parse (it then never compiled either)."""
    from dra.cel import parse_tree as parse  # not at import: policyengine loads without CEL until it compiles
    from dra.errors import CelError

    try:
        tree = parse(source)
    except CelError:
        return source
    literals = sorted(
        (token.start_pos, str(token))
        for token in tree.scan_values(lambda v: getattr(v, "type", None) in ("STRING_LIT", "BYTES_LIT"))
    )
    parts: list[str] = []
    at = 0
    for start, text in literals:
        end = -1 if start is None else start + len(text)
        if start is None or start < at or len(text) < 2 or source[start:end] != text:
            return source  # not where the lexer read it: keep every identifier (over-approximate)
        parts.append(source[at:start])
        parts.append("'" + " " * (end - start - 2) + "'")
        at = end
    parts.append(source[at:])
    return "".join(parts)


def reads(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """(roots other than `variables`, names of variables read; `ALL_VARIABLES` when not statically known)."""
    source = code_text(source)
    text = _SPACED_DOT.sub(".", source)
    roots: set[str] = set()
    for match in _IDENT.finditer(text):
        name, at = match.group(), match.start()
        if name in ROOTS and not (at >= 2 and text[at - 1] == "." and text[at - 2] in _OPERAND_END):
            roots.add(name)
    names: set[str] = set()
    if "variables" in roots:
        roots.discard("variables")
        names = set(_VARIABLE.findall(source))
        if len(_VARIABLE.findall(source)) != len(re.findall(r"\bvariables\b", source)):
            names.add(ALL_VARIABLES)
    return frozenset(roots), frozenset(names)


def closure(sources: list[str], levels: list[Mapping[str, str]]) -> frozenset[str] | None:
    """Every root the expressions in `sources` read, following `variables.<name>` through `levels` (innermost
    first, each mapping a variable name to its source); None when a variable read is not statically known."""
    found: set[str] = set()
    seen: set[tuple[int, str]] = set()

    def visit(source: str, level: int) -> bool:
        roots, names = reads(source)
        found.update(roots)
        if ALL_VARIABLES in names:
            return False
        for name in names:
            where = next((i for i in range(level, len(levels)) if name in levels[i]), None)
            if where is None:
                continue  # an unknown variable is a runtime error whatever the inputs
            if (where, name) not in seen:
                seen.add((where, name))
                if not visit(levels[where][name], where):
                    return False
        return True

    for source in sources:
        if not visit(source, 0):
            return None
    return frozenset(found)


Read = tuple[str, tuple[str, ...]]


def paths(source: str) -> tuple[frozenset[Read], frozenset[str]]:
    """(the (root, field path) pairs the expression can read through, names of variables read).

    A root read `object.metadata.annotations.size()` is `("object", ("metadata", "annotations"))`: everything the
    expression sees of the root lies in the subtree at that path. A path stops before a method call
    (`object.spec.containers.exists(...)` reads `("object", ("spec", "containers"))`) and at any index. Where every
    use of a path only asks for named keys of it (see `keyed_uses`: `p['k']`, `'k' in p`, `has(p)`, `p != null`),
    the read is narrowed to those keys: `'ray.io/node-type' in object.metadata.labels` reads
    `("object", ("metadata", "labels", "ray.io/node-type"))`, so pods whose other labels differ share it.
    """
    found: set[Read] = set()
    counts = _text_paths(source)
    uses = keyed_uses(source)
    for read, count in counts.items():
        keys = uses.get(read) if uses is not None else None
        if keys is None or len(keys) != count or None in keys:
            found.add(read)  # read whole (or not every use was recognised: never narrower than the text says)
        else:
            found.update((read[0], (*read[1], key)) for key in keys if key is not None)
    return frozenset(found), reads(source)[1]


def _text_paths(source: str) -> dict[Read, int]:
    """Each (root, path) the text reads through, with how many times it appears."""
    source = code_text(source)
    text = _SPACED_DOT.sub(".", source)
    found: dict[Read, int] = {}
    for match in _IDENT.finditer(text):
        name, at = match.group(), match.start()
        if name not in ROOTS or name == "variables":
            continue
        if at >= 2 and text[at - 1] == "." and text[at - 2] in _OPERAND_END:
            continue
        path: list[str] = []
        pos = match.end()
        while pos < len(text) and text[pos] == ".":
            field = _IDENT.match(text, pos + 1)
            if field is None:
                break
            rest = text[field.end() :].lstrip()
            if rest.startswith("("):
                break
            path.append(field.group())
            pos = field.end()
        read = (name, tuple(path))
        found[read] = found.get(read, 0) + 1
    return found


# A string literal whose text is its value: no escapes, not raw, not triple-quoted.
_PLAIN_STRING = re.compile(r"'([^'\\\r\n]*)'" + r'|"([^"\\\r\n]*)"')
_FIELD_TOKENS = frozenset({"IDENT", "RESERVED"})


def _only_child(node: Any) -> Any:
    """Down through the one-child levels of the parse tree (`expr` → ... → `primary`) to what they wrap."""
    while len(node.children) == 1 and hasattr(node.children[0], "data"):
        node = node.children[0]
    return node


def _literal(node: Any, kind: str) -> Any:
    """The token of the literal `node` wraps when it is of terminal `kind`, else None."""
    node = _only_child(node)
    if node.data != "literal" or len(node.children) != 1:
        return None
    token = node.children[0]
    return token if getattr(token, "type", None) == kind else None


def _plain_string(node: Any) -> str | None:
    token = _literal(node, "STRING_LIT")
    match = _PLAIN_STRING.fullmatch(str(token)) if token is not None else None
    if match is None:
        return None
    return match.group(1) if match.group(1) is not None else match.group(2)


@functools.lru_cache(maxsize=4096)
def keyed_uses(source: str) -> dict[Read, tuple[str | None, ...]] | None:
    """For each (root, field path) selection in the parse tree (CEL's own, dra.cel.parse), how each occurrence
    uses it: a key when only that key of it matters, None when all of it may. Keyed uses:

    - `p['k']` (a plain string literal index): the value at `k`, or its absence;
    - `'k' in p`: whether `k` is a key of it (or, when `p` is no map, all of it);
    - `has(p)`, `p == null`, `p != null`: whether `p` is there, is null: key "" (any key's fingerprint says where the
      path stops and whether it is null, `_memo.fingerprint`).

    None when the source does not parse (it never compiled either).
    """
    from dra.cel import parse_tree as parse
    from dra.errors import CelError

    try:
        tree = parse(source)
    except CelError:
        return None
    parents: dict[int, Any] = {}
    roots: list[Any] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        for child in node.children:
            if hasattr(child, "data"):
                parents[id(child)] = node
                pending.append(child)
        if node.data == "ident" and str(node.children[0]) in ROOTS and str(node.children[0]) != "variables":
            roots.append(node)
    out: dict[Read, list[str | None]] = {}
    for ident in roots:
        path: list[str] = []
        top = parents.get(id(ident))  # primary
        member = parents.get(id(top)) if top is not None else None
        if top is None or member is None or member.data != "member":
            continue  # not a selection chain (cannot happen in this grammar): the text's count will not match
        top = member
        while True:
            step = parents.get(id(top))
            if step is None or step.data != "member_dot" or step.children[0] is not top:
                break
            field = step.children[1]
            above = parents.get(id(step))
            if getattr(field, "type", None) not in _FIELD_TOKENS or above is None or above.data != "member":
                break
            path.append(str(field))
            top = above
        came = top
        parent = parents.get(id(came))
        while parent is not None and len(parent.children) == 1:
            came, parent = parent, parents.get(id(parent))
        key: str | None = None
        if parent is None:
            pass
        elif parent.data == "member_index" and parent.children[0] is came:
            key = _plain_string(parent.children[1])
        elif parent.data == "relation" and len(parent.children) == 2:
            left, right = parent.children
            if right is came and left.data == "relation_in":
                key = _plain_string(left.children[0])
            elif came is left and left.data in ("relation_eq", "relation_ne"):
                key = "" if _literal(right, "NULL_LIT") is not None else None
            elif right is came and left.data in ("relation_eq", "relation_ne"):
                key = "" if _literal(left.children[0], "NULL_LIT") is not None else None
        elif (
            parent.data == "ident_arg"
            and str(parent.children[0]) == "has"
            and came.data == "exprlist"
            and path  # has() tests the last field's presence
        ):
            key = ""
        out.setdefault((str(ident.children[0]), tuple(path)), []).append(key)
    return {read: tuple(keys) for read, keys in out.items()}


def path_closure(sources: list[str], variables: Mapping[str, str]) -> frozenset[Read] | None:
    """Every (root, path) the expressions in `sources` read, through the one level of `variables`; None when a
    variable read is not statically known."""
    found: set[Read] = set()
    seen: set[str] = set()
    pending = list(sources)
    while pending:
        reads_, names = paths(pending.pop())
        if ALL_VARIABLES in names:
            return None
        found.update(reads_)
        for name in names:
            if name in variables and name not in seen:
                seen.add(name)
                pending.append(variables[name])
    return frozenset(found)


def path_closure_levels(sources: list[str], levels: list[Mapping[str, str]]) -> frozenset[Read] | None:
    """`path_closure` through nested variable levels (innermost first, as `closure`)."""
    found: set[Read] = set()
    seen: set[tuple[int, str]] = set()
    pending = [(source, 0) for source in sources]
    while pending:
        source, level = pending.pop()
        reads_, names = paths(source)
        if ALL_VARIABLES in names:
            return None
        found.update(reads_)
        for name in names:
            where = next((i for i in range(level, len(levels)) if name in levels[i]), None)
            if where is not None and (where, name) not in seen:
                seen.add((where, name))
                pending.append((levels[where][name], where))
    return frozenset(found)
