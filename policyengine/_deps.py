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

__all__ = ["ROOTS", "ALL_VARIABLES", "reads"]

ROOTS = frozenset(
    {"object", "oldObject", "request", "namespaceObject", "variables", "params", "gpu", "container", "legacy"}
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
    from dra.cel.parse import parse  # not at import: policyengine loads without the parser until it compiles
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

    A root read `object.metadata.annotations['x']` is `("object", ("metadata", "annotations"))`: everything the
    expression sees of the root lies in the subtree at that path. A path stops before a method call
    (`object.spec.containers.exists(...)` reads `("object", ("spec", "containers"))`) and at any index.
    """
    source = code_text(source)
    text = _SPACED_DOT.sub(".", source)
    found: set[Read] = set()
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
        found.add((name, tuple(path)))
    return frozenset(found), reads(source)[1]


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
