"""The simulator's slices are the NVIDIA DRA driver's exactly; gpudra's additions appear only when asked."""

from __future__ import annotations

from typing import Any

from dra.gpus import NVLINK_GROUP_ATTRIBUTE, driver_shape
from simulator.cluster import default_cluster
from simulator.comparison import SimulationConfig, simulate
from simulator.driver import simulated_driver
from simulator.scheduling.devices import node_slices
from simulator.traces.generator import GeneratorConfig


def _devices(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for s in slices for d in s["spec"].get("devices", [])]


def test_built_in_cluster_slices_carry_only_the_drivers_attributes() -> None:
    shape = driver_shape("25.12")
    allowed = {"gpu": shape.gpu_attributes(), "mig": shape.mig_attributes()}
    spec = default_cluster()
    seen = set()
    for node in spec.nodes:
        if node.template in seen:
            continue
        seen.add(node.template)
        for device in _devices(node_slices(node, node.name).slices):
            kind = device["attributes"]["type"]["string"]
            assert set(device["attributes"]) <= allowed[kind], device["name"]
            assert "allowMultipleAllocations" not in device
    assert spec.summary()["shareable_gpus"] == 0


def test_gpudra_additions_are_opt_in_and_named() -> None:
    node = next(n for n in default_cluster().nodes if n.pool == "l40s")
    plain = _devices(node_slices(node, node.name).slices)
    assert not any(NVLINK_GROUP_ATTRIBUTE in d["attributes"] or "allowMultipleAllocations" in d for d in plain)
    shared_node = next(
        n
        for n in default_cluster().with_driver_gates(simulated_driver(consumable_capacity=True)).nodes
        if n.pool == "l40s"
    )
    assert all(d.get("allowMultipleAllocations") for d in _devices(node_slices(shared_node, node.name).slices))
    hgx = next(n for n in default_cluster().nodes if n.pool == "hgx-h100")
    opted = _devices(node_slices(hgx, hgx.name, gpudra_attributes=True).slices)
    assert {
        d["attributes"][NVLINK_GROUP_ATTRIBUTE]["string"] for d in opted if d["attributes"]["type"]["string"] == "gpu"
    } == {"nvswitch-0"}


def test_the_summary_names_the_additions_a_run_used() -> None:
    gen = GeneratorConfig(seed=3, pods=60)
    plain = simulate(SimulationConfig(strategies=["gpudra"], generator=gen, seed=3)).summary()
    assert plain["input"]["gpudra_additions"] == {"gpudra_attributes": False}
    assert plain["input"]["driver"] == {"release": "0.5", "gates": []}
    assert plain["input"]["cluster"]["shareable_gpus"] == 0
    shares = simulated_driver(consumable_capacity=True)
    both = simulate(
        SimulationConfig(strategies=["gpudra"], generator=gen, seed=3, driver=shares, gpudra_attributes=True)
    ).summary()
    assert both["input"]["gpudra_additions"] == {"gpudra_attributes": True}
    assert both["input"]["driver"] == {"release": "0.5", "gates": ["ConsumableShares"]}
    assert both["input"]["cluster"]["shareable_gpus"] == 80
    assert both["input"]["strategy_details"]["gpudra"]["gpudra_attributes"] is True
    # Sharing whole GPUs between claims places at least as much of this workload.
    assert both["strategies"]["gpudra"]["pods_placed"] >= plain["strategies"]["gpudra"]["pods_placed"]
