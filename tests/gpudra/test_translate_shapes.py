"""`gpudra translate` checks each claim against device shapes: the GPU catalog, or a cluster dump (`--slices`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.gpus import device_classes
from gpudra.commands.policy import EXIT_DENIED, EXIT_INPUT
from gpudra.commands.translate import translate_file
from tests.dra.shapes._clusters import node_slices

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _pod(tmp_path: Path, args: list[str], gpus: int) -> Path:
    pod = yaml.safe_load((EXAMPLES / "pod-vllm-tp4.yaml").read_text())
    pod["metadata"]["namespace"] = "default"
    container = pod["spec"]["containers"][0]
    container["args"] = ["--model", "meta-llama/Llama-3.1-70B-Instruct", *args]
    container["resources"]["limits"]["nvidia.com/gpu"] = gpus
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    return path


def _dump(tmp_path: Path, *kinds: str, classes: bool = True) -> Path:
    items: list[dict[str, Any]] = [s for k, kind in enumerate(kinds) for s in node_slices(kind, f"n{k}")]
    if classes:
        items += device_classes()
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_the_readme_tp4_example_in_team_a_is_refused_against_the_catalog() -> None:
    out = translate_file(EXAMPLES / "pod-vllm-tp4.yaml", namespace_file=EXAMPLES / "namespace-team-a.yaml")
    assert out.code == EXIT_DENIED and out.stdout == ""
    assert out.stderr.startswith("denied: GPUClaimPolicy 'multi-gpu': no device can satisfy this claim")
    assert "gpudra.io/max-vram=160Gi" in out.stderr and "the largest device memory is 183359Mi" in out.stderr


def test_alternatives_a_cluster_cannot_satisfy_are_dropped(tmp_path: Path) -> None:
    pod = _pod(tmp_path, ["--tensor-parallel-size", "4"], 4)
    catalog = json.loads(translate_file(pod, output="json").stdout)
    dumped = translate_file(pod, output="json", slices_file=_dump(tmp_path, "H100-SXM5-80GB"))
    assert dumped.code == 0, dumped.stderr

    def alternatives(result: dict[str, Any]) -> list[str]:
        (template,) = result["templates"]
        return [s["name"] for s in template["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"]]

    assert "same-partition4" in alternatives(catalog)  # some catalog GPU publishes it (Fabric Manager partitions)
    kept = alternatives(json.loads(dumped.stdout))
    assert "same-partition4" not in kept and "same-nvlinkgroup" not in kept and kept[-1] == "any"


def test_a_70b_model_on_one_gpu_needs_a_b200(tmp_path: Path) -> None:
    pod = _pod(tmp_path, ["--max-model-len", "8192"], 1)
    catalog = translate_file(pod)
    assert catalog.code == 0  # the catalog has a B200, and only that model holds it: a warning names it
    assert re.search(r"only NVIDIA B200 of the \d+ GPU models of the GPU catalog can hold this claim", catalog.stderr)
    assert "(request vllm 168455Mi from the model estimate)" in catalog.stderr
    assert "only" not in translate_file(EXAMPLES / "pod-legacy-vram.yaml").stderr
    out = translate_file(pod, slices_file=_dump(tmp_path, "H100-SXM5-80GB", "H200-SXM5-141GB", classes=False))
    assert out.code == EXIT_DENIED
    assert "the largest device memory is 143771Mi" in out.stderr and "memory >= 168455Mi" in out.stderr


def test_an_unreadable_dump_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    out = translate_file(EXAMPLES / "pod-legacy-vram.yaml", slices_file=bad)
    assert out.code == EXIT_INPUT and out.stderr.startswith("error: ")


def test_every_claim_of_the_examples_allocates_on_a_catalog_gpu_or_is_refused_with_a_reason() -> None:
    """Issue 39's acceptance: what the README's and examples/ inputs produce, in each example namespace."""
    from dra.shapes import SatisfiabilityChecker, catalog_shapes

    checker, shapes = SatisfiabilityChecker(), catalog_shapes()
    namespaces = [None, *sorted(EXAMPLES.glob("namespace-*.yaml"))]
    templates = 0
    for pod in sorted(EXAMPLES.glob("pod-*.yaml")):
        for namespace in namespaces:
            out = translate_file(pod, namespace_file=namespace)
            if out.code == EXIT_DENIED:
                assert out.stderr.startswith("denied: ") and len(out.stderr) > 40, (pod, namespace)
                continue
            assert out.code == 0, (pod, namespace, out.stderr)
            for doc in yaml.safe_load_all(out.stdout):
                if isinstance(doc, dict) and doc.get("kind") == "ResourceClaimTemplate":
                    templates += 1
                    verdict = checker.check(doc, shapes)
                    assert verdict.together and verdict.dropped() == (), (pod, namespace, verdict.dropped())
    assert templates >= 10


def test_a_catalog_check_taken_back_from_the_user_cache_is_the_check_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short `gpudra translate` takes the catalog's verdict on a claim checked before from the user cache (no
    `dra.shapes`): refused, warned, pruned and plain claims come back exactly as the check gives them."""
    from gpudra.commands import _catalog_check as remembered
    from policyengine import ClaimCheck

    monkeypatch.delenv("GPUDRA_NO_PARSER_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "one").mkdir()
    (tmp_path / "four").mkdir()
    cases = [
        (EXAMPLES / "pod-vllm-tp4.yaml", EXAMPLES / "namespace-team-a.yaml"),  # refused
        (_pod(tmp_path / "one", ["--max-model-len", "8192"], 1), None),  # warned: only a B200 holds it
        (_pod(tmp_path / "four", ["--tensor-parallel-size", "4"], 4), None),
        (EXAMPLES / "pod-legacy-vram.yaml", None),
    ]

    def translated() -> list[Any]:
        remembered._store.cache_clear()
        remembered.catalog_check.cache_clear()
        return [translate_file(pod, namespace_file=namespace, output="json") for pod, namespace in cases]

    try:
        checked = translated()
        remembered._store().save()
        monkeypatch.setattr(ClaimCheck, "apply", lambda *args, **kwargs: pytest.fail("checked again"))
        assert translated() == checked
        assert [c.code for c in checked] == [EXIT_DENIED, 0, 0, 0]
    finally:
        remembered._store.cache_clear()
        remembered.catalog_check.cache_clear()
