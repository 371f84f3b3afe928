"""rich on the terminal: text rendered exactly as a console would print it, and the progress bar of long runs.

`styled` returns what `Console().print` would write (the terminal's width and colours, markup applied), so a
command can put rich output in an `Outcome` instead of printing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when something is drawn: a short command that prints plain text never pays
    from rich.console import Console
    from rich.progress import Progress

__all__ = ["progress_bar", "styled"]


def styled(renderable: Any, *, stderr: bool = False, markup: bool | None = None, highlight: bool | None = None) -> str:
    """The text `Console(stderr=stderr).print(renderable, markup=..., highlight=...)` would write."""
    from rich.console import Console

    console = Console(stderr=stderr)
    with console.capture() as captured:
        console.print(renderable, markup=markup, highlight=highlight)
    return captured.get()


def progress_bar(description: str, console: Console) -> Progress:
    """A transient bar on `console` (description, bar, done/total, elapsed); silent when it is not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(description),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
