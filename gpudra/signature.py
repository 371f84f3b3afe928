"""One signature per command: a command's options are one frozen dataclass whose fields are `Annotated` typer
options and arguments. `add_command` shows typer those fields as the command's parameters and calls the command with
one typed object, so each option is declared once and no function takes a parameter per option.
Its commands convert option values without pydantic where typer would import it for nothing (`gpudra.coercion`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast, get_type_hints

import typer

from .coercion import command_class
from .outcome import Outcome, emit

__all__ = ["add_command", "command_parameters"]

_Options = TypeVar("_Options")


def command_parameters(options: type[Any]) -> list[inspect.Parameter]:
    """The dataclass `options`' fields as keyword parameters, in field order, with their `Annotated` types and
    defaults (a `default_factory` called once, for typer to show); a field without a default is required."""
    hints = get_type_hints(options, include_extras=True)
    parameters = []
    for field in dataclasses.fields(options):
        default: Any = inspect.Parameter.empty
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        parameters.append(
            inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[field.name])
        )
    return parameters


def add_command(
    app: typer.Typer, name: str, run: Callable[[_Options], Outcome | None], *, help: str, **settings: Any
) -> None:
    """Register `run` (one parameter: its options dataclass) as command `name`; an `Outcome` it returns is emitted.
    `settings` go to `typer.Typer.command` (e.g. `cls`)."""
    hints = [hint for key, hint in get_type_hints(run).items() if key != "return"]
    if len(hints) != 1 or not (isinstance(hints[0], type) and dataclasses.is_dataclass(hints[0])):
        raise TypeError(f"{run.__qualname__} must take one options dataclass (got {hints})")
    options = cast("type[_Options]", hints[0])
    parameters = command_parameters(options)

    def command(**values: Any) -> None:
        outcome = run(options(**values))
        if outcome is not None:
            emit(outcome)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__name__ = command.__qualname__ = run.__name__
    command.__module__ = run.__module__
    settings["cls"] = command_class(settings.get("cls"))
    app.command(name, help=help, **settings)(command)
