"""The NVIDIA DRA driver's own feature gates, as its kubelet plugin reads `--feature-gates`, and what the ones that
change the published slices do to them.

From kubernetes-sigs/dra-driver-nvidia-gpu at main 95932046 (2026-08-07; the mirror here holds no v0.5.0 tag, and
`pkg/featuregates/featuregates.go` there gives ConsumableShares and FabricManagerPartitioning version 0.5):
the gates with the release that introduced them, `ValidateFeatureGates`' refusals, and two refusals of
`cmd/gpu-kubelet-plugin`: `--consumable-shares` needs ConsumableShares (main.go), and MPS sharing is refused while
consumable shares are on (device_state.go).

- **ConsumableShares** (`consumable_shares.go`, `applyConsumableShares`, called for whole GPUs and static MIG
  devices, never VFIO): the device gets `allowMultipleAllocations: true`; its `memory` capacity is rounded down to
  a multiple of 1Mi and given a request policy: `memory` mode default = the whole memory, valid range 1Mi..memory in
  1Mi steps; `unlimited` and an integer N: default 0, range 0..memory in 1Mi steps, and with N a `shares` capacity of
  N (default 1, range 1..N, step 1).
- **FabricManagerPartitioning** (`deviceinfo.go`, `addFabricManagerAttributes`): on NVSwitch systems, each whole GPU
  carries `gpuModuleID` (int) and `partition<N>` (int) for every Fabric Manager partition size N that includes it.
  The partition IDs are Fabric Manager's default table for an 8-GPU HGX baseboard (NVIDIA Fabric Manager user guide,
  "GPU Partitions", HGX H100/H200/B200 8-GPU): 0 = all eight modules, 1-2 = modules 1-4 and 5-8, 3-6 = pairs, 7-14 =
  single GPUs. gpudra numbers modules 1..8 in PCI bus order (the driver reads NVML's module id).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CONSUMABLE_SHARES_MODES",
    "DRIVER_GATES",
    "DriverGates",
    "fabric_partitions",
    "parse_driver_gates",
]

# gate -> the driver release that introduced it (featuregates.go `Version`)
DRIVER_GATES: dict[str, tuple[int, int]] = {
    "TimeSlicingSettings": (0, 2),
    "MPSSupport": (0, 2),
    "IMEXDaemonsWithDNSNames": (0, 2),
    "PassthroughSupport": (0, 3),
    "DynamicMIG": (0, 3),
    "NVMLDeviceHealthCheck": (0, 3),
    "ComputeDomainCliques": (0, 3),
    "CrashOnNVLinkFabricErrors": (0, 3),
    "DeviceMetadata": (0, 4),
    "DRAListTypeAttributes": (0, 4),
    "FabricManagerPartitioning": (0, 5),
    "HostManagedIMEXDaemon": (0, 5),
    "ConsumableShares": (0, 5),
}

# ValidateFeatureGates: (a, b, "mutually exclusive") or (a, b, "requires")
_EXCLUSIVE = (
    ("DynamicMIG", "PassthroughSupport"),
    ("DynamicMIG", "NVMLDeviceHealthCheck"),
    ("DynamicMIG", "MPSSupport"),
    ("PassthroughSupport", "NVMLDeviceHealthCheck"),
)
_REQUIRES = (("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"), ("DeviceMetadata", "PassthroughSupport"))

CONSUMABLE_SHARES_MODES = ("memory", "unlimited")  # or a positive integer: that many `shares`


@dataclass(frozen=True, slots=True)
class DriverGates:
    """The driver's gates that are on, and `--consumable-shares` (memory, unlimited or N) when ConsumableShares is."""

    enabled: frozenset[str] = frozenset()
    consumable_shares: str = "memory"

    @property
    def shares(self) -> bool:
        return "ConsumableShares" in self.enabled

    @property
    def fabric_partitions(self) -> bool:
        return "FabricManagerPartitioning" in self.enabled


def _release_tuple(release: str) -> tuple[int, int]:
    major, minor = (int(p) for p in release.split(".")[:2])
    return major, minor


def parse_driver_gates(gates: str | Iterable[str], release: str, consumable_shares: str = "memory") -> DriverGates:
    """`--driver-gates A,B` for driver `release`, refused as the driver refuses it: an unknown gate (named, with the
    known ones), a gate newer than the release, the combinations `ValidateFeatureGates` refuses, MPSSupport with
    ConsumableShares, and a `--consumable-shares` that is not memory, unlimited or a positive integer."""
    names = [g.strip() for g in (gates.split(",") if isinstance(gates, str) else gates) if g.strip()]
    unknown = [n for n in names if n not in DRIVER_GATES]
    if unknown:
        raise ValueError(
            f"unknown NVIDIA DRA driver feature gate(s) {', '.join(unknown)}; known: {', '.join(DRIVER_GATES)}"
        )
    if names:
        try:
            have = _release_tuple(release)
        except ValueError:
            raise ValueError(f"driver release {release!r} has no feature gates (0.x releases do)") from None
        # 25.x releases came before the 0.x renumbering: they predate every gate introduced at 0.4 or later
        too_new = [
            n for n in names if have[0] >= 25 and DRIVER_GATES[n] >= (0, 4) or have[0] < 25 and DRIVER_GATES[n] > have
        ]
        if too_new:
            raise ValueError(f"feature gate(s) {', '.join(too_new)} are not in NVIDIA DRA driver {release}")
    enabled = frozenset(names)
    for a, b in _EXCLUSIVE:
        if a in enabled and b in enabled:
            raise ValueError(f"feature gate {a} is currently mutually exclusive with {b} (the driver refuses to start)")
    for a, b in _REQUIRES:
        if a in enabled and b not in enabled:
            raise ValueError(f"feature gate {a} requires {b} to also be enabled (the driver refuses to start)")
    if "ConsumableShares" in enabled and "MPSSupport" in enabled:
        raise ValueError(
            "MPS sharing is not supported when consumable shares is enabled (the driver refuses MPS claims)"
        )
    mode = consumable_shares.strip()
    if mode not in CONSUMABLE_SHARES_MODES and not (mode.isdigit() and int(mode) > 0):
        raise ValueError(
            f"--consumable-shares must be memory, unlimited or a positive integer (got {consumable_shares!r})"
        )
    return DriverGates(enabled, mode)


def fabric_partitions(module: int) -> dict[int, int]:
    """Partition size -> Fabric Manager partition id holding GPU module `module` (1..8) on an 8-GPU baseboard."""
    if not 1 <= module <= 8:
        raise ValueError(f"GPU module id must be 1..8 on an 8-GPU baseboard (got {module})")
    return {8: 0, 4: 1 + (module - 1) // 4, 2: 3 + (module - 1) // 2, 1: 7 + (module - 1)}
