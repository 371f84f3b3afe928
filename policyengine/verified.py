"""Policy files that loaded cleanly before, kept between processes so that a short CLI call does not validate
and compile them again (`gpudra translate` of one pod spent more CPU loading the shipped policies than deciding),
and the verdicts on claims checked before (building the DRA claim models is a tenth of such a call).

A file whose text loaded without an error is stored, under its name and text, as its `CompiledPolicy` objects
without their programs (closures do not pickle). Taking them back skips YAML, the pydantic document models and
the compiler; each expression compiles when it is first evaluated (`CompiledExpr.program`) and compiles, since
the same text compiled under the same code before. The store's file name carries a digest of the code that
decides what a load yields (the loader, the document models, the CEL front end), so other code never reads it.
Claim verdicts (the problems Kubernetes would report for a ResourceClaimSpec, keyed by the claim's text) are kept
likewise, under a digest of the DRA models, once `keep_claim_verdicts()` turned them on for this process.
Only the CLI uses this; the webhook compiles every expression before it serves and keeps verdicts in memory.
"""

from __future__ import annotations

import hashlib
import pickle
from functools import cache
from pathlib import Path

from dra.user_cache import DiskStore, private_cache_dir, source_digest

from .loader import CompiledPolicy

__all__ = ["claim_verdict", "keep_claim_verdict", "keep_claim_verdicts", "recall", "remember", "store"]

_HERE = Path(__file__).resolve().parent
_DRA = _HERE.parent / "dra"


def _code() -> list[Path]:
    # the memo's analysis of each policy (`_memo.Analysis`, from `_deps`) is kept with it
    own = [
        _HERE / name
        for name in ("_form.py", "_cel.py", "_yaml.py", "loader.py", "model.py", "verified.py", "_memo.py", "_deps.py")
    ]
    shared = [_DRA / name for name in ("errors.py", "quantity.py", "yamlio.py")]
    return own + shared + sorted((_DRA / "cel").glob("*.py")) + sorted((_DRA / "cel").glob("*.lark"))


def _model_code() -> list[Path]:
    return [_HERE / "_claim.py", _DRA / "errors.py", _DRA / "quantity.py", *sorted((_DRA / "model").glob("*.py"))]


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


_claims_kept = False


def keep_claim_verdicts() -> None:
    """From now on this process reads and keeps claim verdicts in the user's cache."""
    global _claims_kept
    _claims_kept = True


@cache
def claim_store() -> DiskStore:
    base = private_cache_dir() if _claims_kept else None
    if base is None:
        return DiskStore(None)
    return DiskStore(
        base / f"claims-{source_digest(_model_code())}.pickle",
        max_entries=1024,
        max_key_chars=8192,
        max_file_bytes=4 << 20,
    )


def claim_verdict(claim_text: str) -> tuple[str, ...] | None:
    """The problems found before in the claim whose text (repr) is `claim_text`, or None when not known here."""
    if not _claims_kept:
        return None
    blob = claim_store().get(claim_text)
    if blob is None:
        return None
    try:
        found = pickle.loads(blob)
    except Exception:  # an unreadable entry is a miss
        found = None
    if not isinstance(found, tuple) or not all(isinstance(problem, str) for problem in found):
        claim_store().discard(claim_text)
        return None
    return found


def keep_claim_verdict(claim_text: str, problems: tuple[str, ...]) -> None:
    if _claims_kept:
        claim_store().put(claim_text, pickle.dumps(problems, protocol=pickle.HIGHEST_PROTOCOL))
