"""Shapes of our grammar's Lark tree (cel.lark) the compiler and checker look for through the precedence
wrappers: a lone literal, a lone list literal, an optional list element or map key, a dotted identifier.
"""

from __future__ import annotations

from typing import Any

from dra.cel.syntax import Token, Tree

__all__ = ["list_literal", "optional_entry", "qualified_name", "single_literal"]


def single_literal(tree: Any) -> Token | None:
    """The literal token when `tree` is nothing but a literal (through the precedence wrappers)."""
    node = tree
    while isinstance(node, Tree):
        if node.data == "literal":
            tok = node.children[0]
            return tok if isinstance(tok, Token) else None
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def list_literal(tree: Any) -> Tree | None:
    """The `list_lit` tree when `tree` is nothing but a list literal (through the precedence wrappers)."""
    node = tree
    while isinstance(node, Tree):
        if node.data == "list_lit":
            return node
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def optional_entry(tree: Any, rule: str) -> Any:
    """The expression of an optional list element (`opt_elem`, `[?e]`) or map key (`opt_key`, `{?k: v}`), or None."""
    if isinstance(tree, Tree) and tree.data == rule:
        return tree.children[0]
    return None


def qualified_name(tree: Any) -> str | None:
    """`a.b.c` made only of identifiers, or None."""
    parts: list[str] = []
    node = tree
    while True:
        if node.data == "member":
            node = node.children[0]
        elif node.data == "member_dot":
            if node.children[1].type == "ESC_IDENT":  # a backquoted field is never part of a name
                return None
            parts.append(str(node.children[1]))
            node = node.children[0]
        elif node.data == "primary" and isinstance(node.children[0], Tree) and node.children[0].data == "ident":
            parts.append(str(node.children[0].children[0]))
            return ".".join(reversed(parts))
        else:
            return None
