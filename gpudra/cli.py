"""The `gpudra` command: one typer app; each subcommand group lives in `gpudra.commands.<name>`."""

from __future__ import annotations

import typer

from gpudra.commands import (
    allocate,
    cel,
    certs,
    gc,
    inventory,
    policy,
    quota,
    recommend,
    serve,
    simulate,
    sweep,
    translate,
)

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


# Registration order is the order `gpudra --help` lists the commands in.
translate.register(app)
cel.register(app)
policy.register(app)
allocate.register(app)
inventory.register(app)
simulate.register(app)
sweep.register(app)
serve.register(app)
certs.register(app)
gc.register(app)
quota.register(app)
recommend.register(app)


def main() -> None:
    """Run the command line."""
    app()
