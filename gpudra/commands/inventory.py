"""`gpudra inventory`: this node's GPUs as the NVIDIA DRA driver's ResourceSlices (live NVML, snapshot or catalog).

The slices carry exactly what the chosen driver release publishes; `--gpudra-attributes` adds gpudra's own
NVLink group attribute, named as gpudra's (`gpu.gpudra.io/nvlinkGroup`).

Exit codes: 0 ok, 2 bad input (snapshot file, option value, a `--catalog` name that is unknown or names several
models), 3 no NVIDIA driver/GPU/NVML on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from dra.errors import GpudraError
from dra.gpus import DEFAULT_DRIVER_RELEASE, parse_driver_gates
from dra.inventory import NvmlUnavailable, inventory_slices, write_capture

from ..options import OptionError, mig_mode, output_format
from ..outcome import Outcome
from ..render.documents import json_list, slice_stream
from ..signature import add_command

EXIT_INPUT = 2  # as every command's bad input, and click's own usage errors
EXIT_NO_GPU = 3


@dataclass(frozen=True, slots=True)
class InventoryOptions:
    """`gpudra inventory`'s options as typer shows them (the command's one signature)."""

    output: Annotated[str, typer.Option("-o", "--output", help="yaml (multi-document) or json (a v1 List).")] = "yaml"
    node: Annotated[str, typer.Option("--node", help="Node name = pool name (default: $NODE_NAME or host name).")] = ""
    mig: Annotated[str, typer.Option("--mig-mode", help="dynamic (DynamicMIG), static (driver default), none.")] = (
        "static"
    )
    k8s_version: Annotated[
        str, typer.Option("--k8s-version", help="Picks the DynamicMIG slice layout (1.34/1.35).")
    ] = "1.35"
    capture_file: Annotated[Path | None, typer.Option("--capture", help="Write a read-only NVML snapshot here.")] = None
    from_file: Annotated[Path | None, typer.Option("--from", help="Build the slices from a snapshot file.")] = None
    catalog_model: Annotated[str | None, typer.Option("--catalog", help="A synthetic node of this catalog model.")] = (
        None
    )
    count: Annotated[int | None, typer.Option("--count", min=0, help="GPUs of the --catalog node.")] = None
    mig_enabled: Annotated[
        bool,
        typer.Option(
            "--mig-enabled",
            help="The --catalog node's GPUs have MIG mode on (DynamicMIG announces an Ampere GPU's partitions then).",
        ),
    ] = False
    driver_release: Annotated[
        str, typer.Option("--driver-release", help="The NVIDIA DRA driver release whose shape to publish.")
    ] = DEFAULT_DRIVER_RELEASE
    gpudra_attributes: Annotated[
        bool,
        typer.Option(
            "--gpudra-attributes",
            help="Also publish gpudra's gpu.gpudra.io/nvlinkGroup (the NVIDIA driver publishes no NVLink attribute).",
        ),
    ] = False
    mig_config: Annotated[
        Path | None,
        typer.Option("--mig-config", help="A mig-parted config file (or the GPU Operator's ConfigMap holding one)."),
    ] = None
    mig_config_name: Annotated[
        str | None,
        typer.Option("--mig-config-name", help="The config to apply first (the node's nvidia.com/mig.config label)."),
    ] = None
    driver_gates: Annotated[
        str,
        typer.Option(
            "--driver-gates",
            help="The driver's own feature gates, comma-separated (ConsumableShares, FabricManagerPartitioning, ...).",
        ),
    ] = ""
    consumable_shares: Annotated[
        str, typer.Option("--consumable-shares", help="With ConsumableShares: memory, unlimited or a number of shares.")
    ] = "memory"


def inventory(options: InventoryOptions) -> Outcome:
    """The slices as a YAML stream or a JSON `List`; with `capture_file`, the snapshot written there instead."""
    try:
        mode = mig_mode(options.mig)
        fmt = output_format(options.output)
        gates = parse_driver_gates(options.driver_gates, options.driver_release, options.consumable_shares)
    except OptionError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    except ValueError as exc:
        return Outcome(stderr=f"error: --driver-gates: {exc}\n", code=EXIT_INPUT)
    if gates.shares and mode == "dynamic":
        # applyConsumableShares runs for whole GPUs and static MIG devices, never DynamicMIG's partitions
        return Outcome(stderr="error: --driver-gates: ConsumableShares applies to whole GPUs and static MIG devices, "
                       "not to DynamicMIG's partitions (use --mig-mode none or static)\n", code=EXIT_INPUT)  # fmt: skip
    try:
        if options.capture_file is not None:
            snapshot = write_capture(options.capture_file, node_name=options.node)
            wrote = f"{len(snapshot['gpus'])} GPU(s) of node {snapshot['node']}"
            return Outcome(stderr=f"wrote {options.capture_file}: {wrote}\n")
        slices = inventory_slices(
            from_file=options.from_file,
            catalog_model=options.catalog_model,
            count=options.count,
            mig_enabled=options.mig_enabled,
            node_name=options.node,
            mig_mode=mode,
            k8s_version=options.k8s_version,
            driver_release=options.driver_release,
            gpudra_attributes=options.gpudra_attributes,
            driver_gates=gates,
            mig_config=options.mig_config,
            mig_config_name=options.mig_config_name,
        )
    except NvmlUnavailable as exc:
        hint = "hint: use --from SNAPSHOT.json or --catalog MODEL to build slices without a GPU\n"
        return Outcome(stderr=f"error: no GPU inventory on this machine: {exc}\n{hint}", code=EXIT_NO_GPU)
    except (GpudraError, KeyError, ValueError) as exc:
        return Outcome(stderr=f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}\n", code=EXIT_INPUT)
    return Outcome(stdout=json_list(slices) if fmt == "json" else slice_stream(slices))


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "inventory",
        inventory,
        help="Print this node's ResourceSlices; --capture writes a snapshot, --from reads one, --catalog invents one.",
    )
