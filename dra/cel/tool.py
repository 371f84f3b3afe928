"""`gpudra cel eval` behind the CLI: read the inputs, pick the environment, evaluate, render.

With a device (one ResourceSlice `spec.devices` entry, YAML or JSON) the DRA selector environment is used,
otherwise the admission one. `--json` output is `{"result": ...}` or `{"error": "..."}` (exit code 2);
the plain rendering writes values as CEL literals (`quantity("80Gi")`, `1u`, `[1, 2]`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dra.cel.device import device_value
from dra.cel.env import Environment
from dra.cel.json import from_json, to_json
from dra.cel.stdlib import format_double
from dra.cel.values import CelType, Duration, Optional, Timestamp, Uint
from dra.errors import CelError, InputError

__all__ = ["EvalOutcome", "eval_expression", "render"]

DEFAULT_DRIVER = "gpu.nvidia.com"


@dataclass(frozen=True)
class EvalOutcome:
    """What the command prints and its exit code (0 ok, 2 CEL or input error)."""

    text: str
    exit_code: int
    to_stderr: bool = False


def _parse_var(spec: str) -> tuple[str, Any]:
    name, sep, text = spec.partition("=")
    if not sep or not name.isidentifier():
        raise InputError(f"--var expects NAME=JSON, got {spec!r}")
    try:
        return name, from_json(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError(f"--var {name}: invalid JSON: {exc.msg} at column {exc.colno}", source="--var") from None


def _load_device(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read device file: {exc.strerror}", source=str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML/JSON: {exc}", source=str(path), line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise InputError("expected one device (a mapping, as in a ResourceSlice's spec.devices)", source=str(path))
    return data


def eval_expression(
    expression: str,
    *,
    device: Path | None = None,
    driver: str = DEFAULT_DRIVER,
    variables: Sequence[str] = (),
    as_json: bool = False,
) -> EvalOutcome:
    """Evaluate `expression` as `gpudra cel eval` does."""
    try:
        activation = dict(_parse_var(v) for v in variables)
        if device is not None:
            env = Environment.dra_selector(require_bool=False)
            activation["device"] = device_value(driver, _load_device(device))
        else:
            env = Environment.admission()
        extra = sorted(set(activation) - env.variables)
        if extra:
            env = env.with_variables(*extra)
        value = env.compile(expression).evaluate(activation)
    except (CelError, InputError) as exc:
        if as_json:
            return EvalOutcome(json.dumps({"error": str(exc)}), 2)
        return EvalOutcome(f"error: {exc}", 2, to_stderr=True)
    if as_json:
        return EvalOutcome(json.dumps({"result": to_json(value)}, ensure_ascii=False), 0)
    return EvalOutcome(render(value), 0)


def render(value: Any) -> str:
    """A CEL-literal rendering of a runtime value."""
    t = type(value)
    if value is None:
        return "null"
    if t is bool:
        return "true" if value else "false"
    if t is Uint:
        return f"{int(value)}u"
    if t is int:
        return str(value)
    if t is float:
        text = format_double(value)
        return text if any(c in text for c in ".eIN") else text + ".0"
    if t is str:
        return json.dumps(value, ensure_ascii=False)
    if t is bytes:
        return "b" + json.dumps(value.decode("latin-1"))
    if t is list:
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
    if t is Optional:
        return f"optional.of({render(value.value())})" if value.has_value() else "optional.none()"
    if t is CelType:
        return str(value.name)
    if t is Duration or t is Timestamp:
        return f"{'duration' if t is Duration else 'timestamp'}({json.dumps(str(value))})"
    name = str(getattr(t, "cel_type_name", t.__name__)).rsplit(".", 1)[-1].lower()
    return f"{name}({json.dumps(str(value))})"
