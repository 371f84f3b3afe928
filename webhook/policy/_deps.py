"""Which activation roots a policy expression can read, found conservatively from its source text.

Used to memoize results that depend only on cheap-to-key inputs (the `gpu` facts, `legacy`, `params`). Any
identifier spelled like a root counts as a read (inside a string literal, as a comprehension variable) unless it
is a field selection (`x.legacy`), so the answer can only over-approximate; `variables` read other than as
`variables.<name>` means every variable.
"""

from __future__ import annotations

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


def reads(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """(roots other than `variables`, names of variables read; `ALL_VARIABLES` when not statically known)."""
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
