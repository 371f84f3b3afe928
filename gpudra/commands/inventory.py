"""`gpudra inventory`: this node's GPUs as the NVIDIA DRA driver's ResourceSlices (live NVML, snapshot or catalog).

The slices carry exactly what the chosen driver release publishes; `--gpudra-attributes` adds gpudra's own
NVLink group attribute, named as gpudra's (`gpu.gpudra.io/nvlinkGroup`).

Exit codes: 0 ok, 1 bad input (snapshot file, option value), 3 no NVIDIA driver/GPU/NVML on this machine.
"""

from __future__ import annotations

from pathlib import Path

import typer

from dra.errors import GpudraError
from dra.gpus import DEFAULT_DRIVER_RELEASE, parse_driver_gates
from dra.inventory import NvmlUnavailable, inventory_slices, write_capture

from ..options import OptionError, mig_mode, output_format
from ..outcome import Outcome, emit
from ..render.documents import json_list, slice_stream

EXIT_INPUT = 1
EXIT_NO_GPU = 3


def inventory(
    *,
    output: str = "yaml",
    node: str = "",
    mig: str = "static",
    k8s_version: str = "1.35",
    capture_file: Path | None = None,
    from_file: Path | None = None,
    catalog_model: str | None = None,
    count: int | None = None,
    driver_release: str = DEFAULT_DRIVER_RELEASE,
    gpudra_attributes: bool = False,
    mig_config: Path | None = None,
    mig_config_name: str | None = None,
    driver_gates: str = "",
    consumable_shares: str = "memory",
) -> Outcome:
    """The slices as a YAML stream or a JSON `List`; with `capture_file`, the snapshot written there instead."""
    try:
        mode = mig_mode(mig)
        fmt = output_format(output)
        gates = parse_driver_gates(driver_gates, driver_release, consumable_shares)
    except OptionError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    except ValueError as exc:
        return Outcome(stderr=f"error: --driver-gates: {exc}\n", code=EXIT_INPUT)
    if gates.shares and mode == "dynamic":
        # applyConsumableShares runs for whole GPUs and static MIG devices, never DynamicMIG's partitions
        return Outcome(stderr="error: --driver-gates: ConsumableShares applies to whole GPUs and static MIG devices, "
                       "not to DynamicMIG's partitions (use --mig-mode none or static)\n", code=EXIT_INPUT)  # fmt: skip
    try:
        if capture_file is not None:
            snapshot = write_capture(capture_file, node_name=node)
            return Outcome(stderr=f"wrote {capture_file}: {len(snapshot['gpus'])} GPU(s) of node {snapshot['node']}\n")
        slices = inventory_slices(
            from_file=from_file,
            catalog_model=catalog_model,
            count=count,
            node_name=node,
            mig_mode=mode,
            k8s_version=k8s_version,
            driver_release=driver_release,
            gpudra_attributes=gpudra_attributes,
            driver_gates=gates,
            mig_config=mig_config,
            mig_config_name=mig_config_name,
        )
    except NvmlUnavailable as exc:
        hint = "hint: use --from SNAPSHOT.json or --catalog MODEL to build slices without a GPU\n"
        return Outcome(stderr=f"error: no GPU inventory on this machine: {exc}\n{hint}", code=EXIT_NO_GPU)
    except (GpudraError, KeyError, ValueError) as exc:
        return Outcome(stderr=f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}\n", code=EXIT_INPUT)
    return Outcome(stdout=json_list(slices) if fmt == "json" else slice_stream(slices))


def register(app: typer.Typer) -> None:
    @app.command("inventory")
    def _inventory(
        output: str = typer.Option("yaml", "-o", "--output", help="yaml (multi-document) or json (a v1 List)."),
        node: str = typer.Option("", "--node", help="Node name = pool name (default: $NODE_NAME or host name)."),
        mig: str = typer.Option("static", "--mig-mode", help="dynamic (DynamicMIG), static (driver default), none."),
        k8s_version: str = typer.Option("1.35", "--k8s-version", help="Picks the DynamicMIG slice layout (1.34/1.35)."),
        capture_file: Path | None = typer.Option(None, "--capture", help="Write a read-only NVML snapshot here."),
        from_file: Path | None = typer.Option(None, "--from", help="Build the slices from a snapshot file."),
        catalog_model: str | None = typer.Option(None, "--catalog", help="A synthetic node of this catalog model."),
        count: int | None = typer.Option(None, "--count", min=0, help="GPUs of the --catalog node."),
        driver_release: str = typer.Option(
            DEFAULT_DRIVER_RELEASE, "--driver-release", help="The NVIDIA DRA driver release whose shape to publish."
        ),
        gpudra_attributes: bool = typer.Option(
            False,
            "--gpudra-attributes",
            help="Also publish gpudra's gpu.gpudra.io/nvlinkGroup (the NVIDIA driver publishes no NVLink attribute).",
        ),
        mig_config: Path | None = typer.Option(
            None, "--mig-config", help="A mig-parted config file (or the GPU Operator's ConfigMap holding one)."
        ),
        mig_config_name: str | None = typer.Option(
            None, "--mig-config-name", help="The config to apply first (the node's nvidia.com/mig.config label)."
        ),
        driver_gates: str = typer.Option(
            "",
            "--driver-gates",
            help="The driver's own feature gates, comma-separated (ConsumableShares, FabricManagerPartitioning, ...).",
        ),
        consumable_shares: str = typer.Option(
            "memory", "--consumable-shares", help="With ConsumableShares: memory, unlimited or a number of shares."
        ),
    ) -> None:
        """Print this node's ResourceSlices; --capture writes a snapshot, --from reads one, --catalog invents one."""
        emit(
            inventory(
                output=output,
                node=node,
                mig=mig,
                k8s_version=k8s_version,
                capture_file=capture_file,
                from_file=from_file,
                catalog_model=catalog_model,
                count=count,
                driver_release=driver_release,
                gpudra_attributes=gpudra_attributes,
                mig_config=mig_config,
                mig_config_name=mig_config_name,
                driver_gates=driver_gates,
                consumable_shares=consumable_shares,
            )
        )
