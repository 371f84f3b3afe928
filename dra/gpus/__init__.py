"""GPU catalog, MIG geometry, NVLink topology and ResourceSlice generators in the NVIDIA DRA driver's shape.

The public face of `dra.gpus`: other packages import from here, not from the modules.
"""

from __future__ import annotations

from dra.gpus import catalog
from dra.gpus.catalog import GPUModel, all_models, find, get
from dra.gpus.devices import MigInstance, NodeGpus, PhysicalGpu, synthetic_node
from dra.gpus.mig import MigGeometry, MigProfile, Placement
from dra.gpus.slices import (
    DRIVER,
    MigMode,
    device_classes,
    node_resource_slices,
    resource_slices,
    slice_limit_errors,
    to_models,
)
from dra.gpus.topology import NVLINK_GROUP_ATTRIBUTE, NvlinkKind, NvlinkTopology

__all__ = [
    "DRIVER",
    "GPUModel",
    "MigGeometry",
    "MigInstance",
    "MigMode",
    "MigProfile",
    "NVLINK_GROUP_ATTRIBUTE",
    "NodeGpus",
    "NvlinkKind",
    "NvlinkTopology",
    "PhysicalGpu",
    "Placement",
    "all_models",
    "catalog",
    "device_classes",
    "find",
    "get",
    "node_resource_slices",
    "resource_slices",
    "slice_limit_errors",
    "synthetic_node",
    "to_models",
]
