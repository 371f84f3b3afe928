"""The policies a command runs with, and the exit codes the policy-driven commands share.

Kept apart from `gpudra policy` so that `gpudra translate` does not import what only `lint`, `test` and `explain`
need (policy tests, the scheduler-path check, their renderers).
"""

from __future__ import annotations

import os
from pathlib import Path

from dra.errors import InputError
from policyengine import PolicySet, load_policies, policy_files, translates_nothing

__all__ = ["EXIT_DENIED", "EXIT_INPUT", "Source", "policy_set", "translation_policies"]

EXIT_DENIED = 1
EXIT_INPUT = 2

Source = str | os.PathLike[str]


def policy_set(directory: Source | None) -> PolicySet:
    """The policies of `directory`, or the shipped ones; files that loaded cleanly before come from the user's cache.
    Raises `InputError` naming `directory` when it does not exist or holds no policy file (*.yaml, *.yml)."""
    if directory is not None:
        if not Path(directory).exists():
            raise InputError(f"--policies {directory}: no such file or directory")
        if not any(policy_files([directory])):
            raise InputError(f"--policies {directory}: no policy file (*.yaml, *.yml) in the directory")
    return load_policies(*([directory] if directory is not None else []), reuse_verified=True)


def translation_policies(directory: Source | None) -> PolicySet:
    """`policy_set`, refused (`InputError`) where it would translate less than it says: a policy file that does not
    load, or a set in which no policy could ever translate a pod (a CI step must not pass with translation off)."""
    policies = policy_set(directory)
    where = f"--policies {directory}" if directory is not None else "the shipped policies"
    if policies.errors:
        from ..render.policy import policy_errors  # rendering only what is refused

        raise InputError(f"{where}: {len(policies.errors)} policy error(s):\n" + policy_errors(policies).rstrip("\n"))
    idle = translates_nothing(policies)
    if idle is not None:
        raise InputError(f"{where}: {idle}")
    return policies
