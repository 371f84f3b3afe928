"""The console script's entry (`gpudra.entry`, issue 41): the command line runs as before, with its start-up heap
frozen and the cyclic collector back on for the command itself."""

from __future__ import annotations

import gc
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import gpudra.cli
from gpudra import entry

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import atexit, gc, sys
{before}
def report():
    sys.stderr.write(f"collector={{gc.isenabled()}} frozen={{gc.get_freeze_count()}}\\n")
atexit.register(report)
sys.argv = ["gpudra", "cel", "eval", "1 + 1"]
from gpudra.entry import main
main()
"""


def _probe(before: str = "") -> tuple[str, bool, int]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(before=before)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    line = done.stderr.strip().splitlines()[-1]
    collector, frozen = (part.split("=", 1)[1] for part in line.split())
    return done.stdout, collector == "True", int(frozen)


def test_the_command_runs_with_the_collector_on_and_its_start_up_heap_frozen() -> None:
    stdout, collector, frozen = _probe()
    assert stdout == "2\n"
    assert collector
    # typer, the CEL library and the command's module: tens of thousands of objects set aside
    assert frozen > 10_000


def test_a_process_that_turned_the_collector_off_keeps_it_off() -> None:
    stdout, collector, _frozen = _probe("gc.disable()")
    assert stdout == "2\n"
    assert not collector


def test_the_collector_comes_back_on_when_the_command_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise ImportError("a half-installed command module")

    monkeypatch.setattr(gpudra.cli, "app_for_argv", broken)
    assert gc.isenabled()
    try:
        with pytest.raises(ImportError, match="half-installed"):
            entry.main()
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_the_console_script_and_python_dash_m_both_run_through_the_entry() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["gpudra"] == "gpudra.entry:main"
    done = subprocess.run(
        [sys.executable, "-m", "gpudra", "cel", "eval", "'a' + 'b'"], capture_output=True, text=True, cwd=ROOT
    )
    assert (done.returncode, done.stdout) == (0, '"ab"\n')
