"""`gpudra translate POD.yaml`: the pod rewritten to DRA and its ResourceClaimTemplate."""

from __future__ import annotations

from pathlib import Path

import typer

from webhook.policy import report

from ._output import emit


def translate(
    pod: Path = typer.Argument(..., help="Pod YAML or JSON (a Namespace document beside it is used too)."),
    policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
    output: str = typer.Option("yaml", "-o", "--output", help="yaml (a YAML stream) or json."),
    namespace: Path | None = typer.Option(None, "--namespace", help="Namespace object YAML."),
) -> None:
    """Print the mutated pod and its ResourceClaimTemplate; exit 1 with the policy's message when denied."""
    emit(report.translate_file(pod, policies, output, namespace))


def register(app: typer.Typer) -> None:
    app.command("translate")(translate)
