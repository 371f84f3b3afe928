"""`translate -R` reads a manifest one document at a time: the memory a file costs grows with its text (and the
claims it adds), not with the objects parsed from it (a 40 MB file of 110k pods once took 2.3 GB, ~21 KB a pod)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import yaml

from manifest_translation.tree import translate_tree
from policyengine import PolicySet, load_policies

_NOTE = "n" * 2000  # text that costs the parsed objects little beside the text itself


def _pods(count: int) -> str:
    return "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata:
  name: p{i}
  namespace: team-a
  annotations: {{note: "{_NOTE}"}}
spec:
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base
    resources:
      limits: {{nvidia.com/gpu: 1}}
"""
        for i in range(count)
    )


def _peak(root: Path, count: int, policies: PolicySet) -> tuple[int, int]:
    """(the file's size, the peak traced memory of rewriting it in place)."""
    root.mkdir()
    manifest = root / "pods.yaml"
    manifest.write_text(_pods(count))
    tracemalloc.start()
    try:
        report = translate_tree(root, policies)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.code == 0 and len(report.translated) == count
    rewritten = list(yaml.safe_load_all(manifest.read_text()))
    assert len(rewritten) == count and all(p["spec"]["resourceClaims"] for p in rewritten)
    assert "nvidia.com/gpu" not in manifest.read_text()
    return manifest.stat().st_size, peak


def test_a_long_manifest_costs_memory_in_proportion_to_its_text_not_its_objects(tmp_path: Path) -> None:
    policies = load_policies()
    _peak(tmp_path / "warm", 3, policies)  # compiled policies and first-use caches are not the file's cost
    small_size, small_peak = _peak(tmp_path / "small", 20, policies)
    large_size, large_peak = _peak(tmp_path / "large", 80, policies)
    growth = (large_peak - small_peak) / (large_size - small_size)
    # Read whole, the objects and their translations cost 13x the text (measured); one document at a time, the text,
    # the YAML reader's copy of it, and the claims and report lines it adds: 2.6x.
    assert growth < 4, f"{growth:.1f} bytes of peak memory per byte of manifest"
