"""Issues 27 and 41: a short command imports only what it needs (the ratio itself is measured by
benchmarks/cli_startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer import main as typer_main
from typer.testing import CliRunner

# pydantic: typer (0.2x) would import it to convert any option value (`gpudra.coercion` converts them without it)
HEAVY = (
    "numpy", "kubernetes", "fastapi", "uvicorn", "matplotlib", "pydantic", "dra.model", "policyengine", "simulator",
    "webhook",
)  # fmt: skip
# What `gpudra translate` of one pod needs neither, once the user cache holds its policies, parse trees and the
# catalog's verdict on its claim: the document models, the catalog's shapes and the allocator, the CEL parser;
# nor what only `gpudra policy lint|test|explain` use (policy tests, the scheduler-path check).
TRANSLATE_HEAVY = (
    "numpy", "kubernetes", "fastapi", "uvicorn", "matplotlib", "pydantic", "dra.shapes", "dra.allocator", "lark",
    "simulator", "webhook", "gpudra.commands.policy", "policyengine.testing", "policyengine.scheduler_path",
)  # fmt: skip
POD = Path(__file__).resolve().parents[2] / "examples" / "pod-legacy-vram.yaml"

_PROBE = """
import io, json, sys, contextlib
sys.argv = ["gpudra", *json.loads(sys.argv[1])]
from gpudra.entry import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"stdout": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run(*args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(args))], capture_output=True, text=True, env=env
    )
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


def test_translate_of_one_pod_from_a_warm_user_cache_imports_none_of_the_heavy_parts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GPUDRA_NO_PARSER_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    first = _run("translate", str(POD), env=env)
    warm = _run("translate", str(POD), env=env)
    assert warm["stdout"] == first["stdout"] and "kind: ResourceClaimTemplate" in str(warm["stdout"])
    assert [m for m in TRANSLATE_HEAVY if _loaded(warm, m)] == []


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
