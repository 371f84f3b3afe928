"""The parse tree the compiler reads: rules (`Tree`) and tokens (`Token`) of our grammar (cel.lark), with positions.

The parser (lark, in `parse.py`) builds its own tree, which `from_lark` copies into these classes, so that the
compiler, the checker and the trees kept between processes never need lark: a CLI call whose expressions were all
parsed before does not import it (a tenth of a short `gpudra translate`). The interface is the part of lark's
`Tree`/`Token` the code uses: `data`, `children`, `meta`, `iter_subtrees`, `scan_values`, `find_data`, `pretty`;
a token is the string it matched, with `type` and its positions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Meta", "Token", "Tree", "Where", "from_lark"]


class Token(str):
    """A terminal: the text it matched (a `str`), its terminal `type` and where it was in the source."""

    type: str
    start_pos: int | None
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None
    end_pos: int | None

    def __new__(
        cls,
        type: str,
        value: str,
        start_pos: int | None = None,
        line: int | None = None,
        column: int | None = None,
        end_line: int | None = None,
        end_column: int | None = None,
        end_pos: int | None = None,
    ) -> Token:
        token = super().__new__(cls, value)
        token.type = type
        token.start_pos = start_pos
        token.line = line
        token.column = column
        token.end_line = end_line
        token.end_column = end_column
        token.end_pos = end_pos
        return token

    @property
    def value(self) -> str:
        return str(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Token,
            (
                self.type,
                str(self),
                self.start_pos,
                self.line,
                self.column,
                self.end_line,
                self.end_column,
                self.end_pos,
            ),
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Token) and self.type != other.type:
            return False
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {str(self)!r})"


class Meta:
    """Where a rule's text was: `empty` when it matched no token (positions unknown)."""

    __slots__ = ("column", "empty", "end_column", "end_line", "end_pos", "line", "start_pos")

    def __init__(
        self,
        line: int | None = None,
        column: int | None = None,
        end_line: int | None = None,
        end_column: int | None = None,
        start_pos: int | None = None,
        end_pos: int | None = None,
    ) -> None:
        self.empty = line is None
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column
        self.start_pos = start_pos
        self.end_pos = end_pos


Where = tuple[int, int, int, int, int, int]  # line, column, end_line, end_column, start_pos, end_pos


class Tree:
    """A rule (`data`) and what it matched (`children`: trees and tokens); `meta` says where (read only on errors,
    so a tree keeps the bare numbers and a taken-back tree builds no position objects)."""

    __slots__ = ("children", "data", "where")

    def __init__(self, data: str, children: list[Any], where: Where | None = None) -> None:
        self.data = data
        self.children = children
        self.where = where

    @property
    def meta(self) -> Meta:
        return Meta() if self.where is None else Meta(*self.where)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Tree, (self.data, self.children, self.where))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tree) and self.data == other.data and self.children == other.children

    def __hash__(self) -> int:
        return hash((self.data, tuple(self.children)))

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"

    def iter_subtrees(self) -> Iterator[Tree]:
        """Every subtree once, in lark's order: breadth first from the right, reversed (children before parents)."""
        queue: list[Tree] = [self]
        for node in queue:  # a parse tree shares no subtree, so none is met twice
            queue.extend(child for child in reversed(node.children) if type(child) is Tree)
        return reversed(queue)

    def scan_values(self, pred: Callable[[Any], bool]) -> Iterator[Any]:
        """The tokens (non-tree children) anywhere below that satisfy `pred`, left to right."""
        stack: list[Any] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Tree):
                stack.extend(reversed(node.children))
            elif pred(node):
                yield node

    def find_data(self, data: str) -> Iterator[Tree]:
        return (tree for tree in self.iter_subtrees() if tree.data == data)

    def pretty(self, indent: str = "  ") -> str:
        out: list[str] = []
        stack: list[tuple[Any, int]] = [(self, 0)]
        while stack:
            node, level = stack.pop()
            if not isinstance(node, Tree):
                out.append(f"{indent * level}{node}\n")
                continue
            if len(node.children) == 1 and not isinstance(node.children[0], Tree):
                out.append(f"{indent * level}{node.data}\t{node.children[0]}\n")
                continue
            out.append(f"{indent * level}{node.data}\n")
            stack.extend((child, level + 1) for child in reversed(node.children))
        return "".join(out)


def from_lark(tree: Any) -> Tree:
    """Copy a lark tree into these classes, without recursion (a deeply nested expression parses)."""

    def token(t: Any) -> Token:
        return Token(t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos)

    def where(t: Any) -> Where | None:
        m = t.meta
        if getattr(m, "empty", True):
            return None
        return (m.line, m.column, m.end_line, m.end_column, m.start_pos, m.end_pos)

    root = Tree(str(tree.data), [], where(tree))
    stack: list[tuple[Any, Tree]] = [(tree, root)]
    while stack:
        source, copy = stack.pop()
        for child in source.children:
            if hasattr(child, "children"):
                node = Tree(str(child.data), [], where(child))
                copy.children.append(node)
                stack.append((child, node))
            else:
                copy.children.append(token(child))
    return root
