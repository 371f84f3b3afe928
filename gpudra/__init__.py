"""The gpudra command line: thin typer commands over dra, webhook and simulator."""

__version__ = "0.1.0"
