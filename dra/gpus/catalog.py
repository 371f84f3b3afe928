"""The GPU model catalog: memory, architecture, compute capability, NVML product name, NVLink kind, MIG geometry.

Memory is NVML's `memory.total` (what the DRA driver publishes as `memory` capacity) where we know it; entries
marked `memory_verified=False` carry the figure public `nvidia-smi` captures show, not confirmed by a capture of
ours. Product names are `nvmlDeviceGetName` output. Look-ups accept catalog keys, NVML product names, aliases and
the GPU model names of the Alibaba cluster-trace-gpu-v2023 (`V100M16`, `V100M32`, `T4`, `P100`, `A10`).
`trace_model` gives those five as the openb trace's own models instead, with the figures its comparisons pin.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dra.errors import UnknownName
from dra.gpus import _mig_tables
from dra.gpus.mig import MigGeometry
from dra.gpus.topology import NvlinkKind, NvlinkTopology

__all__ = ["GPUModel", "all_models", "find", "get", "trace_model", "trace_models"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class GPUModel:
    """One GPU product."""

    key: str
    product_name: str  # exactly as nvmlDeviceGetName reports it
    memory_bytes: int
    architecture: str  # as the DRA driver publishes it (go-nvlib GetArchitectureAsString)
    compute_capability: str  # "major.minor"
    nvlink: NvlinkKind
    nvlink_links: int = 0  # NV# between two connected GPUs (per pair on NVSwitch)
    mig: MigGeometry | None = None
    gpus_per_node: int = 8  # a typical node of this model (for generated clusters)
    brand: str = "Nvidia"  # go-nvlib GetBrandAsString of NVML_BRAND_NVIDIA (older drivers may say Tesla)
    aliases: tuple[str, ...] = ()
    memory_verified: bool = False
    name_verified: bool = False

    @cached_property
    def memory_mib(self) -> int:
        """`memory_bytes` in MiB (cached: the simulator reads it in its inner loops)."""
        return self.memory_bytes // MIB

    @property
    def cuda_compute_capability(self) -> str:
        """As the driver publishes it: a semantic version (`8.0.0`)."""
        return f"{self.compute_capability}.0"

    def topology(self, count: int | None = None) -> NvlinkTopology:
        return NvlinkTopology.build(self.nvlink, self.gpus_per_node if count is None else count, self.nvlink_links)


def _m(mib: int) -> int:
    return mib * MIB


_G = _mig_tables.GEOMETRIES

# Sources: product names from NVML as quoted in the DRA driver's issue #719 (A100 80GB PCIe), the DRA driver's
# hack/ci/mock-nvml/common.sh (A100-SXM4-40GB, H100 80GB HBM3, B200, L40S), NVIDIA go-nvml's pkg/nvml/mock/gpus
# (A100-PCIE-40GB, A100-SXM4-80GB) and public nvidia-smi captures; `name_verified` marks the ones found in
# those NVIDIA sources, the rest are unverified. H100 80GB HBM3's 81559 MiB is the figure
# of reference §4.7. Other MiB totals are what public `nvidia-smi` output shows: unverified by us.
_MODELS: tuple[GPUModel, ...] = (
    GPUModel("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", _m(40960), "Ampere", "8.0", "nvswitch", 12, _G["A100-40GB"],
             aliases=("A100-40GB", "A100"), name_verified=True),
    GPUModel("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", _m(81920), "Ampere", "8.0", "nvswitch", 12, _G["A100-80GB"],
             aliases=("A100-80GB",), name_verified=True),
    GPUModel("A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", _m(40960), "Ampere", "8.0", "pairs", 12, _G["A100-40GB"],
             name_verified=True),
    GPUModel("A100-PCIE-80GB", "NVIDIA A100 80GB PCIe", _m(81920), "Ampere", "8.0", "pairs", 12, _G["A100-80GB"],
             name_verified=True),
    # NVIDIA A30 (PCIe; NVLink bridges are optional, so none assumed): the name and 24576 MiB as nvidia-smi prints them.
    GPUModel("A30-24GB", "NVIDIA A30", _m(24576), "Ampere", "8.0", "none", 0, _G["A30-24GB"], 4, aliases=("A30",)),
    GPUModel("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", _m(81559), "Hopper", "9.0", "nvswitch", 18, _G["H100-80GB"],
             aliases=("H100", "H100-80GB"), memory_verified=True, name_verified=True),
    # H100 PCIe takes an NVLink bridge (600 GB/s) in pairs; nodes without bridges override the kind to "none".
    GPUModel("H100-PCIE-80GB", "NVIDIA H100 PCIe", _m(81559), "Hopper", "9.0", "pairs", 12, _G["H100-PCIe-80GB"]),
    GPUModel("H100-NVL-94GB", "NVIDIA H100 NVL", _m(95830), "Hopper", "9.0", "pairs", 12, _G["H100-94GB"],
             aliases=("H100-NVL",)),
    GPUModel("H200-SXM5-141GB", "NVIDIA H200", _m(143771), "Hopper", "9.0", "nvswitch", 18, _G["H200-141GB"],
             aliases=("H200", "NVIDIA H200 141GB HBM3e")),
    GPUModel("B200-SXM6-180GB", "NVIDIA B200", _m(183359), "Blackwell", "10.0", "nvswitch", 18, _G["B200-180GB"],
             aliases=("B200", "NVIDIA B200 180GB HBM3e"), name_verified=True),
    GPUModel("L40S", "NVIDIA L40S", _m(46068), "Ada Lovelace", "8.9", "none", gpus_per_node=4, name_verified=True),
    GPUModel("L4", "NVIDIA L4", _m(23034), "Ada Lovelace", "8.9", "none", gpus_per_node=4),
    GPUModel("A10", "NVIDIA A10", _m(23028), "Ampere", "8.6", "none", gpus_per_node=1),
    # nvidia-smi prints "Tesla T4"; NVIDIA's nvml-mock t4 profile says "NVIDIA T4" (kept as an alias).
    GPUModel("T4", "Tesla T4", _m(15360), "Turing", "7.5", "none", gpus_per_node=2, aliases=("NVIDIA T4",)),
    GPUModel("P100-PCIE-16GB", "Tesla P100-PCIE-16GB", _m(16280), "Pascal", "6.0", "none", gpus_per_node=2,
             aliases=("P100",)),
    # DGX-1V: V100 SXM2 in a hybrid cube-mesh. The trace's V100M16/V100M32 nodes hold 1, 4 or 8 GPUs; we read them
    # as SXM2 boards (the trace does not say).
    GPUModel("V100-SXM2-16GB", "Tesla V100-SXM2-16GB", _m(16160), "Volta", "7.0", "mesh", 2, aliases=("V100M16",)),
    GPUModel("V100-SXM2-32GB", "Tesla V100-SXM2-32GB", _m(32510), "Volta", "7.0", "mesh", 2,
             aliases=("V100M32", "V100")),
    GPUModel("V100-PCIE-16GB", "Tesla V100-PCIE-16GB", _m(16160), "Volta", "7.0", "none", gpus_per_node=4),
    GPUModel("V100-PCIE-32GB", "Tesla V100-PCIE-32GB", _m(32510), "Volta", "7.0", "none", gpus_per_node=4),
)  # fmt: skip


# The GPU models of the Alibaba cluster-trace-gpu-v2023 (openb) node list as the FGD paper's comparison sizes
# them: whole GiB of memory (16 GiB for P100, T4 and V100M16, 32 GiB for V100M32, 24 GiB for A10) and NVLink
# among the trace's P100 and V100 GPUs (its nodes hold 1, 2, 4 or 8; we read them as DGX-1 style SXM2 boards).
# The figures are pinned, not measured: the simulator's FGD/openb comparison (benchmarks/fgd_gpudra.py,
# docs/simulator.md) replays the trace on them, and must not move when the real entries above get better
# numbers. Product names, architecture and compute capability are the real products' (P100 as the SXM2 board
# its NVLink implies). Keys are the trace's labels; only `trace_model` finds these (`find("T4")` is the real T4).
_TRACE_MODELS: tuple[GPUModel, ...] = (
    GPUModel("P100", "Tesla P100-SXM2-16GB", _m(16384), "Pascal", "6.0", "mesh", gpus_per_node=8),
    GPUModel("T4", "Tesla T4", _m(16384), "Turing", "7.5", "none", gpus_per_node=2),
    GPUModel("V100M16", "Tesla V100-SXM2-16GB", _m(16384), "Volta", "7.0", "mesh", 2),
    GPUModel("V100M32", "Tesla V100-SXM2-32GB", _m(32768), "Volta", "7.0", "mesh", 2),
    GPUModel("A10", "NVIDIA A10", _m(24576), "Ampere", "8.6", "none", gpus_per_node=1),
)
_TRACE_INDEX = {m.key.upper(): m for m in _TRACE_MODELS}


def _norm(text: str) -> str:
    return " ".join(text.strip().lower().split())


_INDEX: dict[str, GPUModel] = {}
for _model in _MODELS:
    for _name in (_model.key, _model.product_name, *_model.aliases):
        _INDEX.setdefault(_norm(_name), _model)


def all_models() -> list[GPUModel]:
    """Every catalog model, in catalog order."""
    return list(_MODELS)


def find(name: str) -> GPUModel | None:
    """The model for a catalog key, NVML product name or alias (case and spacing ignored), or None."""
    return _INDEX.get(_norm(name))


def get(name: str) -> GPUModel:
    """Like `find`, but raises `UnknownName` (a KeyError too) naming the known keys."""
    model = find(name)
    if model is None:
        known = ", ".join(m.key for m in _MODELS)
        raise UnknownName(f"unknown GPU model {name!r} (known: {known}; NVML product names are accepted too)")
    return model


def trace_models() -> list[GPUModel]:
    """The openb trace's own GPU models (P100, T4, V100M16, V100M32, A10), with their pinned figures."""
    return list(_TRACE_MODELS)


def trace_model(label: str) -> GPUModel | None:
    """The openb trace's model for its label (`P100`, `T4`, `V100M16`, `V100M32`, `A10`; case ignored), or None."""
    return _TRACE_INDEX.get(label.strip().upper())
