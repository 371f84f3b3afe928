"""The NVIDIA DRA driver a simulated cluster runs, and the simulator's rules on it: the one release whose slices it
publishes (0.5), the gates of that release it models, and what consumable capacity means here (driver 0.5's
ConsumableShares gate, memory mode). The CLI and the sweep pass the values on; the refusals are made here."""

from __future__ import annotations

from collections.abc import Iterable

from dra.errors import InputError
from dra.gpus import DriverGates, driver_shape, parse_driver_gates

__all__ = ["CONSUMABLE_SHARES", "SIMULATED_GATES", "SIMULATED_RELEASE", "simulated_driver"]

# The release whose slices `simulator.scheduling.node_slices` builds; no other is modelled.
SIMULATED_RELEASE = "0.5"
# Its gates that change what the simulated nodes publish (the others change nothing the simulator models).
SIMULATED_GATES = ("ConsumableShares", "FabricManagerPartitioning")
CONSUMABLE_SHARES = "ConsumableShares"


def simulated_driver(
    gates: str | Iterable[str] = (), release: str = SIMULATED_RELEASE, *, consumable_capacity: bool = False
) -> DriverGates:
    """The driver gates a simulation runs with: `gates` (`A,B` or names) of driver `release`, plus ConsumableShares
    when `consumable_capacity` (the same thing: shareable whole GPUs and static MIG devices, memory mode).
    `InputError` for a release other than 0.5, a gate the driver refuses, or one the simulator does not model."""
    try:
        modelled = driver_shape(release).release == SIMULATED_RELEASE
    except ValueError as exc:
        raise InputError(f"{exc}; the simulator publishes release {SIMULATED_RELEASE}'s slices") from None
    if not modelled:
        raise InputError(
            f"NVIDIA DRA driver release {release}: the simulator publishes the slices of release {SIMULATED_RELEASE} "
            f"only (give {SIMULATED_RELEASE} or leave the release out)"
        )
    names = [g.strip() for g in (gates.split(",") if isinstance(gates, str) else gates) if g.strip()]
    if consumable_capacity and CONSUMABLE_SHARES not in names:
        names.append(CONSUMABLE_SHARES)
    try:
        parsed = parse_driver_gates(names, SIMULATED_RELEASE)
    except ValueError as exc:
        raise InputError(f"NVIDIA DRA driver gates: {exc}") from None
    unmodelled = parsed.enabled - set(SIMULATED_GATES)
    if unmodelled:
        raise InputError(
            f"NVIDIA DRA driver gates: the simulator models {', '.join(SIMULATED_GATES)}, "
            f"not {', '.join(sorted(unmodelled))}"
        )
    return parsed
