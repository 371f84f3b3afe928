"""Issue 25 item 4: a per-model NIM image names its model, and the pod is sized from it."""

from __future__ import annotations

import pytest

from dra.sizing.models import model_from_nim_image
from policyengine import load_policies, shipped_policies_dir


@pytest.mark.parametrize(
    ("image", "model"),
    [
        ("nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3", "meta-llama/Llama-3.1-8B"),
        ("nvcr.io/nim/meta/llama-3.1-70b-instruct:latest", "meta-llama/Llama-3.1-70B"),
        ("NVCR.IO/nim/meta/llama-3.1-8b-instruct@sha256:0123", "meta-llama/Llama-3.1-8B"),
        ("nvcr.io/nim/meta/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B"),
    ],
)
def test_the_model_is_read_from_a_per_model_nim_image(image: str, model: str) -> None:
    found = model_from_nim_image(image)
    assert found is not None and found.hf_id == model


@pytest.mark.parametrize(
    "image", ["nvcr.io/nim/nvidia/llm-nim:2.0.1", "docker.io/meta/llama-3.1-8b-instruct:1", "nvcr.io/nim/x/unknown:1"]
)
def test_other_images_name_no_model(image: str) -> None:
    assert model_from_nim_image(image) is None


def test_a_nim_pod_without_env_is_sized_from_its_image() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nim", "namespace": "llm"},
        "spec": {"containers": [{"name": "nim", "image": "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3",
                                 "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }  # fmt: skip
    decision = load_policies(shipped_policies_dir()).evaluate(pod, None)
    assert decision.sizing_source == "model"
    assert "nim meta-llama/Llama-3.1-8B" in decision.sizing["nim"]
