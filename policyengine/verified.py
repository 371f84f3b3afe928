"""Policy files that loaded cleanly before, kept between processes so that a short CLI call does not validate
and compile them again (`gpudra translate` of one pod spent more CPU loading the shipped policies than deciding).

A file whose text loaded without an error is stored, under its name and text, as its `CompiledPolicy` objects
without their programs (closures do not pickle). Taking them back skips YAML, the pydantic document models and
the compiler; each expression compiles when it is first evaluated (`CompiledExpr.program`) and compiles, since
the same text compiled under the same code before. The store's file name carries a digest of the code that
decides what a load yields (the loader, the document models, the CEL front end), so other code never reads it.
Only the CLI uses this; the webhook compiles every expression before it serves.
"""

from __future__ import annotations

import hashlib
import pickle
from functools import cache
from pathlib import Path

from dra.user_cache import DiskStore, private_cache_dir, source_digest

from .loader import CompiledPolicy

__all__ = ["recall", "remember", "store"]

_HERE = Path(__file__).resolve().parent
_DRA = _HERE.parent / "dra"


def _code() -> list[Path]:
    own = [_HERE / name for name in ("_form.py", "_cel.py", "_yaml.py", "loader.py", "model.py", "verified.py")]
    shared = [_DRA / name for name in ("errors.py", "quantity.py", "yamlio.py")]
    return own + shared + sorted((_DRA / "cel").glob("*.py")) + sorted((_DRA / "cel").glob("*.lark"))


@cache
def store() -> DiskStore:
    base = private_cache_dir()
    if base is None:
        return DiskStore(None)
    # Keys are digests; a value is a file's policies (the shipped four: about 60 KB).
    return DiskStore(base / f"policies-{source_digest(_code())}.pickle", max_entries=256, max_key_chars=64)


def _key(text: str, file: str) -> str:
    return hashlib.sha256(f"{file}\0{text}".encode()).hexdigest()


def recall(text: str, file: str) -> list[CompiledPolicy] | None:
    """The policies `text` (read from `file`) loaded into before, or None when it is not known to load cleanly."""
    key = _key(text, file)
    blob = store().get(key)
    if blob is None:
        return None
    try:
        policies = pickle.loads(blob)
    except Exception:  # any unreadable entry (a class renamed, a truncated blob) is just a miss
        policies = None
    if not isinstance(policies, list) or not all(isinstance(p, CompiledPolicy) for p in policies):
        store().discard(key)
        return None
    return policies


def remember(text: str, file: str, policies: list[CompiledPolicy]) -> None:
    """Keep what `text` loaded into; call only when it loaded without an error."""
    try:
        blob = pickle.dumps(policies, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return  # a value that does not pickle: loaded in full every time
    store().put(_key(text, file), blob)
