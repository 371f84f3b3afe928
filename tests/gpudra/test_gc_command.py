"""`gpudra gc`: option checks made before the API server is asked anything."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app


def test_the_cli_refuses_a_short_idle_bound_before_touching_the_api_server(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["gc", "--kubeconfig", str(tmp_path / "absent"), "--min-idle", "30"])
    assert result.exit_code == 2
    assert "--min-idle: min_idle must be at least 90 s (got 30 s)" in result.output


def test_watch_and_dry_run_do_not_go_together(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["gc", "--kubeconfig", str(tmp_path / "absent"), "--watch", "--dry-run"])
    assert result.exit_code == 2
    assert "--watch and --dry-run do not go together" in result.output
