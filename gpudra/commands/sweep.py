"""`gpudra sweep CONFIG`: run a grid of simulations on all cores (or Ray) into one table and report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from dra.errors import GpudraError

from ..extras import missing_extra
from ..options import OptionError
from ..outcome import Outcome
from ..signature import add_command
from ..terminal import progress_bar, styled
from .simulate import input_error


@dataclass(frozen=True, slots=True)
class SweepOptions:
    """`gpudra sweep`'s options as typer shows them (the command's one signature)."""

    config: Annotated[Path, typer.Argument(help="Sweep YAML (clusters, traces, policies, strategies, seeds).")]


def sweep(options: SweepOptions) -> Outcome:
    """Run every grid point with a progress bar on stderr; where the results are (exit 2 on bad input)."""
    from simulator.sweep import load_sweep, run_sweep

    err = Console(stderr=True)
    if missing := missing_extra("matplotlib", "report", "gpudra sweep's plot"):
        return input_error(OptionError(missing))
    try:
        grid = load_sweep(options.config)
        with progress_bar("sweep", err) as bar:
            task = bar.add_task("sweep", total=len(grid.jobs))
            rows = run_sweep(grid, lambda done, total: bar.update(task, completed=done))
    except (GpudraError, OSError) as exc:
        return input_error(exc)
    return Outcome(stdout=styled(f"{len(rows)} runs -> {grid.output / 'results.csv'}, {grid.output / 'index.html'}"))


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "sweep",
        sweep,
        help="Run every grid point; writes results.csv, results.json and index.html to the config's output.",
    )
