"""This node's GPUs as ResourceSlices: read-only NVML capture, versioned snapshots, and the slices built from them.

The public face of `dra.inventory`. Live reads and snapshot files go through the same interpretation
(`node_from_snapshot`) and the same generators (`dra.gpus.node_resource_slices`).
"""

from __future__ import annotations

from dra.inventory.nvml import SCHEMA, InventoryError, NvmlUnavailable, capture
from dra.inventory.snapshot import load_snapshot, node_from_snapshot, save_snapshot, snapshot_from_node
from dra.inventory.sources import default_node_name, inventory_slices, named_model, write_capture

__all__ = [
    "InventoryError",
    "NvmlUnavailable",
    "SCHEMA",
    "capture",
    "default_node_name",
    "inventory_slices",
    "load_snapshot",
    "named_model",
    "node_from_snapshot",
    "save_snapshot",
    "snapshot_from_node",
    "write_capture",
]
