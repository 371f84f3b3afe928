"""`gpudra allocate`: allocate claims on one node with the structured allocator (upstream or scored)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
import yaml


def register(app: typer.Typer) -> None:
    @app.command(
        "allocate",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": False},
    )
    def allocate(
        ctx: typer.Context,
        slices: list[Path] = typer.Option(..., "--slices", help="ResourceSlice files (any number: --slices a b c)."),
        classes: list[Path] = typer.Option(..., "--classes", help="DeviceClass file(s)."),
        claim: Path = typer.Option(
            ..., "--claim", help="ResourceClaim (or template) file; several claims allocate together."
        ),
        allocated: list[Path] = typer.Option([], "--allocated", help="Claims already allocated (their status counts)."),
        node: str | None = typer.Option(None, "--node", help="Node name (a Node without labels)."),
        node_file: Path | None = typer.Option(
            None, "--node-file", help="A Node object, for label-based node selectors."
        ),
        mode: str = typer.Option("upstream", "--mode", help="upstream (exactly as kube-scheduler) or scored."),
        features: str | None = typer.Option(None, "--features", help="e.g. 'all', 'none', '-DRADeviceTaints'."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of YAML."),
    ) -> None:
        """Print {"allocation": ...} or {"unsatisfiable": reason} (exit 1)."""
        from dra.allocator.files import allocate_files

        if mode not in ("upstream", "scored"):
            raise typer.BadParameter("expected upstream or scored", param_hint="--mode")
        code, answer = allocate_files(
            slices=[*slices, *(Path(a) for a in ctx.args)],
            classes=classes,
            claim=claim,
            allocated=allocated,
            node=node,
            node_file=node_file,
            mode="scored" if mode == "scored" else "upstream",
            features=features,
        )
        typer.echo(json.dumps(answer, indent=2) if as_json else yaml.safe_dump(answer, sort_keys=False).rstrip())
        if code:
            raise typer.Exit(code)
