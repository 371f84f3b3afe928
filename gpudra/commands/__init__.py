"""CLI subcommands; each module registers its commands on the main typer app and only wires calls."""
