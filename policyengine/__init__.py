"""The policy engine: load `GPUClaimPolicy` files, compile their CEL once, and decide what happens to a pod.

`load_policies(*paths)` → `PolicySet`; `PolicySet.evaluate(pod, namespace, request)` → `Decision`
(`PolicySet.with_claim_check(ClaimCheck(shapes))`: each claim checked against device shapes first);
`policyengine.testing.run_tests(*paths)` runs policy test files (`gpudra policy test`). The file format is in
docs/policy-authoring.md.
"""

from ._form import API_VERSION, KIND
from .claim_check import ClaimCheck
from .coverage import translates_nothing
from .decision import ContainerRequest, Decision, Violation
from .engine import MODE_LABEL, PolicySet
from .facts import (
    HAMI_RESOURCES,
    LEGACY_GPU,
    MIG_PREFIX,
    PodFacts,
    extended_resource_pairs,
    is_legacy_resource,
    pod_facts,
)
from .files import load_policies, policy_files, shipped_policies_dir
from .inputs import read_inputs
from .loader import MAX_POLICY_BYTES, CompiledPolicy, load_policy_text

__all__ = [
    "API_VERSION",
    "HAMI_RESOURCES",
    "KIND",
    "LEGACY_GPU",
    "MAX_POLICY_BYTES",
    "MIG_PREFIX",
    "MODE_LABEL",
    "ClaimCheck",
    "CompiledPolicy",
    "ContainerRequest",
    "Decision",
    "GPUClaimPolicy",
    "PodFacts",
    "PolicySet",
    "Violation",
    "extended_resource_pairs",
    "is_legacy_resource",
    "load_policies",
    "load_policy_text",
    "pod_facts",
    "policy_files",
    "read_inputs",
    "shipped_policies_dir",
    "translates_nothing",
]


def __getattr__(name: str) -> object:
    if name == "GPUClaimPolicy":  # the pydantic model: built only for those who ask for it
        from .model import GPUClaimPolicy

        return GPUClaimPolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
