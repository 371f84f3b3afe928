"""Whether a policy set can translate anything: a set in which no policy has a claim that could ever apply loads
without an error, and would admit every legacy GPU pod untranslated. `gpudra policy lint` warns (or fails with
`--strict`), `gpudra serve` logs it and says it in `/readyz` and `/metrics`."""

from __future__ import annotations

from .engine import PolicySet
from .loader import CompiledPolicy

__all__ = ["translates_nothing"]


def _never_matches(policy: CompiledPolicy) -> bool:
    """A matchCondition that is the constant `false` (the compiler folds `1 > 2`, `'a' == 'b'`, ...)."""
    for _name, condition in policy.match_conditions:
        if getattr(condition.program, "constant", False) and condition.program.evaluate({}) is False:
            return True
    return False


def translates_nothing(policies: PolicySet) -> str | None:
    """Why no legacy GPU pod could ever be translated by `policies`, or None when some claim policy can apply.
    A policy in audit mode counts: a namespace's `gpudra.io/mode` label can make it enforce."""
    claims = [policy for policy in policies.policies if policy.claim is not None]
    if not claims:
        return "no policy has a claim, so no pod is ever translated (legacy GPU pods are admitted as they are)"
    if all(_never_matches(policy) for policy in claims):
        names = ", ".join(f"{policy.name} ({policy.where})" for policy in claims)
        return f"every policy with a claim has a matchCondition that is always false ({names}), so no pod is translated"
    return None
