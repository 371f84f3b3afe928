"""GPU catalog, MIG geometry, NVLink topology and ResourceSlice generators in the NVIDIA DRA driver's shape.

The public face of `dra.gpus`: other packages import from here, not from the modules.
"""

from __future__ import annotations

from dra.gpus import catalog
from dra.gpus.catalog import GPUModel, all_models, find, get, trace_model, trace_models
from dra.gpus.compute_domain import (
    COMPUTE_DOMAIN_DAEMON_CLASS,
    COMPUTE_DOMAIN_DEFAULT_CHANNEL_CLASS,
    COMPUTE_DOMAIN_DRIVER,
    IMEX_CHANNEL_COUNT,
    compute_domain_device_classes,
    compute_domain_slices,
)
from dra.gpus.devices import MigInstance, NodeGpus, PhysicalGpu, VfioFacts, synthetic_node
from dra.gpus.driver_gates import CONSUMABLE_SHARES_MODES, DRIVER_GATES, DriverGates, parse_driver_gates
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
    GPU_DEVICE_CLASSES,
    VFIO_DEVICE_CLASS,
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
    vfio_device_uuid,
)
from dra.gpus.topology import NVLINK_GROUP_ATTRIBUTE, NvlinkKind, NvlinkTopology

__all__ = [
    "COMPUTE_DOMAIN_DAEMON_CLASS",
    "COMPUTE_DOMAIN_DEFAULT_CHANNEL_CLASS",
    "COMPUTE_DOMAIN_DRIVER",
    "CONSUMABLE_SHARES_MODES",
    "DEFAULT_DRIVER_RELEASE",
    "DRIVER",
    "DRIVER_GATES",
    "DRIVER_RELEASES",
    "DriverGates",
    "DriverRelease",
    "DriverShape",
    "GPUDRA_ATTRIBUTES",
    "GPUModel",
    "GPU_DEVICE_CLASSES",
    "IMEX_CHANNEL_COUNT",
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
    "VFIO_DEVICE_CLASS",
    "VfioFacts",
    "all_models",
    "apply_mig_config",
    "catalog",
    "compute_domain_device_classes",
    "compute_domain_slices",
    "device_classes",
    "driver_shape",
    "find",
    "get",
    "index_devices",
    "indexed_node_slices",
    "load_mig_parted",
    "mig_layouts",
    "node_resource_slices",
    "parse_driver_gates",
    "parse_mig_parted",
    "resource_slices",
    "slice_limit_errors",
    "synthetic_node",
    "to_models",
    "trace_model",
    "trace_models",
    "vfio_device_uuid",
]
