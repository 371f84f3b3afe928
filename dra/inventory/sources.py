"""Where a node's inventory comes from: live NVML, a snapshot file or the catalog. Every source goes through the
one `node_from_snapshot` -> `node_resource_slices` path to this node's ResourceSlices."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from dra import gpus
from dra.gpus import (
    DEFAULT_DRIVER_RELEASE,
    DriverGates,
    MigMode,
    apply_mig_config,
    load_mig_parted,
    node_resource_slices,
    synthetic_node,
)
from dra.inventory.nvml import capture
from dra.inventory.snapshot import load_snapshot, node_from_snapshot, save_snapshot, snapshot_from_node

__all__ = ["default_node_name", "inventory_slices", "write_capture"]


def default_node_name() -> str:
    """`NODE_NAME` (what the DRA driver's DaemonSet sets from the downward API), else the host name."""
    return os.environ.get("NODE_NAME") or socket.gethostname().split(".")[0].lower()


def inventory_slices(
    *,
    from_file: str | Path | None = None,
    catalog_model: str | None = None,
    count: int | None = None,
    node_name: str = "",
    mig_mode: MigMode = "static",
    k8s_version: str = "1.35",
    driver_release: str = DEFAULT_DRIVER_RELEASE,
    gpudra_attributes: bool = False,
    driver_gates: DriverGates | None = None,
    mig_config: str | Path | None = None,
    mig_config_name: str | None = None,
    nvml: Any | None = None,
) -> list[dict[str, Any]]:
    """ResourceSlices for a snapshot file, a catalog model (synthetic node) or, by default, this machine, exactly
    as NVIDIA DRA driver `driver_release` publishes them; `gpudra_attributes` adds gpudra's NVLink groups.

    `mig_config` + `mig_config_name`: first apply that named layout of a mig-parted config file (what the GPU
    Operator does for a node labelled `nvidia.com/mig.config=<name>`), so `static` mode publishes its MIG devices."""
    if (mig_config is None) != (mig_config_name is None):
        raise ValueError(
            "a mig-parted config needs both the file and the config name (--mig-config, --mig-config-name)"
        )
    if catalog_model is not None:
        node = synthetic_node(gpus.get(catalog_model), node_name or "node-0", count)
        snapshot = snapshot_from_node(node)
    elif from_file is not None:
        snapshot = load_snapshot(from_file)
    else:
        snapshot = capture(nvml, node_name=node_name or default_node_name())
    node = node_from_snapshot(snapshot, node_name)
    if mig_config is not None and mig_config_name is not None:
        node = apply_mig_config(node, load_mig_parted(mig_config), mig_config_name)
    return node_resource_slices(
        node,
        mig_mode=mig_mode,
        k8s_version=k8s_version,
        driver_release=driver_release,
        gpudra_attributes=gpudra_attributes,
        driver_gates=driver_gates,
    )


def write_capture(path: str | Path, *, node_name: str = "", nvml: Any | None = None) -> dict[str, Any]:
    """Read this machine read-only and write the snapshot to `path`; returns it."""
    snapshot = capture(nvml, node_name=node_name or default_node_name())
    save_snapshot(snapshot, path)
    return snapshot
