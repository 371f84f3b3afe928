"""`gpudra simulate`: replay a trace (or the built-in workload) on a cluster under several strategies."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate(
        cluster: Path | None = typer.Option(None, "--cluster", help="Cluster YAML spec or openb node CSV."),
        trace: Path | None = typer.Option(None, "--trace", help="openb pod CSV or gpudra JSONL of Pod specs."),
        policies: Path | None = typer.Option(None, "--policies", help="Policy directory for the gpudra strategy."),
        strategies: str | None = typer.Option(
            None, "--strategies", help="Comma-separated, e.g. device-plugin,dra-whole,gpudra,fgd."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed for the generator, sampling and Random."),
        report: Path | None = typer.Option(None, "--report", help="Write HTML + PNG plots + CSV series here."),
        as_json: bool = typer.Option(False, "--json", help="Print the stable JSON summary."),
        protocol: str = typer.Option(
            "auto", "--protocol", help="replay (trace times), fgd (the FGD paper's) or auto (fgd for openb CSVs)."
        ),
        load: float = typer.Option(1.0, "--load", help="fgd protocol: arrived GPU demand as a share of capacity."),
        mode: str = typer.Option("scored", "--allocator-mode", help="gpudra's dra.allocator mode: upstream or scored."),
    ) -> None:
        """Compare placement strategies; with no arguments: the built-in cluster and workload."""
        from simulator.console import simulate_command

        code = simulate_command(
            cluster=cluster, trace=trace, policies=policies, strategies=strategies, seed=seed, report=report,
            as_json=as_json, protocol=protocol, load=load, mode=mode,
        )  # fmt: skip
        if code:
            raise typer.Exit(code)
