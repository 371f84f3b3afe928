"""`gpudra.coercion`: option values converted without pydantic are the values typer's own conversion gives."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer import main as typer_main
from typer._click.core import Context
from typer._coercion import build_runtime_param

from gpudra.cli import build_app

SAMPLES: dict[Any, list[Any]] = {
    str: ["x", "", " spaced ", "-"],
    bool: [True, False],
    Path: ["a/b/", "", "-", "~x", "/tmp", Path("p")],
    list[str]: [("a", "b"), (), ["c"]],
    list[Path]: [("a", "b/"), (), ["/tmp"]],
}


def _params() -> Iterator[tuple[str, Any]]:
    def walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")
        for param in command.get_params(Context(command)):  # `--help` too: click makes it per context
            yield f"{path} {param.name}", param

    yield from walk(typer_main.get_command(build_app()), "gpudra")


def test_every_str_path_and_bool_value_converts_as_typer_converts_it() -> None:
    compared = 0
    for where, param in _params():
        descriptor = param.type_descriptor
        ctx = None
        plain = param.get_runtime_param()
        assert type(plain).__name__ == "PlainRuntimeParam", where
        for value in SAMPLES.get(descriptor.annotation, []):
            ours = plain._coerce_value(value, param=param, ctx=ctx)
            theirs = build_runtime_param(descriptor)._coerce_value(value, param=param, ctx=ctx)
            assert (ours, type(ours)) == (theirs, type(theirs)), (where, value)
            compared += 1
    assert compared > 100


def test_other_values_go_through_typers_own_conversion() -> None:
    params = dict(_params())
    jobs = params["gpudra translate jobs"]  # an int with min=1: typer's message
    assert jobs.get_runtime_param()._coerce_value("3", param=jobs, ctx=None) == 3
    with pytest.raises(Exception, match="greater than or equal to 1"):
        jobs.get_runtime_param()._coerce_value("0", param=jobs, ctx=None)


def test_a_bad_int_is_refused_with_typers_message() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpudra", "translate", "x.yaml", "--jobs", "zero"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "Invalid value for '--jobs'" in done.stderr
