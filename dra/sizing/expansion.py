"""Kubernetes `$(VAR)` expansion of a container's command and args, as the kubelet does it, into a bounded budget.

The semantics of k8s.io/kubernetes third_party/forked/golang/expansion (`Expand`, `MappingFuncFor`): one pass, never
recursive; `$$` is a literal `$`; `$(NAME)` becomes NAME's value, or stays as written when NAME is not defined; an
unclosed `$(` and any other `$x` stay as written. No more than `budget` characters of output are ever built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Expanded", "expand_words"]


@dataclass(frozen=True, slots=True)
class Expanded:
    """The expanded words, and whether the budget cut them (then the last word is partial and later ones missing)."""

    words: tuple[str, ...]
    truncated: bool


class _Out:
    """Output pieces of one word, charged to the budget left; `full` once it is spent."""

    __slots__ = ("full", "left", "parts")

    def __init__(self, left: int) -> None:
        self.parts: list[str] = []
        self.left = left
        self.full = False

    def add(self, text: str, start: int = 0, end: int | None = None) -> None:
        # Slice only what fits: a 100 kB value referenced 6,000 times costs one budget, never 600 MB.
        stop = len(text) if end is None else end
        size = stop - start
        if size > self.left:
            stop, self.full = start + self.left, True
            size = self.left
        if size > 0:
            self.parts.append(text if start == 0 and stop == len(text) else text[start:stop])
            self.left -= size


def _expand(text: str, env: Mapping[str, str], out: _Out) -> None:
    n = len(text)
    checkpoint = 0
    close = -1  # index of the next ')' at or after the last search (n: none left); the cursor only moves forward
    cursor = text.find("$")
    while 0 <= cursor < n - 1 and not out.full:
        out.add(text, checkpoint, cursor)
        following = text[cursor + 1]
        if following == "$":  # escaped operator
            out.add("$")
            checkpoint = cursor + 2
        elif following == "(":
            if close < cursor + 2:
                found = text.find(")", cursor + 2)
                close = found if found >= 0 else n
            if close < n:
                name = text[cursor + 2 : close]
                value = env.get(name)
                if value is None:
                    out.add(text, cursor, close + 1)
                else:
                    out.add(value)
                checkpoint = close + 1
            else:  # incomplete reference: `$(` is copied and the scan goes on after it
                out.add("$(")
                checkpoint = cursor + 2
        else:  # `$x` that begins no expression: copied as is
            out.add(text, cursor, cursor + 2)
            checkpoint = cursor + 2
        cursor = text.find("$", checkpoint)
    if not out.full:
        out.add(text, checkpoint)


def expand_words(words: Sequence[str], env: Mapping[str, str], budget: int) -> Expanded:
    """Expand each word against `env` (literal values by name) into at most `budget` characters in all."""
    expanded: list[str] = []
    left = budget
    for word in words:
        out = _Out(left)
        if "$" in word:
            _expand(word, env, out)
        else:
            out.add(word)
        expanded.append(out.parts[0] if len(out.parts) == 1 else "".join(out.parts))
        left = out.left
        if out.full:
            return Expanded(tuple(expanded), True)
    return Expanded(tuple(expanded), False)
