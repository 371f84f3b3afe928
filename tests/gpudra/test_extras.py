"""Optional extras are named before the work starts: what to install, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpudra.extras import missing_extra

ROOT = Path(__file__).resolve().parents[2]


def test_an_installed_module_needs_nothing() -> None:
    assert missing_extra("json", "report", "--report") is None


def test_a_missing_module_says_which_extra_to_install() -> None:
    message = missing_extra("gpudra_no_such_module", "report", "--report")
    assert message == "--report needs gpudra_no_such_module, which is not installed: pip install 'gpudra[report]'"


def test_simulate_report_without_matplotlib_exits_2_before_simulating(tmp_path: Path) -> None:
    # sys.modules[name] = None is how Python marks a module as not importable: an install without `report`.
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['matplotlib'] = None\n")
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "gpudra", "simulate", "--report", str(tmp_path / "report")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 2, out.stderr
    assert "pip install 'gpudra[report]'" in " ".join(out.stderr.split())  # rich wraps at 80 columns
    assert not (tmp_path / "report").exists()
