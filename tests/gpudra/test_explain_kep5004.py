"""`gpudra policy explain --extended-resource-class` says which pods `gpudra serve` leaves to kube-scheduler's own
KEP-5004 claim; `--k8s-version` warns where a claim needs a feature that version does not serve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dra.errors import InputError
from gpudra.commands.policy import explain, extended_resource_mapping

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_option_reads_a_class_or_a_resource_and_its_class() -> None:
    assert extended_resource_mapping(["gpu.nvidia.com"]) == {"nvidia.com/gpu": "gpu.nvidia.com"}
    assert extended_resource_mapping(["gpu.nvidia.com", "nvidia.com/mig-1g.10gb=mig-1g10gb"]) == {
        "nvidia.com/gpu": "gpu.nvidia.com",
        "nvidia.com/mig-1g.10gb": "mig-1g10gb",
    }
    for bad in (["=x"], ["nvidia.com/gpu="], ["a", "nvidia.com/gpu=b"]):
        with pytest.raises(InputError):
            extended_resource_mapping(bad)


def test_a_whole_gpu_pod_is_said_to_be_left_to_the_scheduler() -> None:
    pod = EXAMPLES / "pod-legacy-1gpu.yaml"
    text = explain(pod, extended_resource_classes=["gpu.nvidia.com"]).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("scheduler: ")]
    assert "DeviceClass gpu.nvidia.com maps nvidia.com/gpu" in line and "'whole-gpu'" in line
    assert "scheduler: " not in explain(pod).stdout  # no mapping given: gpudra translates it
    data = json.loads(explain(pod, as_json=True, extended_resource_classes=["gpu.nvidia.com"]).stdout)
    assert data["leftToScheduler"].startswith("left to kube-scheduler (KEP-5004)")
    assert json.loads(explain(pod, as_json=True).stdout)["leftToScheduler"] is None


def test_a_right_sized_pod_is_not_and_gets_version_warnings() -> None:
    pod = EXAMPLES / "pod-legacy-vram.yaml"
    out = explain(pod, extended_resource_classes=["gpu.nvidia.com"], k8s_version="1.35")
    assert "scheduler: " not in out.stdout
    assert "warning: claim needs DRAConsumableCapacity" in out.stdout and "(target 1.35)" in out.stdout
    data = json.loads(explain(pod, as_json=True, k8s_version="v1.37.2").stdout)
    assert data["leftToScheduler"] is None and data["versionWarnings"] == []
    assert explain(pod, k8s_version="banana").code == 2
