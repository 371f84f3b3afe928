"""The parser front: celpy's Lark grammar, after a source pre-pass for CEL's optional syntax.

celpy 0.5 does not parse `x.?f`, `m[?k]`, `[?e]` or `{?k: v}`. The pre-pass rewrites them into hidden calls
the grammar accepts (`x.__opt_select__("f")`, `m.__opt_index__(k)`, `[__opt_elem__(e)]`, `{__opt_key__(k): v}`);
the compiler recognises those names. Identifiers starting with `__opt_` are refused in user source.
"""

from __future__ import annotations

import re
from typing import Any, Final

from dra.errors import CelCompileError

__all__ = ["OPT_ELEM", "OPT_INDEX", "OPT_KEY", "OPT_SELECT", "parse", "rewrite_optionals"]

OPT_SELECT: Final = "__opt_select__"
OPT_INDEX: Final = "__opt_index__"
OPT_ELEM: Final = "__opt_elem__"
OPT_KEY: Final = "__opt_key__"

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<str>[rRbB]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\.\?|&&|\|\||==|!=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)

_VALUE_END = {")", "]", "}"}


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the op branch matches any character
            break
        kind = m.lastgroup or "op"
        out.append((kind, m.group()))
        pos = m.end()
    return out


def rewrite_optionals(text: str) -> str:
    """Rewrite optional syntax into hidden calls; the text is returned unchanged when it has none."""
    if "?" not in text:
        return text
    toks = _tokens(text)
    if not any(v in ("?", ".?") for k, v in toks if k == "op"):
        return text
    out: list[str] = []
    # Stack of open brackets: (char, kind) where kind is "list", "map", "index", "call", "paren".
    stack: list[list[Any]] = []
    prev = ""  # previous significant token text
    prev_kind = ""
    for kind, val in toks:
        if kind == "ws":
            out.append(val)
            continue
        if kind == "ident" and val.startswith("__opt_"):
            raise CelCompileError(f"reserved identifier '{val}'", expression=text)
        if kind == "op" and val == ".?":
            out.append("." + OPT_SELECT + "(")
            stack.append(["select", 0])
            prev, prev_kind = val, kind
            continue
        if stack and stack[-1][0] == "select" and kind == "ident":
            out.append(f'"{val}")')
            stack.pop()
            prev, prev_kind = ")", "op"
            continue
        if kind == "op" and val in "[{(":
            value_before = prev_kind in ("ident", "str", "num") or prev in _VALUE_END
            if val == "[":
                stack.append(["index" if value_before else "list", 0])
            elif val == "{":
                stack.append(["object" if value_before else "map", 0])
            else:
                stack.append(["call", 0])
            out.append(val)
            prev, prev_kind = val, kind
            continue
        if kind == "op" and val == "?" and stack and prev in ("[", "{", ","):
            top = stack[-1]
            if top[0] == "index" and prev == "[":
                # m[?k] -> m.__opt_index__(k): replace the "[" already written.
                idx = len(out) - 1
                while out[idx].isspace():
                    idx -= 1
                out[idx] = "." + OPT_INDEX + "("
                top[0] = "optindex"
            elif top[0] == "list":
                out.append(OPT_ELEM + "(")
                top[1] += 1
            elif top[0] == "map" and prev in ("{", ","):
                out.append(OPT_KEY + "(")
                top[1] += 1
            else:
                out.append(val)
            prev, prev_kind = val, kind
            continue
        if kind == "op" and stack and val in (",", ":", "]", "}", ")"):
            top = stack[-1]
            closes = {"]": ("list", "index", "optindex"), "}": ("map", "object"), ")": ("call",)}
            # Close a pending optional wrapper at the end of its element (list) or key (map).
            if top[1] and ((top[0] == "list" and val in (",", "]")) or (top[0] == "map" and val == ":")):
                out.append(")" * top[1])
                top[1] = 0
            if val in closes and top[0] in closes[val]:
                out.append(")" if top[0] == "optindex" else val)
                stack.pop()
                prev, prev_kind = val, kind
                continue
        out.append(val)
        prev, prev_kind = val, kind
    return "".join(out)


_parser: Any = None


def parse(text: str) -> Any:
    """Parse CEL source into celpy's Lark tree, raising `CelCompileError` with the position."""
    global _parser
    if _parser is None:
        from celpy.celparser import CELParser

        _parser = CELParser()
    from celpy.celparser import CELParseError

    source = rewrite_optionals(text)
    try:
        return _parser.parse(source)
    except CELParseError as exc:
        line = getattr(exc, "line", None)
        column = getattr(exc, "column", None)
        position = None
        if source is text and isinstance(line, int) and isinstance(column, int):
            lines = text.split("\n")
            position = sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
        first = str(exc.args[0]).strip().splitlines()
        where = f"<input>:{line}:{column}: " if line else ""
        detail = first[-1] if first else "syntax error"
        raise CelCompileError(
            f"{where}Syntax error: {detail.strip()} in {text!r}", expression=text, position=position
        ) from None
