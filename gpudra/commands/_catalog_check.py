"""The GPU catalog's claim check for the CLI, its outcomes kept in the user's cache (`dra.user_cache`).

Checking a claim against the catalog folds the catalog into shapes and runs the allocator over them: the Kubernetes
object model, the allocator and the CEL selectors, ~0.4 s of a short `gpudra translate`. The outcome depends only on
the decision's claim and what the check reads of it (policy, mode, sizes), the policy's onUnsatisfiable, the
Namespace and the code, so a short call takes back what an earlier one found; `dra.shapes` is imported only for a
claim not checked before. The webhook checks in memory against the cluster's shapes and never uses this.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra.user_cache import DiskStore, private_cache_dir, source_digest
from policyengine import ClaimCheck

if TYPE_CHECKING:
    from policyengine import Decision

__all__ = ["catalog_check"]

_ROOT = Path(__file__).resolve().parents[2]
# What a catalog check's outcome is computed by: the check, the catalog and the shapes folded from it, the object
# model and the allocator (with its CEL) that decide satisfiability.
_CODE_DIRS = ("dra/shapes", "dra/gpus", "dra/model", "dra/allocator", "dra/cel")
_CODE_FILES = ("policyengine/claim_check.py", "policyengine/decision.py", "dra/quantity.py", "dra/errors.py")
# The fields an outcome appends to rather than replaces.
_APPENDED = ("warnings", "audit")


def _code() -> list[Path]:
    files = [_ROOT / name for name in _CODE_FILES]
    for folder in _CODE_DIRS:
        files.extend(sorted(p for p in (_ROOT / folder).iterdir() if p.is_file() and p.suffix != ".pyc"))
    return files


@cache
def _store() -> DiskStore:
    base = private_cache_dir()
    if base is None:
        return DiskStore(None)
    return DiskStore(base / f"catalog-checks-{source_digest(_code())}.pickle", max_entries=1024, max_key_chars=64)


def _key(decision: Decision, action: str, namespace: Mapping[str, Any] | None) -> str | None:
    try:
        inputs = json.dumps(
            [
                decision.claim,
                decision.policy,
                decision.mode,
                dict(decision.sizing),
                [[c.container, c.request] for c in decision.containers],
                action,
                namespace,
            ],
            sort_keys=True,
            separators=(",", ":"),
        )
    except (TypeError, ValueError):  # not plain JSON: checked every time
        return None
    return hashlib.sha256(inputs.encode()).hexdigest()


def _outcome(before: Decision, after: Decision) -> dict[str, Any] | None:
    """What the check changed: replaced fields, and the lines it appended to `_APPENDED` (None: not expressible)."""
    changed: dict[str, Any] = {}
    for field in dataclasses.fields(before):
        old, new = getattr(before, field.name), getattr(after, field.name)
        if field.name in _APPENDED:
            if new[: len(old)] != old:
                return None
            if len(new) > len(old):
                changed[field.name] = new[len(old) :]
        elif new is not old:
            changed[field.name] = new
    return changed


class _RememberedCheck(ClaimCheck):
    """`ClaimCheck` whose outcomes are kept in the user's cache, keyed by everything `apply` reads."""

    def apply(self, decision: Decision, action: str, namespace: Mapping[str, Any] | None = None) -> Decision:
        if decision.claim is None or not decision.allowed:
            return decision
        key = _key(decision, action, namespace)
        store = _store()
        blob = store.get(key) if key is not None else None
        if blob is not None:
            try:
                changed: dict[str, Any] = pickle.loads(blob)
                for name in _APPENDED:
                    changed[name] = (*getattr(decision, name), *changed.get(name, ()))
                return dataclasses.replace(decision, **changed)
            except Exception:  # an entry that does not fit this code is checked again
                store.discard(key if key is not None else "")
        after = super().apply(decision, action, namespace)
        outcome = _outcome(decision, after)
        if key is not None and outcome is not None:
            try:
                store.put(key, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
            except (pickle.PicklingError, TypeError, AttributeError):
                pass
        return after


def _catalog_shapes() -> Any:
    from dra.shapes import catalog_shapes

    return catalog_shapes()


@cache
def catalog_check() -> ClaimCheck:
    """One check against the GPU catalog per process (its verdicts serve every later call: tests, -R trees), the
    outcomes of earlier processes taken back from the user's cache."""
    return _RememberedCheck(_catalog_shapes, few_products=2, where="the GPU catalog")
