"""`gpudra sweep CONFIG`: run a grid of simulations on all cores (or Ray) into one table and report."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep(
        config: Path = typer.Argument(..., help="Sweep YAML (clusters, traces, policies, strategies, seeds)."),
    ) -> None:
        """Run every grid point; writes results.csv, results.json and index.html to the config's output."""
        from simulator.console import sweep_command

        code = sweep_command(config)
        if code:
            raise typer.Exit(code)
