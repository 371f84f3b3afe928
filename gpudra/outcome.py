"""The one result shape of every command: what goes to stdout, what goes to stderr, and the exit code.

Commands build an `Outcome` from the data the lower packages return; `emit` is the only place that writes it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import typer

__all__ = ["Outcome", "emit"]


@dataclass(frozen=True)
class Outcome:
    """Text for stdout, text for stderr (each written as is, newlines included) and the exit code."""

    stdout: str = ""
    stderr: str = ""
    code: int = 0


def emit(outcome: Outcome) -> None:
    """Write stdout, then stderr, and leave with the exit code (`typer.Exit` when it is not 0)."""
    if outcome.stdout:
        sys.stdout.write(outcome.stdout)
    if outcome.stderr:
        sys.stderr.write(outcome.stderr)
    if outcome.code:
        raise typer.Exit(outcome.code)
