"""The `gpudra` command: one typer app; each subcommand group lives in `gpudra.commands.<name>`.

A command's module imports what it needs (the allocator, the simulator, the web server, ...), so `main` registers
only the command being run: `gpudra cel eval 1` never pays for the simulator's imports. `app` (what tests and
`gpudra --help` use) has every command.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

# Command name -> module in gpudra.commands, in the order `gpudra --help` lists them.
COMMANDS: dict[str, str] = {
    "translate": "translate",
    "cel": "cel",
    "policy": "policy",
    "allocate": "allocate",
    "inventory": "inventory",
    "simulate": "simulate",
    "sweep": "sweep",
    "serve": "serve",
    "certs": "certs",
    "gc": "gc",
    "quota": "quota",
    "recommend": "recommend",
}


def _root() -> None:
    """gpudra: legacy GPU requests to right-sized DRA claims, policy tooling, allocator and simulator."""


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with command `only` alone."""
    built = typer.Typer(
        name="gpudra",
        help="Right-sized, topology-aware GPU allocation with Kubernetes DRA: translate, policies, allocate, simulate.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    built.callback()(_root)
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"gpudra.commands.{module}").register(built)
    return built


def __getattr__(name: str) -> Any:
    if name == "app":  # built on first use and kept: importing gpudra.cli stays cheap
        built = globals()["app"] = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Run the command line."""
    command = sys.argv[1] if len(sys.argv) > 1 else None
    build_app(command if command in COMMANDS else None)()
