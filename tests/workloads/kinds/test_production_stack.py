"""`workloads.kinds.production_stack`: a VLLMRuntime asks for GPUs in its own fields: passed through, with why."""

from __future__ import annotations

import pytest

from workloads import UnknownWorkload, pod_templates
from workloads.kinds import production_stack

EXAMPLES: dict[str, object] = {}  # no kind here has a pod template


def test_no_kind_of_the_module_has_a_template() -> None:
    assert all(not k.paths and k.passed_through for k in production_stack.KINDS)


def test_a_vllm_runtime_asking_for_gpus_is_passed_through_naming_the_field() -> None:
    runtime = {
        "apiVersion": "production-stack.vllm.ai/v1alpha1",
        "kind": "VLLMRuntime",
        "metadata": {"name": "v"},
        "spec": {"deploymentConfig": {"resources": {"gpu": 1}}},
    }
    with pytest.raises(UnknownWorkload, match=r"spec\.deploymentConfig\.resources\.gpu \(1\)"):
        pod_templates(runtime)
    runtime["spec"] = {"deploymentConfig": {"resources": {"gpu": 0}}}
    assert pod_templates(runtime) == []
    other = {**runtime, "apiVersion": "example.com/v1"}  # another group's VLLMRuntime is not this kind
    assert pod_templates(other) == []
