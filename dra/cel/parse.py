"""The parser front: CEL source to a Lark tree with our grammar (cel.lark, LALR with the contextual lexer).

Syntax errors become `CelCompileError` naming `<input>:line:column`, what was found, what was expected, and
the source line with a caret under the place.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import stat
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Final

from lark import Lark, Token, Tree
from lark import __version__ as lark_version
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from dra.errors import CelCompileError

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
    kind = _KEYWORDS.get(token.value)
    if kind is None and token.value in RESERVED_WORDS:
        kind = "RESERVED"
    return token if kind is None else Token.new_borrow_pos(kind, token.value, token)


def _unquote(token: Token) -> Token:
    return Token.new_borrow_pos(token.type, token.value[1:-1], token)


def _private_cache_dir() -> Path | None:
    """The user's own cache directory for gpudra, or None where it cannot be made private (a read-only home, the
    webhook's container, another owner, group- or world-writable) or with GPUDRA_NO_PARSER_CACHE set: the files
    kept there are read with pickle."""
    if os.environ.get("GPUDRA_NO_PARSER_CACHE"):
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpudra"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = base.stat()
    except OSError:
        return None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return base


def _table_cache() -> str | bool:
    """Where Lark may keep the grammar's LALR tables between processes (building them is most of a short CLI
    call's CPU), or False (build every time) where no private cache directory exists."""
    base = _private_cache_dir()
    if base is None:
        return False
    # Lark checks the grammar's and its options' digest inside the file and rebuilds on any mismatch
    return str(base / f"cel-lalr-lark{lark_version}-py{sys.version_info[0]}{sys.version_info[1]}.cache")


class TreeCache:
    """Parse trees of expressions seen before, kept between processes in one file (parsing the shipped policies'
    hundred expressions is a third of a short `gpudra translate`). Keyed by the grammar's text, this module's
    keyword and quoting rules and lark's version through the file name; bounded in entries and bytes; a file that
    cannot be read is ignored and replaced. Written once, at exit, when something new was parsed."""

    MAX_ENTRIES: Final = 4096
    MAX_TEXT: Final = 4096  # longer expressions are parsed every time
    MAX_FILE_BYTES: Final = 16 << 20

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, bytes] | None = None
        self._dirty = False
        self.hits = 0

    def _load(self) -> dict[str, bytes]:
        entries: dict[str, bytes] = {}
        if self.path is not None:
            try:
                with self.path.open("rb") as handle:
                    blob = handle.read(self.MAX_FILE_BYTES + 1)
                if len(blob) <= self.MAX_FILE_BYTES:
                    loaded = pickle.loads(blob)
                    if isinstance(loaded, dict):
                        entries = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}
            except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
                entries = {}
        self._entries = entries
        return entries

    def get(self, text: str) -> Tree[Token] | None:
        entries = self._entries if self._entries is not None else self._load()
        blob = entries.get(text)
        if blob is None:
            return None
        try:
            tree = pickle.loads(blob)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, RecursionError):
            del entries[text]
            return None
        if not isinstance(tree, Tree):
            del entries[text]
            return None
        self.hits += 1
        return tree

    def put(self, text: str, tree: Tree[Token]) -> None:
        if self.path is None or len(text) > self.MAX_TEXT:
            return
        entries = self._entries if self._entries is not None else self._load()
        if len(entries) >= self.MAX_ENTRIES:  # the oldest half goes
            for old in list(entries)[: self.MAX_ENTRIES // 2]:
                del entries[old]
        try:
            blob = pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)
        except RecursionError:  # a deeply nested expression: parsed every time
            return
        entries[text] = blob
        if not self._dirty:
            self._dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        """Write the entries (atomically: a reader sees the old file or the new one, never half of one)."""
        if not self._dirty or self.path is None or self._entries is None:
            return
        self._dirty = False
        blob = pickle.dumps(self._entries, protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > self.MAX_FILE_BYTES:
            return
        try:
            fd, tmp = tempfile.mkstemp(prefix=".cel-trees-", dir=self.path.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(tmp, self.path)
        except OSError:
            return


@cache
def tree_cache() -> TreeCache:
    base = _private_cache_dir()
    if base is None:
        return TreeCache(None)
    here = Path(__file__)
    digest = hashlib.sha256()
    digest.update(here.with_name("cel.lark").read_bytes())
    digest.update(here.read_bytes())  # the keyword and quoting callbacks shape the trees too
    digest.update(lark_version.encode())
    name = f"cel-trees-py{sys.version_info[0]}{sys.version_info[1]}-{digest.hexdigest()[:16]}.pickle"
    return TreeCache(base / name)


@cache
def _parser() -> Lark:
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


def parse(text: str) -> Tree[Token]:
    """Parse CEL source into our grammar's Lark tree, raising `CelCompileError` with the position."""
    trees = tree_cache()
    tree = trees.get(text)
    if tree is not None:
        return tree
    parser = _parser()
    try:
        tree = parser.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(parser, text, exc) from None
    trees.put(text, tree)
    return tree


def _syntax_error(parser: Lark, text: str, exc: UnexpectedInput) -> CelCompileError:
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
