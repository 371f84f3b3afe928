"""`Outcome` and `emit`: the one result shape of the commands and the one place that writes it."""

from __future__ import annotations

import pytest
import typer

from gpudra.outcome import Outcome, emit
from gpudra.terminal import styled


def test_emit_writes_both_streams_as_is_and_exits_with_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as raised:
        emit(Outcome(stdout="answer\n", stderr="warning: w\n", code=1))
    assert raised.value.exit_code == 1
    assert capsys.readouterr() == ("answer\n", "warning: w\n")


def test_emit_returns_normally_on_exit_code_0(capsys: pytest.CaptureFixture[str]) -> None:
    emit(Outcome(stdout="no newline added"))
    assert capsys.readouterr() == ("no newline added", "")


def test_styled_is_what_rich_prints_off_a_terminal() -> None:
    assert styled("[red]error:[/red] bad") == "error: bad\n"
    assert styled("[red]error:[/red] a [b]", markup=False) == "[red]error:[/red] a [b]\n"


def test_cli_registers_every_command() -> None:
    from typer.main import get_command

    from gpudra.cli import app

    group = get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    names = set(group.list_commands(typer.Context(group)))
    expected = {
        "allocate",
        "cel",
        "certs",
        "doctor",
        "gc",
        "inventory",
        "migrate",
        "plan",
        "policy",
        "quota",
        "recommend",
        "serve",
        "simulate",
        "sweep",
    }
    expected.add("translate")
    assert names == expected
