"""Option values converted without pydantic: typer (0.2x) converts every parameter's value through a pydantic
`TypeAdapter`, even a `str` it already has, a flag's `bool` or an absent `--help`, and so imports pydantic (~70 ms of
CPU, a third of a short `gpudra` call). gpudra's commands and groups convert `str`, `Path` and `bool` values (and
lists of them) exactly as typer does, without it; any other value given (an int, a float) goes through typer's own
conversion. Typer's hook for this is private (`typer._coercion`): with a typer that has none, its own conversion runs.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any, cast, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["command_class", "command_group"]


_TYPERS = object()  # a value only typer's own conversion takes


def _plain(item: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """`value` converted to `item` as typer converts it, or `_TYPERS`."""
    if item is str and isinstance(value, str):  # typer: str(value)
        return value
    if item is bool and isinstance(value, bool):
        return value
    if item is Path and info.path_type is None and isinstance(value, str | Path):
        from typer._param_types import coerce_cli_path  # typer's checks (exists, dir_okay, ...) and messages

        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
    return _TYPERS


@cache
def _plain_runtime_param() -> type[Any] | None:
    """A typer `RuntimeParam` that converts `str`, `bool` and `Path` values without pydantic and hands any other
    value to typer's own conversion (built only then); None where this typer has no such hook."""
    try:
        from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    except ImportError:  # pragma: no cover - another typer: its own conversion throughout
        return None

    @dataclasses.dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            annotation: Any = self.annotation
            info = self.parameter_info
            many = get_origin(annotation) is list
            item = get_args(annotation)[0] if many else annotation
            values = list(value) if many and isinstance(value, list | tuple) else [value]
            if info.parser is None and self.descriptor.file_annotation is None:
                plain = [_plain(item, info, v, param, ctx) for v in values]
                if all(v is not _TYPERS for v in plain):
                    return plain if many else plain[0]
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    return PlainRuntimeParam


def _plain_values(params: list[Any]) -> None:
    """Give each typer parameter of `params` the conversion of `_plain_runtime_param`."""
    plain = _plain_runtime_param()
    if plain is None:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is not None and getattr(param, "_runtime_param", False) is None:
            param._runtime_param = plain(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation, descriptor=descriptor
            )


class _PlainValues:
    """Mixed into a typer command or group class: its parameters (`--help` included, which click makes per context)
    convert `str`, `Path` and `bool` values without pydantic."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        _plain_values(params)
        return params


@cache
def _with_plain_values(cls: type[Any]) -> type[Any]:
    return type(f"Plain{cls.__name__}", (_PlainValues, cls), {})


def command_class(cls: type[TyperCommand] | None = None) -> type[TyperCommand]:
    """`cls` (typer's command class by default) with its parameters converting values without pydantic: the `cls` of
    every command `gpudra.signature.add_command` registers."""
    return cast("type[TyperCommand]", _with_plain_values(cls or TyperCommand))


def command_group(**settings: Any) -> typer.Typer:
    """A `typer.Typer` (`settings` as its own) whose group converts its values (`--help`, `--version`) without
    pydantic too: the root app and every sub-app of commands."""
    return typer.Typer(cls=_with_plain_values(TyperGroup), **settings)
