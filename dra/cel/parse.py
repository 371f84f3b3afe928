"""The parser front: CEL source to our parse tree (`dra.cel.syntax`) with our grammar (cel.lark, parsed by lark's
LALR parser with the contextual lexer). lark is imported only to parse a text not parsed before (`TreeCache`).

Syntax errors become `CelCompileError` naming `<input>:line:column`, what was found, what was expected, and
the source line with a caret under the place.
"""

from __future__ import annotations

import importlib.util
import pickle
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from dra.cel.syntax import Tree, from_lark
from dra.errors import CelCompileError
from dra.user_cache import DiskStore, private_cache_dir, source_digest

if TYPE_CHECKING:
    from lark import Lark, Token
    from lark.exceptions import UnexpectedInput

__all__ = ["RESERVED_WORDS", "parse"]

# cel-spec langdef.md, "Lexical structure": reserved for embedding, never identifiers.
RESERVED_WORDS: Final = frozenset(
    {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package"}
    | {"namespace", "return", "var", "void", "while"}
)
_KEYWORDS: Final = {"true": "BOOL_LIT", "false": "BOOL_LIT", "null": "NULL_LIT", "in": "IN"}

# Terminal names as a reader knows them, for "expected ..." in error messages.
_READABLE: Final = {
    "IDENT": "identifier",
    "ESC_IDENT": "`quoted field`",
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "STRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "BOOL_LIT": "bool",
    "NULL_LIT": "null",
    "IN": "'in'",
    "$END": "end of input",
}


def _keyword(token: Token) -> Token:
    from lark import Token

    kind = _KEYWORDS.get(token.value)
    if kind is None and token.value in RESERVED_WORDS:
        kind = "RESERVED"
    return token if kind is None else Token.new_borrow_pos(kind, token.value, token)


def _unquote(token: Token) -> Token:
    from lark import Token

    return Token.new_borrow_pos(token.type, token.value[1:-1], token)


def _table_cache() -> str | bool:
    """Where Lark may keep the grammar's LALR tables between processes (building them is most of a short CLI
    call's CPU), or False (build every time) where no private cache directory exists."""
    from lark import __version__ as lark_version

    base = private_cache_dir()
    if base is None:
        return False
    # Lark checks the grammar's and its options' digest inside the file and rebuilds on any mismatch
    return str(base / f"cel-lalr-lark{lark_version}-py{sys.version_info[0]}{sys.version_info[1]}.cache")


class TreeCache:
    """Parse trees of expressions seen before, kept between processes (`dra.user_cache.DiskStore`: parsing the
    shipped policies' hundred expressions is a third of a short `gpudra translate`). Keyed by the grammar's text,
    this module's keyword and quoting rules and lark's version through the file name; texts longer than `MAX_TEXT`
    are parsed every time. The last `MAX_LIVE` trees taken back are also kept as objects: the compiler and the memo
    planner both ask for each policy expression's tree, and trees are read, never changed."""

    MAX_ENTRIES: Final = 4096
    MAX_TEXT: Final = 4096
    MAX_FILE_BYTES: Final = 16 << 20
    MAX_LIVE: Final = 512

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._store = DiskStore(
            path, max_entries=self.MAX_ENTRIES, max_key_chars=self.MAX_TEXT, max_file_bytes=self.MAX_FILE_BYTES
        )
        self.hits = 0
        self._live: dict[str, Tree] = {}

    def get(self, text: str) -> Tree | None:
        live = self._live.get(text)
        if live is not None:
            self.hits += 1
            return live
        blob = self._store.get(text)
        if blob is None:
            return None
        try:
            tree = pickle.loads(blob)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, RecursionError):
            tree = None
        if not isinstance(tree, Tree):
            self._store.discard(text)
            return None
        self.hits += 1
        if len(self._live) >= self.MAX_LIVE:
            self._live.clear()
        self._live[text] = tree
        return tree

    def put(self, text: str, tree: Tree) -> None:
        if self.path is None or len(text) > self.MAX_TEXT:
            return
        try:
            blob = pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)
        except RecursionError:  # a deeply nested expression: parsed every time
            return
        self._store.put(text, blob)

    def save(self) -> None:
        """Write the entries (atomically: a reader sees the old file or the new one, never half of one)."""
        self._store.save()


