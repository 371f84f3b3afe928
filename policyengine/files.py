"""Policy files on disk: which files a directory holds, the shipped set, and loading them into a `PolicySet`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from dra.errors import InputError, PolicyError
from dra.yamlio import read_source

from ._memo import analysis
from .engine import PolicySet
from .loader import MAX_POLICY_BYTES, CompiledPolicy, load_policy_text

__all__ = ["POLICY_SUFFIXES", "load_policies", "policy_files", "shipped_policies_dir"]

POLICY_SUFFIXES = (".yaml", ".yml")


def policy_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """The policy files named by `paths`: files as given; a directory's own *.yaml/*.yml, sorted by name, without
    hidden entries (a ConfigMap mount's `..data` and `..2026_...` are its machinery, not policies)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(
                p for p in path.iterdir() if not p.name.startswith(".") and p.suffix in POLICY_SUFFIXES and p.is_file()
            )
        else:
            yield path


def shipped_policies_dir() -> Path:
    """The shipped `policies/` directory (installed with the package as `policyengine/policies`)."""
    return Path(__file__).resolve().parent / "policies"


def load_policies(*paths: str | os.PathLike[str], reuse_verified: bool = False) -> PolicySet:
    """Load and compile every policy under `paths` (default: the shipped set) into a `PolicySet`.

    `reuse_verified` (short CLI calls): a file that loaded cleanly before, unchanged, is taken back from the user's
    cache and its expressions compile when first evaluated, and this process keeps the verdicts on the claims it
    checks there too (`policyengine.verified`); the decisions are the same."""
    policies: list[CompiledPolicy] = []
    errors: list[PolicyError] = []
    seen: dict[str, CompiledPolicy] = {}
    for file in policy_files(paths or (shipped_policies_dir(),)):
        try:
            text, _name = read_source(file, MAX_POLICY_BYTES)
        except InputError as exc:
            errors.append(PolicyError(f"cannot read policy file: {exc.message}", file=str(file)))
            continue
        loaded, file_errors = _load_text(text, str(file), reuse_verified)
        errors.extend(file_errors)
        for policy in loaded:
            earlier = seen.get(policy.name)
            if earlier is not None:
                errors.append(
                    PolicyError(
                        f"duplicate policy name {policy.name!r} (first defined at {earlier.where})",
                        file=policy.file,
                        line=policy.line,
                    )
                )
                continue
            seen[policy.name] = policy
            policies.append(policy)
    return PolicySet.of(policies, errors)


def _load_text(text: str, file: str, reuse_verified: bool) -> tuple[list[CompiledPolicy], list[PolicyError]]:
    if not reuse_verified:
        return load_policy_text(text, file)
    from . import verified

    verified.keep_claim_verdicts()
    known = verified.recall(text, file)
    if known is not None:
        return known, []
    loaded, errors = load_policy_text(text, file)
    if not errors:
        for policy in loaded:  # kept with the policies, so a later call takes it back too
            analysis(policy)
        verified.remember(text, file, loaded)
    return loaded, errors
