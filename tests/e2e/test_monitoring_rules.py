"""The alerts and the dashboard of manifests/monitoring with the real promtool (Debian's prometheus package): the rules
check and pass their unit cases, fail them when a threshold moves, and every series they read is one the code
exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.controlplane.binaries import MissingBinaries
from tests.controlplane.fixtures import missing_binaries

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
SERIES = re.compile(r"\bgpudra_[a-z_]+\b")
DEFINITION = re.compile(r"\b(Counter|Gauge|Histogram|Summary)\(\s*\"(gpudra_[a-z_]+)\"")
SUFFIXES = {
    "Counter": ("_total",),
    "Gauge": ("",),
    "Histogram": ("_bucket", "_sum", "_count"),
    "Summary": ("_sum", "_count"),
}


def promtool(*args: str, cwd: Path = MONITORING) -> subprocess.CompletedProcess[str]:
    path = shutil.which("promtool")
    if path is None:
        missing_binaries(MissingBinaries("promtool not installed: `apt-get install prometheus` (Debian's package)"))
    return subprocess.run([path, *args], cwd=cwd, capture_output=True, text=True, check=False)


def exported_series() -> set[str]:
    """Every series name the Python code registers (prometheus_client appends _total, _bucket, ...)."""
    names: set[str] = set()
    for path in ROOT.rglob("*.py"):
        if "tests" in path.relative_to(ROOT).parts or not path.is_file():
            continue
        for kind, name in DEFINITION.findall(path.read_text(errors="replace")):
            names.update(name + suffix for suffix in SUFFIXES[kind])
    return names


def dashboard_exprs() -> list[str]:
    dashboard = json.loads((MONITORING / "gpudra-dashboard.json").read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_the_rules_check() -> None:
    out = promtool("check", "rules", "gpudra.rules.yaml")
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_rules_pass_their_unit_cases() -> None:
    out = promtool("test", "rules", "gpudra.rules.test.yaml")
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


def test_the_unit_cases_fail_when_a_threshold_moves(tmp_path: Path) -> None:
    rules = (MONITORING / "gpudra.rules.yaml").read_text()
    moved = rules.replace(
        "(rate(gpudra_admission_review_duration_seconds_bucket[5m]))) > 4",
        "(rate(gpudra_admission_review_duration_seconds_bucket[5m]))) > 6",
    )
    assert moved != rules
    (tmp_path / "gpudra.rules.yaml").write_text(moved)
    shutil.copy(MONITORING / "gpudra.rules.test.yaml", tmp_path)
    out = promtool("test", "rules", "gpudra.rules.test.yaml", cwd=tmp_path)
    assert out.returncode != 0 and "GpudraWebhookLatencyNearDeadline" in out.stdout + out.stderr, (
        out.stdout + out.stderr
    )


def test_every_alert_has_a_unit_case() -> None:
    rules = yaml.safe_load((MONITORING / "gpudra.rules.yaml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    cases = yaml.safe_load((MONITORING / "gpudra.rules.test.yaml").read_text())
    tested = {a["alertname"] for t in cases["tests"] for a in t.get("alert_rule_test", []) if a.get("exp_alerts")}
    assert alerts == tested


@pytest.mark.parametrize("source", ["rules", "dashboard"])
def test_every_series_read_is_exported_by_the_code(source: str) -> None:
    if source == "rules":
        rules = yaml.safe_load((MONITORING / "gpudra.rules.yaml").read_text())
        text = " ".join(r["expr"] for g in rules["groups"] for r in g["rules"])
    else:
        text = " ".join(dashboard_exprs())
    read = set(SERIES.findall(text))
    exported = exported_series()
    assert read, source
    assert read <= exported, f"{source} reads series the code does not export: {sorted(read - exported)}"


def test_the_dashboard_queries_parse(tmp_path: Path) -> None:
    # promtool parses PromQL only in rule files: each panel query becomes a recording rule, with Grafana's
    # variables replaced by values.
    exprs = [e.replace("$__rate_interval", "5m").replace("$namespace", "gpudra-system") for e in dashboard_exprs()]
    rules = {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"dashboard:q{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    (tmp_path / "dashboard.rules.yaml").write_text(yaml.safe_dump(rules))
    out = promtool("check", "rules", "dashboard.rules.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    dashboard = json.loads((MONITORING / "gpudra-dashboard.json").read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) and dashboard["uid"] == "gpudra-overview"
