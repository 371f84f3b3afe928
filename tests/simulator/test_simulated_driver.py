"""Issue 38.5: the simulator owns the rules on the driver it simulates (release 0.5, the gates it models, consumable
capacity as ConsumableShares), and a node keeps the gates its driver runs with."""

from __future__ import annotations

import pytest

from dra.errors import InputError
from dra.gpus import DriverGates
from simulator.cluster import default_cluster
from simulator.driver import SIMULATED_GATES, simulated_driver
from simulator.scheduling.devices import node_slices


@pytest.mark.parametrize("release", ["0.5", "v0.5", "0.5.0", "v0.5.1"])
def test_release_0_5_in_any_spelling_is_the_simulated_one(release: str) -> None:
    assert simulated_driver("ConsumableShares", release) == DriverGates(frozenset({"ConsumableShares"}))


@pytest.mark.parametrize("release", ["0.4", "25.12", "25.8"])
def test_another_release_is_refused_with_or_without_gates(release: str) -> None:
    for gates in ("", "ConsumableShares"):
        with pytest.raises(InputError, match=rf"release {release}: the simulator publishes the slices of release 0.5"):
            simulated_driver(gates, release)


def test_an_unknown_release_names_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"must be one of 25.8, 25.12, 0.4, 0.5 \(got '9.9'\)"):
        simulated_driver("", "9.9")


def test_consumable_capacity_is_the_consumable_shares_gate() -> None:
    assert simulated_driver(consumable_capacity=True) == simulated_driver("ConsumableShares")
    assert simulated_driver("ConsumableShares", consumable_capacity=True).enabled == {"ConsumableShares"}
    both = simulated_driver(["FabricManagerPartitioning"], consumable_capacity=True)
    assert both.enabled == set(SIMULATED_GATES)


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        ("MPSSupport", "the simulator models ConsumableShares, FabricManagerPartitioning, not MPSSupport"),
        ("Bogus", "unknown NVIDIA DRA driver feature gate(s) Bogus"),
        ("ConsumableShares,MPSSupport", "MPS sharing is not supported when consumable shares is enabled"),
    ],
)
def test_gates_the_driver_refuses_or_the_simulator_does_not_model(gates: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        simulated_driver(gates)
    assert message in str(caught.value)


def test_nodes_keep_their_gates_and_publish_them() -> None:
    gated = default_cluster().with_driver_gates(simulated_driver("ConsumableShares,FabricManagerPartitioning"))
    for node in gated.nodes:
        assert node.driver_gates.enabled == set(SIMULATED_GATES) and node.sharing
    hgx = next(n for n in gated.nodes if n.pool == "hgx-h100")
    devices = [d for s in node_slices(hgx, hgx.name).slices for d in s["spec"].get("devices", [])]
    whole = [d for d in devices if d["attributes"]["type"]["string"] == "gpu"]
    assert whole and all("gpuModuleID" in d["attributes"] for d in whole)
    plain = default_cluster()
    assert all(n.driver_gates == DriverGates() and not n.sharing for n in plain.nodes)
    assert plain.with_driver_gates(DriverGates()).nodes == plain.nodes


def test_dynamic_mig_nodes_keep_the_gate_but_publish_no_shares() -> None:
    gated = default_cluster().with_driver_gates(simulated_driver(consumable_capacity=True))
    dynamic = next(n for n in gated.nodes if n.mig == "dynamic")
    devices = [d for s in node_slices(dynamic, dynamic.name).slices for d in s["spec"].get("devices", [])]
    assert dynamic.driver_gates.shares and devices
    assert not any(d.get("allowMultipleAllocations") for d in devices)
