"""The gpudra strategy places claims where `dra.allocator.allocate` puts them, with or without the answer memo."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from dra.allocator import Unsatisfiable, allocate
from dra.gpus import device_classes
from dra.quantity import Quantity
from simulator.cluster import ClusterSpec, NodeSpec, mig_profiles, place_layout, resolve_gpu
from simulator.driver import simulated_driver
from simulator.engine import run
from simulator.kpis import summarize
from simulator.scheduling.devices import node_slices
from simulator.state import ClusterState
from simulator.strategies.policy_claims import ClaimDemand, PolicyClaims
from simulator.traces.generator import GeneratorConfig, generate
from simulator.vram import VramModel
from simulator.workload import SimPod

_MIG = re.compile(r"^gpu-(\d+)-mig-(.+)-\d+-(\d+)$")


def _node(
    name: str, model: str, gpus: int, mig: str = "none", layout: list[str] | None = None, *, sharing: bool = False
) -> NodeSpec:
    gpu = resolve_gpu(model)
    placed = place_layout(gpu, layout) if layout else ()
    assert placed is not None
    return NodeSpec(
        name,
        name,
        64000,
        262144,
        gpus,
        gpu,
        gpu.key,
        "static" if layout else mig,
        placed,
        simulated_driver(consumable_capacity=sharing),
    )


PODS = [  # (GPUs, compute milli, VRAM MiB, workload class)
    (1, 200, 3072, "embedding"),
    (1, 300, 9000, "small-inference"),
    (1, 1000, 70000, "training"),
    (2, 1000, 40000, "fine-tuning"),
    (1, 200, 3072, "embedding"),
    (1, 500, 12000, "small-inference"),
]
NODES = [
    _node("h100-dyn", "H100-SXM5-80GB", 4, "dynamic"),
    _node("l40s", "L40S", 2),
    _node("l40s-shared", "L40S", 2, sharing=True),  # driver 0.5's ConsumableShares
    _node("a100-static", "A100-PCIE-80GB", 2, layout=["3g.40gb", "2g.20gb", "1g.10gb"]),
    _node("t4", "T4", 2),
]


def _device(part: Any) -> str:
    return f"gpu-{part.gpu}" if part.profile is None else f"{part.gpu}:{part.profile.name}:{part.start}"


def _expected_device(name: str, mig_names: dict[str, str]) -> str:
    found = _MIG.match(name)
    return name if found is None else f"{found.group(1)}:{mig_names[found.group(2)]}:{found.group(3)}"


@pytest.mark.parametrize("mode", ["upstream", "scored"])
@pytest.mark.parametrize("spec", NODES, ids=lambda n: n.name)
def test_placements_equal_the_allocator_answers(spec: NodeSpec, mode: str) -> None:
    strategy = PolicyClaims(mode=mode)
    state = ClusterState(ClusterSpec("one", [spec]))
    assert spec.gpu is not None
    mig_names = {p.name.replace(".", "").lower(): p.name for p in mig_profiles(spec.gpu)}
    slices = node_slices(spec, spec.name).slices
    in_use: list[dict[str, Any]] = []
    placed = shares = 0
    for k, (gpus, milli, vram, klass) in enumerate(PODS):
        pod = SimPod(f"p{k}", 1000, 1024, gpus, milli, vram, workload_class=klass)
        _, demand = strategy._demand(pod)
        assert isinstance(demand, ClaimDemand)
        claim = {"metadata": {"name": f"c{k}", "namespace": "default"}, "spec": json.loads(demand.claim)}
        try:
            (allocation,) = allocate([claim], node=spec.name, slices=slices, classes=device_classes(),
                                     allocated=in_use, mode=mode)  # fmt: skip
        except Unsatisfiable:  # the strategy must not place it either
            assert strategy.choose(state, pod) is None
            continue
        results = allocation["devices"]["results"]
        in_use.append(claim | {"status": {"allocation": allocation}})
        choice = strategy.choose(state, pod)
        assert choice is not None
        alloc = state.apply(pod, choice[0], choice[1], 0.0)
        memory = {r["device"]: r.get("consumedCapacity", {}).get("memory") for r in results}
        assert [_device(p) for p in alloc.parts] == [_expected_device(r["device"], mig_names) for r in results]
        for part, result in zip(alloc.parts, results, strict=True):
            consumed = memory[result["device"]]
            if part.kind == "share":
                assert consumed is not None and part.vram * 2**20 == _bytes(consumed)
                shares += 1
        placed += 1
    assert placed >= 2  # the cases are not all unsatisfiable
    # Only gpudra's consumable-capacity addition shares a whole GPU between claims.
    assert (shares > 0) == (spec.sharing and spec.mig == "none")


def _bytes(quantity: str) -> int:
    return int(Quantity.parse(quantity).value)


@pytest.mark.parametrize("mode", ["upstream", "scored"])
def test_memo_gives_the_answers_of_no_memo(mode: str) -> None:
    nodes = [
        *(_node(f"h{i}", "H100-SXM5-80GB", 4, "dynamic") for i in range(3)),
        *(_node(f"a{i}", "A100-PCIE-80GB", 2, layout=["3g.40gb", "2g.20gb", "1g.10gb"]) for i in range(2)),
        *(_node(f"l{i}", "L40S", 2) for i in range(3)),
    ]
    spec = ClusterSpec("mixed", nodes)
    work = generate(GeneratorConfig(pods=150, seed=3), spec.total_gpus, vram=VramModel(kind="class"))
    runs = []
    for memoize in (True, False):
        strategy = PolicyClaims(mode=mode, memoize=memoize)
        rec = run(spec, work.pods, strategy)
        runs.append((strategy.placer.calls, summarize(rec), rec.samples))
    (memo_calls, memo_summary, memo_samples), (plain_calls, plain_summary, plain_samples) = runs
    assert memo_summary == plain_summary and memo_samples == plain_samples
    assert memo_summary["pods_placed"] > 100 and memo_summary["on_the_fly_partitions"] > 0
    assert memo_calls < plain_calls
