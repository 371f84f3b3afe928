"""Where a node's inventory comes from: live NVML, a snapshot file or the catalog. Every source goes through the
one `node_from_snapshot` -> `node_resource_slices` path to this node's ResourceSlices."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from dra import gpus
from dra.errors import UnknownName
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

__all__ = ["default_node_name", "inventory_slices", "named_model", "write_capture"]


def _tokens(text: str) -> set[str]:
    return set(text.lower().replace("-", " ").split())


def named_model(name: str) -> gpus.GPUModel:
    """The catalog model `name` means for a node of its own: a key or NVML product name as it is; any other name
    (an alias, a part of a key) only when it names one model. `A100` names four: an `UnknownName` lists them."""
    model = gpus.find(name)
    if model is not None and " ".join(name.lower().split()) in (model.key.lower(), model.product_name.lower()):
        return model
    wanted = _tokens(name)
    candidates = [m.key for m in gpus.all_models() if wanted and wanted <= _tokens(m.key)]
    if len(candidates) > 1:
        raise UnknownName(f"GPU model {name!r} is ambiguous: it may be {', '.join(candidates)}; name one of them")
    return gpus.get(name)


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
    mig_enabled: bool = False,
) -> list[dict[str, Any]]:
    """ResourceSlices for a snapshot file, a catalog model (synthetic node) or, by default, this machine, exactly
    as NVIDIA DRA driver `driver_release` publishes them; `gpudra_attributes` adds gpudra's NVLink groups.

    `mig_config` + `mig_config_name`: first apply that named layout of a mig-parted config file (what the GPU
    Operator does for a node labelled `nvidia.com/mig.config=<name>`), so `static` mode publishes its MIG devices.
    `mig_enabled`: the catalog node's GPUs have MIG mode on and no MIG device (an Ampere GPU under DynamicMIG
    announces its partitions only then); a model without MIG is an error."""
    if (mig_config is None) != (mig_config_name is None):
        raise ValueError(
            "a mig-parted config needs both the file and the config name (--mig-config, --mig-config-name)"
        )
    if mig_enabled and catalog_model is None:
        raise ValueError("MIG mode on (--mig-enabled) is chosen for a --catalog node; a real node says its own")
    if catalog_model is not None:
        model = named_model(catalog_model)
        if mig_enabled and model.mig is None:
            raise ValueError(f"{model.key} has no MIG: its MIG mode cannot be on")
        n = model.gpus_per_node if count is None else count
        layouts: dict[int, list[Any]] | None = {i: [] for i in range(n)} if mig_enabled else None
        node = synthetic_node(model, node_name or "node-0", n, mig_layouts=layouts)
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
