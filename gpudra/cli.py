"""The `gpudra` command: one typer app; each subcommand group lives in `gpudra.commands.<name>`."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="gpudra",
    help="Right-sized, topology-aware GPU allocation with Kubernetes DRA: translate, policies, allocate, simulate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """gpudra: legacy GPU requests to right-sized DRA claims, policy tooling, allocator and simulator."""


# Each module defines `register(app: typer.Typer) -> None`.
COMMAND_MODULES = [
    "translate",
    "cel",
    "policy",
    "allocate",
    "inventory",
    "simulate",
    "sweep",
    "serve",
    "certs",
]

for _name in COMMAND_MODULES:
    try:
        _module = importlib.import_module(f"gpudra.commands.{_name}")
    except ModuleNotFoundError as exc:  # a command whose module is not written yet
        if exc.name != f"gpudra.commands.{_name}":
            raise
        continue
    _module.register(app)


def main() -> None:
    app()
