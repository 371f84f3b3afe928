"""The serving policy set, reloaded from a directory with ConfigMap-mount semantics.

Kubernetes mounts a ConfigMap as `..data -> ..<timestamp>/` plus one symlink per key, and swaps `..data`
atomically on update. The store polls a digest of the policy files as they resolve; when it changes it loads the
whole new set, and only a set that loads without errors (and that `refuse` does not refuse: an empty set, for the
webhook) replaces the one serving. A failed set is kept out, logged,
counted and shown by `/readyz` until a good one arrives.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from policyengine import MAX_POLICY_BYTES, policy_files

__all__ = ["LoadedSet", "PolicyStore", "ReloadStatus"]

log = logging.getLogger("gpudra.webhook.policies")


class LoadedSet(Protocol):
    @property
    def errors(self) -> Sequence[object]: ...


S = TypeVar("S", bound=LoadedSet)


@dataclass(frozen=True)
class ReloadStatus:
    digest: str
    loaded_at: float
    last_error: str | None
    failures: int
    reloads: int


# Files above the loader's limit are not read to be digested (it refuses them anyway): their size and mtime stand in.
DIGEST_READ_LIMIT = MAX_POLICY_BYTES


def directory_digest(directory: Path) -> str:
    """A digest of the policy files' names and contents, following symlinks as a reader would."""
    h = hashlib.sha256()
    for path in policy_files([directory]):
        try:
            stat = path.stat()
            if stat.st_size > DIGEST_READ_LIMIT:
                data = f"<{stat.st_size} bytes, modified {stat.st_mtime_ns}>".encode()
            else:
                data = path.read_bytes()
        except OSError:
            data = b"<unreadable>"
        h.update(path.name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


class PolicyStore(Generic[S]):
    """Holds the current policy set; `reload_if_changed()` is called by a poller (or a test)."""

    def __init__(
        self,
        directory: Path,
        load: Callable[[Path], S],
        *,
        on_reload: Callable[[bool], None] | None = None,
        refuse: Callable[[S], str | None] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self._load = load
        self._refuse = refuse or (lambda _: None)
        self._on_reload = on_reload
        self._lock = threading.Lock()
        self._failures = 0
        self._reloads = 0
        self._last_error: str | None = None
        self._digest = directory_digest(self.directory)
        initial = load(self.directory)
        if initial.errors:
            raise ValueError(f"policies in {self.directory} do not load: " + "; ".join(str(e) for e in initial.errors))
        refused = self._refuse(initial)
        if refused:
            raise ValueError(f"policies in {self.directory} refused: {refused}")
        self._current: S = initial
        self._loaded_at = time.time()

    @property
    def current(self) -> S:
        return self._current

    def status(self) -> ReloadStatus:
        return ReloadStatus(self._digest, self._loaded_at, self._last_error, self._failures, self._reloads)

    def reload_if_changed(self) -> bool:
        """Load the directory again if it changed; returns True when a new set now serves."""
        try:
            digest = directory_digest(self.directory)
        except OSError as exc:
            self._record_failure(f"cannot read {self.directory}: {exc}", None)
            return False
        if digest == self._digest:
            return False
        try:
            candidate = self._load(self.directory)
        except Exception as exc:  # a loader bug must never take down the serving set
            self._record_failure(f"loading {self.directory} failed: {exc}", digest)
            return False
        if candidate.errors:
            self._record_failure("; ".join(str(e) for e in candidate.errors), digest)
            return False
        refused = self._refuse(candidate)
        if refused:
            self._record_failure(refused, digest)
            return False
        with self._lock:
            self._current = candidate
            self._digest = digest
            self._loaded_at = time.time()
            self._reloads += 1
            self._last_error = None
        log.info("policy set reloaded from %s", self.directory)
        if self._on_reload:
            self._on_reload(True)
        return True

    def _record_failure(self, message: str, digest: str | None) -> None:
        with self._lock:
            self._failures += 1
            self._last_error = message
            if digest is not None:
                # Do not retry the same broken content on every poll; a new change is tried again.
                self._digest = digest
        log.error("new policy set rejected, the previous one keeps serving: %s", message)
        if self._on_reload:
            self._on_reload(False)
