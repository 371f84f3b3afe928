"""`gpudra policy lint|test|explain`: check, test and explain GPUClaimPolicy files."""

from __future__ import annotations

from pathlib import Path

import typer

from webhook.policy import report

from ._output import emit

policy_app = typer.Typer(help="Lint, test and explain GPUClaimPolicy files.", no_args_is_help=True)


@policy_app.command("lint")
def lint(paths: list[Path] = typer.Argument(None, help="Policy files or directories (default: shipped).")) -> None:
    """Load and compile policies; report errors as file:line:column with the expression."""
    emit(report.lint(paths or []))


@policy_app.command("test")
def test(paths: list[Path] = typer.Argument(None, help="Test files or directories (default: shipped tests).")) -> None:
    """Run GPUClaimPolicyTest files; print a diff for each failed expectation."""
    emit(report.test(paths or []))


@policy_app.command("explain")
def explain(
    pod: Path = typer.Argument(..., help="Pod YAML or JSON."),
    namespace: Path | None = typer.Option(None, "--namespace", help="Namespace object YAML."),
    policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
    as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
) -> None:
    """Show which policies match a pod, the variables, the claim and the verdict."""
    emit(report.explain(pod, namespace, policies, as_json))


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
