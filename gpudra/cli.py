"""The `gpudra` command: one typer app; each subcommand group lives in `gpudra.commands.<name>`.

A command's module imports what it needs (the allocator, the simulator, the web server, ...), so `app_for_argv`
(what `gpudra.entry.main`, the console script, runs) registers only the command being run: `gpudra cel eval 1` never
pays for the simulator's imports. `app` (what tests and `gpudra --help` use) has every command.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer

from .coercion import command_group

# Command name -> (module in gpudra.commands, the line `gpudra --help` lists), in the order `gpudra --help` lists
# them; tests/cli check each line against the command's own help.
COMMANDS: dict[str, tuple[str, str]] = {
    "translate": (
        "translate",
        "Print the objects with their pod templates rewritten to DRA and the ResourceClaimTemplates they need.",
    ),
    "allocate": ("allocate", 'Print {"allocation": ...} or {"unsatisfiable": reason} (exit 1).'),
    "inventory": (
        "inventory",
        "Print this node's ResourceSlices; --capture writes a snapshot, --from reads one, --catalog invents one.",
    ),
    "simulate": ("simulate", "Compare placement strategies; with no arguments: the built-in cluster and workload."),
    "sweep": ("sweep", "Run every grid point; writes results.csv, results.json and index.html to the config's output."),
    "plan": ("plan", "Smallest cluster of candidate pools meeting a target, per strategy: nodes, GPUs, cost, power."),
    "serve": ("serve", "Serve /mutate, /validate, /healthz, /readyz and /metrics."),
    "certs": (
        "certs",
        "Write a CA and a serving certificate with the Service DNS names as SANs; print the base64 caBundle.",
    ),
    "gc": ("gc", "Delete gpudra's ResourceClaimTemplates that no pod uses; print what went as JSON."),
    "quota": (
        "quota",
        "Create, update or delete the gpudra-gpu-cap ResourceQuota of each namespace from its gpudra.io/max-gpus "
        "label; print what changed as JSON.",
    ),
    "doctor": (
        "doctor",
        "Say which of gpudra's protections the cluster has, and how to turn on the ones that are off.",
    ),
    "recommend": ("recommend", "Recommend VRAM per GPU workload from observed use; write GPUSizingRecommendations."),
    "cel": ("cel", "Kubernetes CEL: evaluate expressions as the API server and the DRA allocator do."),
    "policy": ("policy", "Lint, test and explain GPUClaimPolicy files."),
    "migrate": (
        "migrate",
        "Print the DeviceClasses and shared-gpu params that keep the device plugin's resource names working.",
    ),
}


def _print_version(value: bool) -> None:
    if value:
        from gpudra import __version__

        sys.stdout.write(f"gpudra {__version__}\n")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print gpudra's version and exit.")
    ] = False,
) -> None:
    """gpudra: legacy GPU requests to right-sized DRA claims, policy tooling, allocator and simulator."""


def _bare_app() -> typer.Typer:
    built = command_group(
        name="gpudra",
        help="Right-sized, topology-aware GPU allocation with Kubernetes DRA: translate, policies, allocate, simulate.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    built.callback()(_root)
    return built


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with command `only` alone."""
    built = _bare_app()
    for name, (module, _) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"gpudra.commands.{module}").register(built)
    return built


def _listed() -> None:  # pragma: no cover - the directory only lists: a named command runs its real app
    raise AssertionError("a listed command ran in place of its module's")


def directory_app() -> typer.Typer:
    """The app `gpudra`, `gpudra --help` and an unknown command get: every command listed by its line, none of their
    modules imported (listing them all would import the simulator, the web server, ...)."""
    built = _bare_app()
    for name, (_, summary) in COMMANDS.items():
        built.command(name, help=summary)(_listed)
    return built


def __getattr__(name: str) -> Any:
    if name == "app":  # built on first use and kept: importing gpudra.cli stays cheap
        built = globals()["app"] = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def app_for_argv() -> typer.Typer:
    """The app that runs the command line `sys.argv` names: that command alone, or the directory."""
    command = sys.argv[1] if len(sys.argv) > 1 else None
    return build_app(command) if command in COMMANDS else directory_app()
