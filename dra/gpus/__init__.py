"""GPU catalog, MIG geometry, NVLink topology and ResourceSlice generators in the NVIDIA DRA driver's shape.

The public face of `dra.gpus`: other packages import from here, not from the modules.
"""

from __future__ import annotations

from dra.gpus import catalog
from dra.gpus.catalog import GPUModel, all_models, find, get, trace_model, trace_models
from dra.gpus.devices import MigInstance, NodeGpus, PhysicalGpu, synthetic_node
from dra.gpus.driver_versions import (
    DEFAULT_DRIVER_RELEASE,
    DRIVER_RELEASES,
    GPUDRA_ATTRIBUTES,
    DriverRelease,
    DriverShape,
    driver_shape,
)
from dra.gpus.mig import MigGeometry, MigProfile, Placement
from dra.gpus.mig_parted import (
    MIG_CONFIG_LABEL,
    MigPartedConfig,
    apply_mig_config,
    load_mig_parted,
    mig_layouts,
    parse_mig_parted,
)
from dra.gpus.slices import (
    DRIVER,
    IndexedSlices,
    MigMode,
    SliceDevice,
    device_classes,
    index_devices,
    indexed_node_slices,
    node_resource_slices,
    resource_slices,
    slice_limit_errors,
    to_models,
)
from dra.gpus.topology import NVLINK_GROUP_ATTRIBUTE, NvlinkKind, NvlinkTopology

__all__ = [
    "DEFAULT_DRIVER_RELEASE",
    "DRIVER",
    "DRIVER_RELEASES",
    "DriverRelease",
    "DriverShape",
    "GPUDRA_ATTRIBUTES",
    "GPUModel",
    "IndexedSlices",
    "MIG_CONFIG_LABEL",
    "MigGeometry",
    "MigInstance",
    "MigMode",
    "MigPartedConfig",
    "MigProfile",
    "NVLINK_GROUP_ATTRIBUTE",
    "NodeGpus",
    "NvlinkKind",
    "NvlinkTopology",
    "PhysicalGpu",
    "Placement",
    "SliceDevice",
    "all_models",
    "apply_mig_config",
    "catalog",
    "device_classes",
    "driver_shape",
    "find",
    "get",
    "index_devices",
    "indexed_node_slices",
    "load_mig_parted",
    "mig_layouts",
    "node_resource_slices",
    "parse_mig_parted",
    "resource_slices",
    "slice_limit_errors",
    "synthetic_node",
    "to_models",
    "trace_model",
    "trace_models",
]
