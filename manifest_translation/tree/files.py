"""A manifest file as `gpudra translate -R` rewrites it: its documents, each kept as written unless it changed.

The file's text is split at its `---` markers and read one YAML document at a time (`groups`: the objects parsed
by `dra.documents.iter_text_documents`, every error naming the file and line), so a long stream costs its text and
one document's objects, never all of them at once (a JSON file is one document, read whole); a document whose
objects changed is edited in place (`edits.edited_text`: only the lines of the keys
and items that changed, comments and layout kept; written out whole, its leading comments kept, where the text
cannot be edited locally), every other one stays byte for byte, and a file with no change is never written. Files
are replaced atomically (a temporary file in the same directory, then a rename), so an interrupted run leaves each
file either as it was or fully rewritten.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dra.documents import Document, dump_documents, iter_text_documents
from dra.errors import InputError
from dra.yamlio import load_yaml, read_source

from .edits import edited_text

__all__ = ["ManifestFile", "read_manifest", "write_atomically"]

_MARKER = re.compile(r"---(?:[ \t\r]|$)")
_HEADER = re.compile(r"(?:\s*|\s*#.*|---\s*(?:#.*)?)")


@dataclass(frozen=True)
class _Chunk:
    """The lines of one YAML document (from its `---` marker, or the file's start, to the next marker)."""

    first_line: int  # 1-based
    text: str


# A line as YAML counts them (CR, LF, CRLF, NEL, LS, PS end one), so the numbers match the parser's.
_LINE = re.compile(r"[^\r\n\x85\u2028\u2029]*(?:\r\n|[\r\n\x85\u2028\u2029]|$)")


def _lines(text: str) -> list[str]:
    return [m.group(0) for m in _LINE.finditer(text) if m.group(0)]


def _chunks(text: str) -> Iterator[_Chunk]:
    """The text's YAML documents as written, one at a time."""
    current: list[str] = []
    first, number = 1, 0
    for match in _LINE.finditer(text):
        line = match.group(0)
        if not line:
            continue
        number += 1
        if _MARKER.match(line) and current:
            yield _Chunk(first, "".join(current))
            current, first = [], number
        current.append(line)
    if current:
        yield _Chunk(first, "".join(current))


def _is_json(text: str) -> bool:
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ManifestFile:
    """A file's text, read in groups: each YAML document as written with the objects in it (`List`s expanded)."""

    path: Path
    text: str

    def documents(self) -> Iterator[Document]:
        """The file's objects in order, parsed one YAML document at a time."""
        return iter_text_documents(self.text, str(self.path))

    def groups(self) -> Iterator[tuple[_Chunk | None, list[Document]]]:
        """Each YAML document's text (None for a JSON file, one group) with the objects parsed from it, in order.

        Raises `InputError` naming the file and line when a document cannot be read (after the groups before it).
        """
        if _is_json(self.text):
            yield None, list(self.documents())
            return
        documents = self.documents()
        waiting = next(documents, None)
        chunks = _chunks(self.text)
        chunk = next(chunks, None)
        while chunk is not None:
            following = next(chunks, None)
            owned: list[Document] = []
            # a document belongs to the last chunk starting at or before its line
            while waiting is not None and (following is None or waiting.line < following.first_line):
                owned.append(waiting)
                waiting = next(documents, None)
            yield chunk, owned
            chunk = following

    def rendered(self, chunk: _Chunk | None, documents: Sequence[Document], results: Sequence[dict[str, Any]]) -> str:
        """The group's text with `results[i]` in place of `documents[i]`: as written when none changed.

        Raises `InputError` when the document's layout cannot be matched to its objects (the file is then left
        alone).
        """
        if len(results) != len(documents):
            raise ValueError("one result per document expected")
        if chunk is None:
            raw = json.loads(self.text)
            return json.dumps(self._reshaped(raw, list(results), 1), indent=2) + "\n"
        if all(result is document.data for result, document in zip(results, documents, strict=True)):
            return chunk.text
        return self._rendered(chunk, list(results))

    def _rendered(self, chunk: _Chunk, results: list[dict[str, Any]]) -> str:
        try:
            ((raw, node),) = [(d, n) for d, n in load_yaml(chunk.text, str(self.path)) if d is not None]
        except (ValueError, InputError):
            raise self._layout_error(chunk) from None
        reshaped = self._reshaped(raw, results, chunk.first_line)
        edited = edited_text(chunk.text, node, raw, reshaped, str(self.path))
        if edited is not None:
            return edited
        header: list[str] = []
        for line in _lines(chunk.text):
            if not _HEADER.fullmatch(line.rstrip("\r\n")):
                break
            header.append(line)
        starts_with_marker = bool(_MARKER.match(chunk.text))
        marker = "---\n" if starts_with_marker and not any(_MARKER.match(line) for line in header) else ""
        body = marker + dump_documents([reshaped])
        if "\r\n" in chunk.text:
            body = body.replace("\n", "\r\n")  # the document's line ends as written
        return "".join(header) + body

    def _reshaped(self, raw: Any, results: list[dict[str, Any]], line: int) -> Any:
        """`raw` (a document as parsed) with its objects replaced by `results`: a List keeps its wrapper."""
        if isinstance(raw, dict) and isinstance(raw.get("items"), list) and str(raw.get("kind", "")).endswith("List"):
            if len(raw["items"]) == len(results):
                return {**raw, "items": results}
        elif isinstance(raw, list):
            if len(raw) == len(results):
                return results
        elif isinstance(raw, dict) and len(results) == 1:
            return results[0]
        raise self._layout_error(_Chunk(line, ""))

    def _layout_error(self, chunk: _Chunk) -> InputError:
        return InputError(
            "cannot match this document's layout to its objects (nested Lists, directives or several documents "
            "between two `---` markers), so the file is left as it is",
            source=str(self.path),
            line=chunk.first_line,
        )


def read_manifest(path: Path) -> ManifestFile:
    """The file's text (line ends as written: unchanged documents keep them), its size checked as every YAML input's;
    `InputError` naming the file when it cannot be read. Its objects are parsed when its groups are read."""
    text, _ = read_source(path)
    return ManifestFile(path, text)


def write_atomically(path: Path, text: str | Path, mode_like: Path | None = None) -> None:
    """Replace (or create) `path` with `text` (or the content of the file at `text`, copied as it is) via a temporary
    file in the same directory and a rename.

    The file keeps its permission bits; a new one takes those of `mode_like` (else 0644).
    """
    like = path if path.exists() else mode_like
    mode = stat.S_IMODE(like.stat().st_mode) if like is not None and like.exists() else 0o644
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(text, Path):
                with text.open("rb") as source:
                    shutil.copyfileobj(source, handle)
            else:
                handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
