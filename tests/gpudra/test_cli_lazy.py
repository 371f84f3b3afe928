"""Issue 27: a short command imports only what it needs (the ratio itself is measured by benchmarks/cli_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from typer import main as typer_main
from typer.testing import CliRunner

HEAVY = ("numpy", "kubernetes", "fastapi", "uvicorn", "matplotlib", "dra.model", "policyengine", "simulator", "webhook")

_PROBE = """
import io, json, sys, contextlib
sys.argv = ["gpudra", *json.loads(sys.argv[1])]
from gpudra.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"stdout": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(args))], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert isinstance(result, dict)
    return result


def _loaded(result: dict[str, object], prefix: str) -> bool:
    modules = result["modules"]
    assert isinstance(modules, list)
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def test_cel_eval_imports_none_of_the_heavy_parts() -> None:
    result = _run("cel", "eval", "1 + 1")
    assert result["stdout"] == "2\n"
    assert [m for m in HEAVY if _loaded(result, m)] == []


def test_importing_the_cli_registers_nothing_until_asked() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, gpudra.cli; print(sorted(m for m in sys.modules if m.startswith('gpudra.commands.')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_the_full_app_still_lists_every_command() -> None:
    from gpudra.cli import COMMANDS, app

    shown = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert all(name in shown for name in COMMANDS)


def test_help_lists_every_command_with_its_own_line_and_imports_none() -> None:
    from gpudra.cli import COMMANDS, app

    result = _run("--help")
    assert not _loaded(result, "gpudra.commands")
    assert [m for m in HEAVY if _loaded(result, m)] == []
    real = {command.name: command for command in typer_main.get_command(app).commands.values()}  # type: ignore[attr-defined]
    for name, (_, line) in COMMANDS.items():
        assert real[name].get_short_help_str(limit=1000) == line, name
        assert name in str(result["stdout"])


def test_an_unknown_command_is_refused_with_a_suggestion() -> None:
    from gpudra.cli import directory_app

    done = CliRunner().invoke(directory_app(), ["tranlate"])
    assert done.exit_code == 2
    assert "translate" in done.output