@cache
def tree_cache() -> TreeCache:
    base = private_cache_dir()
    if base is None:
        return TreeCache(None)
    here = Path(__file__)
    # The keyword and quoting callbacks shape the trees too, and so may lark's version: its package's __init__
    # (which names the version) is read, not imported, since a call that only reads the cache never needs lark.
    lark_spec = importlib.util.find_spec("lark")
    lark_init = [Path(lark_spec.origin)] if lark_spec is not None and lark_spec.origin else []
    digest = source_digest((here.with_name("cel.lark"), here, here.with_name("syntax.py"), *lark_init))
    name = f"cel-trees-py{sys.version_info[0]}{sys.version_info[1]}-{digest}.pickle"
    return TreeCache(base / name)


@cache
def _parser() -> Lark:
    from lark import Lark

    grammar = (Path(__file__).with_name("cel.lark")).read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=_table_cache(),
        # IDENT last: lark 1.3 chains a callback after its keyword check with a closure over its loop
        # variable, so only the last chained terminal's callback would run.
        lexer_callbacks={"ESC_IDENT": _unquote, "IDENT": _keyword},
    )


def parse(text: str) -> Tree:
    """Parse CEL source into our grammar's tree, raising `CelCompileError` with the position."""
    trees = tree_cache()
    tree = trees.get(text)
    if tree is not None:
        return tree
    from lark.exceptions import UnexpectedInput

    parser = _parser()
    try:
        parsed: Any = parser.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(parser, text, exc) from None
    tree = from_lark(parsed)
    trees.put(text, tree)
    return tree


def _syntax_error(parser: Lark, text: str, exc: UnexpectedInput) -> CelCompileError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    # At the end of input lark places the error on the last token read: the caret goes under it.
    pos = exc.pos_in_stream
    position = len(text) if isinstance(exc, UnexpectedEOF) or pos is None else min(max(pos, 0), len(text))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    if isinstance(exc, UnexpectedCharacters):
        found = f"character {text[position]!r}" if position < len(text) else "end of input"
    elif isinstance(exc, UnexpectedEOF):
        found = "end of input"
    elif isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            found = "end of input"
        elif token.type == "ESC_IDENT":
            found = f"'`{token.value}`'"
        elif token.type == "RESERVED":
            found = f"reserved identifier '{token.value}'"
        else:
            found = f"'{token.value}'"
    else:  # pragma: no cover - lark raises only the three above
        found = "input"
    expected = _expected(parser, exc)
    source_line = text.split("\n")[line - 1] if text else ""
    caret = " " * (column - 1) + "^"
    detail = f"Syntax error: unexpected {found}"
    if expected:
        detail += f", expected {expected}"
    return CelCompileError(
        f"<input>:{line}:{column}: {detail} in {text!r}\n | {source_line}\n | {caret}",
        expression=text,
        position=position,
    )


def _expected(parser: Lark, exc: UnexpectedInput) -> str:
    # `accepts` (what the parser would take here, reductions followed) when lark computed it.
    names = getattr(exc, "accepts", None) or getattr(exc, "expected", None) or getattr(exc, "allowed", None) or set()
    shown: list[str] = []
    for name in sorted(names):
        if name in ("WHITESPACE", "COMMENT", "RESERVED"):
            continue
        readable = _READABLE.get(name)
        if readable is None:
            try:
                pattern = parser.get_terminal(name).pattern
                readable = f"'{pattern.value}'" if pattern.type == "str" else name
            except KeyError:
                readable = name
        shown.append(readable)
    shown = sorted(set(shown))
    if len(shown) > 8:
        return ""
    return " or ".join(shown) if len(shown) <= 2 else ", ".join(shown[:-1]) + " or " + shown[-1]
