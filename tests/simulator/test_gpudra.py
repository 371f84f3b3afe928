"""The gpudra strategy: real policy decisions turned into device options, placed with MIG/sharing on the fly."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.engine import run
from simulator.metrics import summarize
from simulator.strategies import make_strategy
from simulator.strategies.gpudra import Gpudra, options_from_claim
from simulator.traces.generator import legacy_pod
from simulator.workload import SimPod

from .helpers import cluster, node


def _pod(gpus: int, milli: int, vram: int, klass: str = "trace", spec: dict[str, object] | None = None) -> SimPod:
    return SimPod("p", 1000, 1024, gpus, milli, vram, workload_class=klass, pod=spec)


def test_right_size_claim_becomes_mig_then_share_then_whole() -> None:
    strategy = Gpudra()
    _, demand = strategy._demand(_pod(1, 250, 3072))
    assert demand is not None
    kinds = [o.kind for o in demand.options]
    assert kinds[0] == "mig" and kinds[-2:] == ["share", "whole"]
    assert demand.options[0].profiles == ("1g.5gb",)
    assert demand.options[-2].vram == 3072 and demand.options[-2].milli == 250
    assert strategy.outcomes["policy right-size"] == 1


def test_tensor_parallel_pod_gets_nvlink_constraint() -> None:
    spec = legacy_pod("vllm", 8000, 65536, 4, "llm-serving")
    _, demand = Gpudra()._demand(_pod(4, 1000, 60000, "llm-serving", spec))
    assert demand is not None
    (option,) = demand.options
    assert (option.kind, option.count, option.nvlink, option.vram) == ("whole", 4, True, 60000)


def test_options_from_claim_shapes() -> None:
    pod = _pod(1, 500, 2048)
    claim = {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}},
                                      {"name": "b", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}  # fmt: skip
    assert options_from_claim(claim, pod) is None  # two requests: not modelled, falls back to the legacy request
    memory = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    whole = {"devices": {"requests": [{"name": "a", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": [{"cel": {"expression": memory}}],
    }}]}}  # fmt: skip
    (option,) = options_from_claim(whole, pod) or ()
    assert option.kind == "whole" and option.count == 2 and option.vram == 40 * 1024 and not option.nvlink


def test_denying_policy_keeps_pods_pending(tmp_path: Path) -> None:
    (tmp_path / "deny.yaml").write_text(
        """apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: deny-all}
spec:
  mode: enforce
  matchConditions:
  - name: any-gpu
    expression: "size(gpu.resources) > 0"
  validations:
  - expression: "object.metadata.name == 'never'"
    message: no GPUs here
"""
    )
    strategy = make_strategy("gpudra", policies=tmp_path)
    pods = [SimPod("a", 1000, 1024, 1, 1000, 1024), SimPod("cpu", 1000, 1024, 0, 0, 0)]
    out = summarize(run(cluster(node("n", "T4", 1)), pods, strategy))
    assert out["pods_placed"] == 1 and out["pods_pending"] == 1
    assert isinstance(strategy, Gpudra) and strategy.outcomes["denied"] == 1


def test_modes_and_errors() -> None:
    with pytest.raises(ValueError, match="mode"):
        Gpudra(mode="fast")
    upstream, scored = Gpudra(mode="upstream"), Gpudra(mode="scored")
    assert (upstream.device_order, scored.device_order) == ("first", "pack")
