"""A manifest file as `gpudra translate -R` rewrites it: its documents, each kept as written unless it changed.

The file is read once (`dra.documents.read_documents`: every error names the file and line) and split at its
`---` markers; a document whose objects changed is edited in place (`edits.edited_text`: only the lines of the keys
and items that changed, comments and layout kept; written out whole, its leading comments kept, where the text
cannot be edited locally), every other one stays byte for byte, and a file with no change is never written. Files
are replaced atomically (a temporary file in the same directory, then a rename), so an interrupted run leaves each
file either as it was or fully rewritten.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dra.documents import Document, dump_documents, read_documents
from dra.errors import InputError
from dra.yamlio import load_yaml

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


def _chunks(text: str) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    current: list[str] = []
    first = 1
    for number, line in enumerate(_lines(text), start=1):
        if _MARKER.match(line) and current:
            chunks.append(_Chunk(first, "".join(current)))
            current, first = [], number
        current.append(line)
    if current:
        chunks.append(_Chunk(first, "".join(current)))
    return chunks


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
    """A file's text and the objects in it (`List`s expanded), in order."""

    path: Path
    text: str
    documents: tuple[Document, ...]

    def rewritten(self, results: Sequence[dict[str, Any]]) -> str:
        """The file's text with `results[i]` in place of `documents[i]`; unchanged documents keep their text.

        Raises `InputError` when the file's layout cannot be matched to its objects (it is then left alone).
        """
        if len(results) != len(self.documents):
            raise ValueError("one result per document expected")
        if _is_json(self.text):
            raw = json.loads(self.text)
            return json.dumps(self._reshaped(raw, list(results), 1), indent=2) + "\n"
        chunks = _chunks(self.text)
        starts = [c.first_line for c in chunks]
        owned: list[list[int]] = [[] for _ in chunks]
        for index, document in enumerate(self.documents):
            owner = max(i for i, start in enumerate(starts) if start <= document.line)
            owned[owner].append(index)
        out: list[str] = []
        for chunk, indexes in zip(chunks, owned, strict=True):
            if all(results[i] is self.documents[i].data for i in indexes):
                out.append(chunk.text)
            else:
                out.append(self._rendered(chunk, [results[i] for i in indexes]))
        return "".join(out)

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
    """The file's text and objects; `InputError` naming the file and line when it cannot be read."""
    try:
        text = path.read_bytes().decode("utf-8")  # line ends as written: unchanged documents keep them
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", source=str(path)) from None
    return ManifestFile(path, text, tuple(read_documents(path)))


def write_atomically(path: Path, text: str, mode_like: Path | None = None) -> None:
    """Replace (or create) `path` with `text` via a temporary file in the same directory and a rename.

    The file keeps its permission bits; a new one takes those of `mode_like` (else 0644).
    """
    like = path if path.exists() else mode_like
    mode = stat.S_IMODE(like.stat().st_mode) if like is not None and like.exists() else 0o644
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
