"""`gpudra inventory`: this node's GPUs as the NVIDIA DRA driver's ResourceSlices (live NVML, snapshot or catalog).

Exit codes: 0 ok, 1 bad input (snapshot file, option value), 3 no NVIDIA driver/GPU/NVML on this machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import typer

from dra.gpus import MigMode
from dra.inventory.command import Output

EXIT_INPUT = 1
EXIT_NO_GPU = 3


def register(app: typer.Typer) -> None:
    @app.command("inventory")
    def inventory(
        output: str = typer.Option("yaml", "-o", "--output", help="yaml (multi-document) or json (a v1 List)."),
        node: str = typer.Option("", "--node", help="Node name = pool name (default: $NODE_NAME or host name)."),
        mig_mode: str = typer.Option(
            "static", "--mig-mode", help="dynamic (DynamicMIG), static (driver default), none."
        ),
        k8s_version: str = typer.Option("1.35", "--k8s-version", help="Picks the DynamicMIG slice layout (1.34/1.35)."),
        capture_file: Path | None = typer.Option(None, "--capture", help="Write a read-only NVML snapshot here."),
        from_file: Path | None = typer.Option(None, "--from", help="Build the slices from a snapshot file."),
        catalog_model: str | None = typer.Option(None, "--catalog", help="A synthetic node of this catalog model."),
        count: int | None = typer.Option(None, "--count", min=0, help="GPUs of the --catalog node."),
    ) -> None:
        """Print this node's ResourceSlices; --capture writes a snapshot, --from reads one, --catalog invents one."""
        from dra.errors import GpudraError
        from dra.inventory import NvmlUnavailable, inventory_slices, render, write_capture

        err = typer.echo
        if mig_mode not in ("dynamic", "static", "none"):
            err(f"error: --mig-mode must be dynamic, static or none (got {mig_mode!r})", err=True)
            raise typer.Exit(EXIT_INPUT)
        if output not in ("yaml", "json"):
            err(f"error: -o must be yaml or json (got {output!r})", err=True)
            raise typer.Exit(EXIT_INPUT)
        try:
            if capture_file is not None:
                snapshot = write_capture(capture_file, node_name=node)
                err(f"wrote {capture_file}: {len(snapshot['gpus'])} GPU(s) of node {snapshot['node']}", err=True)
                return
            slices = inventory_slices(
                from_file=from_file,
                catalog_model=catalog_model,
                count=count,
                node_name=node,
                mig_mode=cast(MigMode, mig_mode),
                k8s_version=k8s_version,
            )
        except NvmlUnavailable as exc:
            err(f"error: no GPU inventory on this machine: {exc}", err=True)
            err("hint: use --from SNAPSHOT.json or --catalog MODEL to build slices without a GPU", err=True)
            raise typer.Exit(EXIT_NO_GPU) from exc
        except (GpudraError, KeyError, ValueError) as exc:
            err(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", err=True)
            raise typer.Exit(EXIT_INPUT) from exc
        typer.echo(render(slices, cast(Output, output)), nl=False)
