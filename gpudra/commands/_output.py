"""Print a `webhook.policy.report.Output` and exit with its code (shared by the policy and translate commands)."""

from __future__ import annotations

import sys

import typer

from webhook.policy.report import Output


def emit(output: Output) -> None:
    if output.stdout:
        sys.stdout.write(output.stdout)
    if output.stderr:
        sys.stderr.write(output.stderr)
    if output.code:
        raise typer.Exit(output.code)
