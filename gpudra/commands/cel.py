"""`gpudra cel eval`: evaluate one CEL expression in the admission or the DRA selector environment.

With `--device` (one ResourceSlice `spec.devices` entry, YAML or JSON) the DRA selector environment is used,
otherwise the admission one. `--json` prints `{"result": ...}` or `{"error": "..."}`; exit code 2 on any error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from dra.cel import Environment, device_value, to_json
from dra.errors import CelError, InputError

from ..coercion import command_group
from ..options import activation_variable
from ..outcome import Outcome
from ..render.cel import cel_literal
from ..signature import add_command

DEFAULT_DRIVER = "gpu.nvidia.com"
EXIT_ERROR = 2


def _load_device(path: Path) -> Any:
    from dra.documents import load_documents  # the Kubernetes object model: only with --device

    documents = load_documents(path)
    if len(documents) != 1:
        raise InputError(f"expected one device, found {len(documents)} documents", source=str(path))
    return documents[0]


def _evaluate(expression: str, device: Path | None, driver: str, variables: Sequence[str]) -> Any:
    activation = dict(activation_variable(v) for v in variables)
    if device is not None:
        env = Environment.dra_selector(require_bool=False)
        activation["device"] = device_value(driver, _load_device(device))
    else:
        env = Environment.admission()
    extra = sorted(set(activation) - env.variables)
    if extra:
        env = env.with_variables(*extra)
    return env.compile(expression).evaluate(activation)


def evaluate(
    expression: str,
    *,
    device: Path | None = None,
    driver: str = DEFAULT_DRIVER,
    variables: Sequence[str] = (),
    as_json: bool = False,
) -> Outcome:
    """The value as a CEL literal (or `{"result": ...}`); a compile, runtime or input error exits 2."""
    try:
        value = _evaluate(expression, device, driver, variables)
    except (CelError, InputError) as exc:
        if as_json:
            return Outcome(stdout=json.dumps({"error": str(exc)}) + "\n", code=EXIT_ERROR)
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_ERROR)
    if as_json:
        return Outcome(stdout=json.dumps({"result": to_json(value)}, ensure_ascii=False) + "\n")
    return Outcome(stdout=cel_literal(value) + "\n")


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """`gpudra cel eval`'s options as typer shows them (the command's one signature)."""

    expression: Annotated[str, typer.Argument(help="The CEL expression.")]
    device: Annotated[
        Path | None,
        typer.Option("--device", help="One ResourceSlice device (YAML/JSON); selects the DRA selector environment."),
    ] = None
    driver: Annotated[str, typer.Option("--driver", help="The slice's driver (the device's domain).")] = DEFAULT_DRIVER
    var: Annotated[list[str], typer.Option("--var", help="NAME=JSON activation variable (repeatable).")] = field(
        default_factory=list
    )
    as_json: Annotated[bool, typer.Option("--json", help='Print {"result": ...} or {"error": ...}.')] = False


def eval_command(options: EvalOptions) -> Outcome:
    """`evaluate` with the command's options."""
    o = options
    return evaluate(o.expression, device=o.device, driver=o.driver, variables=o.var, as_json=o.as_json)


def register(app: typer.Typer) -> None:
    cel_app = command_group(help="Kubernetes CEL: evaluate expressions as the API server and the DRA allocator do.")
    app.add_typer(cel_app, name="cel")
    add_command(cel_app, "eval", eval_command, help="Evaluate EXPR; exit code 2 on a compile, runtime or input error.")
