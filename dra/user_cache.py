"""Work a short `gpudra` call would otherwise redo every time, kept between processes in the user's own cache.

`private_cache_dir()` is `$XDG_CACHE_HOME/gpudra` (or `~/.cache/gpudra`) when it can be made private to the user:
the stores there are read with pickle, so a directory another user could write is never used. `DiskStore` is one
file of `key -> bytes` entries in it: bounded in entries, key length and file size, read on first use, written
atomically at exit (a reader sees the old file or the new one, never half of one) and only when something new was
put; a file that cannot be read is ignored and replaced. GPUDRA_NO_PARSER_CACHE turns every store off.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DiskStore", "private_cache_dir", "source_digest"]


def private_cache_dir() -> Path | None:
    """The user's own cache directory for gpudra, or None where it cannot be made private (a read-only home, the
    webhook's container, another owner, group- or world-writable) or with GPUDRA_NO_PARSER_CACHE set."""
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


def source_digest(files: Iterable[Path], *extra: str) -> str:
    """A short digest of the files' bytes (and `extra`): a store named by it is never read by other code."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    for text in extra:
        digest.update(text.encode())
    return digest.hexdigest()[:16]


class DiskStore:
    """`key -> bytes` entries in one file (see the module's docstring); `path=None` keeps nothing."""

    def __init__(
        self, path: Path | None, *, max_entries: int = 4096, max_key_chars: int = 4096, max_file_bytes: int = 16 << 20
    ) -> None:
        self.path = path
        self.max_entries = max_entries
        self.max_key_chars = max_key_chars
        self.max_file_bytes = max_file_bytes
        self._entries: dict[str, bytes] | None = None
        self._dirty = False

    def _load(self) -> dict[str, bytes]:
        entries: dict[str, bytes] = {}
        if self.path is not None:
            try:
                with self.path.open("rb") as handle:
                    blob = handle.read(self.max_file_bytes + 1)
                if len(blob) <= self.max_file_bytes:
                    loaded = pickle.loads(blob)
                    if isinstance(loaded, dict):
                        entries = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}
            except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
                entries = {}
        self._entries = entries
        return entries

    def get(self, key: str) -> bytes | None:
        entries = self._entries if self._entries is not None else self._load()
        return entries.get(key)

    def discard(self, key: str) -> None:
        """Forget an entry its reader found unusable (it is rewritten at the next `put`)."""
        entries = self._entries if self._entries is not None else self._load()
        entries.pop(key, None)

    def put(self, key: str, value: bytes) -> None:
        if self.path is None or len(key) > self.max_key_chars or len(value) > self.max_file_bytes // 4:
            return
        entries = self._entries if self._entries is not None else self._load()
        if len(entries) >= self.max_entries:  # the oldest half goes
            for old in list(entries)[: self.max_entries // 2]:
                del entries[old]
        entries[key] = value
        if not self._dirty:
            self._dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        """Write the entries now (atomically), if anything was put since the last save."""
        if not self._dirty or self.path is None or self._entries is None:
            return
        self._dirty = False
        blob = pickle.dumps(self._entries, protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > self.max_file_bytes:
            return
        import tempfile  # here: a call that only reads the stores never needs it

        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}-", dir=self.path.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(tmp, self.path)
        except OSError:
            return
