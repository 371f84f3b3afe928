"""`gpudra.signature`: a command's options dataclass is its typer signature, and the command gets one typed object."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from gpudra.outcome import Outcome
from gpudra.signature import add_command, command_parameters

SEEN: list[object] = []


@dataclass(frozen=True, slots=True)
class _Options:
    path: Annotated[Path, typer.Argument(help="A file.")]
    count: Annotated[int, typer.Option("--count", "-c", min=1, help="How many.")] = 2
    tags: Annotated[list[str], typer.Option("--tag", help="Repeatable.")] = field(default_factory=list)
    loud: Annotated[bool, typer.Option("--loud/--quiet", help="Say it loud.")] = False


def _run(options: _Options) -> Outcome:
    SEEN.append(options)
    return Outcome(
        stdout=f"{options.path.name} x{options.count} {','.join(options.tags)}\n", code=3 if options.loud else 0
    )


def _app() -> typer.Typer:
    app = typer.Typer()
    add_command(app, "demo", _run, help="A demo command.")
    app.command("other")(lambda: None)  # two commands: typer keeps the subcommand name
    return app


def test_fields_become_the_commands_parameters_in_order() -> None:
    params = command_parameters(_Options)
    assert [p.name for p in params] == ["path", "count", "tags", "loud"]
    assert params[0].default is params[0].empty and params[1].default == 2 and params[2].default == []


def test_the_command_gets_one_typed_object_and_its_outcome_is_emitted() -> None:
    SEEN.clear()
    result = CliRunner().invoke(_app(), ["demo", "pods.yaml", "-c", "4", "--tag", "a", "--tag", "b"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "pods.yaml x4 a,b\n"
    assert SEEN == [_Options(Path("pods.yaml"), 4, ["a", "b"], False)]
    loud = CliRunner().invoke(_app(), ["demo", "x", "--loud"])
    assert loud.exit_code == 3 and loud.stdout == "x x2 \n"


def test_help_and_checks_come_from_the_annotations() -> None:
    shown = CliRunner().invoke(_app(), ["demo", "--help"], terminal_width=120).output
    assert "A demo command." in shown and "How many." in shown and "--loud" in shown and "--quiet" in shown
    refused = CliRunner().invoke(_app(), ["demo", "x", "--count", "0"])
    assert refused.exit_code == 2 and "Invalid value for '--count'" in refused.output


def test_a_function_without_one_options_dataclass_is_refused() -> None:
    def plain(count: int) -> None:
        return None

    with pytest.raises(TypeError, match="must take one options dataclass"):
        add_command(typer.Typer(), "bad", plain, help="")
