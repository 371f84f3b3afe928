"""migStrategy single (issue 40 point 4): where the device plugin advertises each MIG device as nvidia.com/gpu,
`gpudra migrate --device-plugin-config` sets the mig-single policy's param, and a pod's nvidia.com/gpu then gets
whole GPUs or MIG devices: its claim allocates on a node whose GPUs are all partitioned, as the device plugin ran it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.gpus import get, node_resource_slices, synthetic_node
from gpudra.commands.migrate import MigrateOptions, migrate
from policyengine import PolicySet, load_policies, shipped_policies_dir
from policyengine.device_plugin import migration, read_configs
from tests.policyengine.test_device_plugin_semantics import _allocate

SINGLE = {"version": "v1", "flags": {"migStrategy": "single"}}


def _enabled(tmp_path: Path) -> PolicySet:
    """The shipped policies with migrate's mig-single params document merged into mig-single.yaml."""
    for file in shipped_policies_dir().glob("*.yaml"):
        shutil.copy(file, tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(SINGLE))
    printed = list(yaml.safe_load_all(migrate(MigrateOptions(config)).stdout))
    (params,) = [d["spec"]["params"] for d in printed if d["metadata"]["name"] == "mig-single"]
    policy = yaml.safe_load((tmp_path / "mig-single.yaml").read_text())
    policy["spec"]["params"].update(params)
    (tmp_path / "mig-single.yaml").write_text(yaml.safe_dump(policy))
    config.unlink()
    return load_policies(tmp_path)


def _pod(limits: dict[str, int], namespace: str = "team-a") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {"containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": limits}}]},
    }


def _partitioned_slices(node: str, profile: str = "1g.5gb", gpus: int = 2) -> list[dict[str, Any]]:
    """An A100 40GB node under migStrategy single: every GPU split into seven MIG devices of one profile."""
    layout = [(profile, start) for start in range(7)]
    built = synthetic_node(get("A100-PCIE-40GB"), node, gpus, mig_layouts={i: layout for i in range(gpus)})
    return node_resource_slices(built, mig_mode="static")


def test_migrate_prints_the_mig_single_param_only_for_a_config_that_says_single(tmp_path: Path) -> None:
    assert migration(read_configs([SINGLE])).mig_single
    assert not migration(read_configs([{"version": "v1", "flags": {"migStrategy": "mixed"}}])).mig_single
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(SINGLE))
    out = migrate(MigrateOptions(config))
    assert out.code == 0
    documents = list(yaml.safe_load_all(out.stdout))
    assert [d["metadata"]["name"] for d in documents] == ["shared-gpu", "mig-single"]
    assert documents[1]["spec"]["params"] == {"migStrategySingle": True}
    assert "mig-single policy's migStrategySingle: true" in out.stderr


@pytest.mark.parametrize("count", [1, 2, 3])
def test_with_the_param_a_pods_gpus_allocate_as_mig_devices_on_a_fully_partitioned_node(
    tmp_path: Path, count: int
) -> None:
    decision = _enabled(tmp_path).evaluate(_pod({"nvidia.com/gpu": count}))
    assert decision.allowed and decision.policy == "mig-single"
    (request,) = decision.claim["devices"]["requests"]
    assert [(a["name"], a["deviceClassName"], a["count"]) for a in request["firstAvailable"]] == [
        ("whole", "gpu.nvidia.com", count),
        ("mig", "mig.nvidia.com", count),
    ]
    results = _allocate(decision.claim, _partitioned_slices("single-node"), "single-node")
    assert len(results) == count and {r["request"] for r in results} == {"cuda/mig"}
    # Where whole GPUs are published, they come first (the device plugin gave either).
    whole = node_resource_slices(synthetic_node(get("A100-PCIE-40GB"), "whole-node", 4), mig_mode="none")
    assert {r["request"] for r in _allocate(decision.claim, whole, "whole-node")} == {"cuda/whole"}


def test_off_as_shipped_the_pod_keeps_whole_gpus_and_its_topology() -> None:
    shipped = load_policies()
    assert shipped.evaluate(_pod({"nvidia.com/gpu": 1})).policy == "whole-gpu"
    assert shipped.evaluate(_pod({"nvidia.com/gpu": 2})).policy == "multi-gpu"


def test_a_max_vram_cap_bounds_both_alternatives(tmp_path: Path) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "capped", "labels": {"gpudra.io/max-vram": "10Gi"}}}  # fmt: skip
    decision = _enabled(tmp_path).evaluate(_pod({"nvidia.com/gpu": 2}, "capped"), namespace)
    assert decision.policy == "mig-single"
    (request,) = decision.claim["devices"]["requests"]
    for alternative in request["firstAvailable"]:
        (selector,) = alternative["selectors"]
        assert "memory.compareTo(quantity('5368709120')) <= 0" in selector["cel"]["expression"]


def test_mig_resources_are_not_this_policys() -> None:
    decision = load_policies().evaluate(_pod({"nvidia.com/mig-1g.5gb": 1}))
    assert decision.policy == "whole-gpu"
