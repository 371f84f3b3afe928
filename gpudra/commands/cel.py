"""`gpudra cel eval`: evaluate one CEL expression in the admission or the DRA selector environment."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    cel_app = typer.Typer(help="Kubernetes CEL: evaluate expressions as the API server and the DRA allocator do.")
    app.add_typer(cel_app, name="cel")

    @cel_app.command("eval")
    def eval_(
        expression: str = typer.Argument(..., help="The CEL expression."),
        device: Path | None = typer.Option(
            None, "--device", help="One ResourceSlice device (YAML/JSON); selects the DRA selector environment."
        ),
        driver: str = typer.Option("gpu.nvidia.com", "--driver", help="The slice's driver (the device's domain)."),
        var: list[str] = typer.Option([], "--var", help="NAME=JSON activation variable (repeatable)."),
        as_json: bool = typer.Option(False, "--json", help='Print {"result": ...} or {"error": ...}.'),
    ) -> None:
        """Evaluate EXPR; exit code 2 on a compile, runtime or input error."""
        from dra.cel.tool import eval_expression

        outcome = eval_expression(expression, device=device, driver=driver, variables=var, as_json=as_json)
        typer.echo(outcome.text, err=outcome.to_stderr)
        if outcome.exit_code:
            raise typer.Exit(outcome.exit_code)
