"""Option values that several commands share, checked in one place: output format, MIG mode, allocator mode,
strategy lists and `--var NAME=JSON`. Each check returns the typed value or raises `OptionError`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer

from dra.cel import from_json
from dra.errors import InputError

if TYPE_CHECKING:  # the type only: dra.gpus brings the Kubernetes object model, which `gpudra cel` never needs
    from dra.gpus import MigMode

# The Namespace a command's pods are decided in, shared by `translate` and `policy explain`.
NamespaceFileOption = Annotated[
    Path | None,
    typer.Option("--namespace-file", help="A file holding the Namespace object the pods are decided in (YAML)."),
]
DeprecatedNamespaceOption = Annotated[
    Path | None, typer.Option("--namespace", hidden=True, help="Deprecated spelling of --namespace-file.")
]

__all__ = [
    "ALLOCATOR_MODES",
    "MIG_MODES",
    "OUTPUT_FORMATS",
    "AllocatorMode",
    "OptionError",
    "OutputFormat",
    "activation_variable",
    "allocator_mode",
    "deprecated_alias",
    "mig_mode",
    "one_of",
    "output_format",
    "strategy_names",
]

OutputFormat = Literal["yaml", "json"]
AllocatorMode = Literal["upstream", "scored"]

OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("yaml", "json")
MIG_MODES: tuple[MigMode, ...] = ("dynamic", "static", "none")
ALLOCATOR_MODES: tuple[AllocatorMode, ...] = ("upstream", "scored")

_Choice = TypeVar("_Choice", bound=str)
_Value = TypeVar("_Value")


class OptionError(ValueError):
    """An option value the command cannot use; `expected` says what it takes, for messages in other shapes."""

    def __init__(self, message: str, *, expected: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.expected = expected


def _alternatives(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]


def one_of(value: str, choices: tuple[_Choice, ...], option: str) -> _Choice:
    """`value` when it is one of `choices`, else `OptionError("<option> must be a, b or c (got 'v')")`."""
    for choice in choices:
        if value == choice:
            return choice
    expected = _alternatives(choices)
    raise OptionError(f"{option} must be {expected} (got {value!r})", expected=expected)


def output_format(value: str, option: str = "-o") -> OutputFormat:
    """`-o yaml|json`."""
    return one_of(value, OUTPUT_FORMATS, option)


def mig_mode(value: str, option: str = "--mig-mode") -> MigMode:
    """`--mig-mode dynamic|static|none`."""
    return one_of(value, MIG_MODES, option)


def allocator_mode(value: str, option: str = "--mode") -> AllocatorMode:
    """The structured allocator's mode: `upstream` (exactly as kube-scheduler) or `scored`."""
    return one_of(value, ALLOCATOR_MODES, option)


def strategy_names(text: str | None, known: tuple[str, ...], default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated strategy list (blanks ignored), `default` when not given; unknown names are an error."""
    names = tuple(s.strip() for s in text.split(",") if s.strip()) if text else default
    unknown = [n for n in names if n not in known]
    if unknown:
        raise OptionError(f"unknown strategies {unknown}; known: {', '.join(known)}", expected=", ".join(known))
    return names


def activation_variable(spec: str) -> tuple[str, Any]:
    """`--var NAME=JSON` as (name, CEL value); an `InputError` (reported like a CEL error) when malformed."""
    name, sep, text = spec.partition("=")
    if not sep or not name.isidentifier():
        raise InputError(f"--var expects NAME=JSON, got {spec!r}")
    try:
        return name, from_json(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError(f"--var {name}: invalid JSON: {exc.msg} at column {exc.colno}", source="--var") from None


def deprecated_alias(
    value: _Value | None, old_value: _Value | None, option: str, old_option: str
) -> tuple[_Value | None, str]:
    """The value of `option` or of its deprecated spelling `old_option`, and the `warning: ...` line the old spelling
    earns ("" otherwise); `OptionError` when both are given."""
    if old_value is None:
        return value, ""
    if value is not None:
        raise OptionError(f"{old_option} is the deprecated spelling of {option}: give one of them", expected=option)
    return old_value, f"warning: {old_option} is deprecated and will be removed: use {option}\n"
