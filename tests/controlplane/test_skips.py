"""Without the binaries, a test that needs them skips, naming what is missing and the command that builds them (and
fails under GPUDRA_REQUIRE_BINARIES=1, as CI runs after build.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controlplane import binaries
from tests.controlplane.fixtures import REQUIRE_BINARIES
from tests.prometheus.fixtures import require_binaries

NEEDS_BINARIES = """
import pytest

from tests.controlplane import binaries, packaging_tools

pytest_plugins = ["tests.controlplane.fixtures"]
pytestmark = pytest.mark.e2e


def test_with_a_control_plane(control_plane):
    raise AssertionError("never reached")


def test_with_the_upstream_allocator(dra_allocate_oracle):
    raise AssertionError("never reached")


def test_calling_kubectl():
    binaries.require("components")["kubectl"]
    raise AssertionError("never reached")


def test_calling_helm():
    packaging_tools.require("helm")
    raise AssertionError("never reached")
"""
# Outside e2e and oracle tests a MissingBinaries is the code under test failing (simulator.verify raises it too).
UNMARKED = """
from tests.controlplane import binaries


def test_not_marked_fails():
    binaries.require("components")
"""


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The binary lookup pointed at an empty cache directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.delenv(REQUIRE_BINARIES, raising=False)
    return binaries.bin_dir()


def _run(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeini("[pytest]\nmarkers =\n    e2e: needs the control plane\n")
    pytester.makepyfile(test_needs_binaries=NEEDS_BINARIES, test_unmarked=UNMARKED)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "error", "--strict-markers")


def _skip_reasons(pytester: pytest.Pytester) -> dict[str, str]:
    result = _run(pytester)
    reports = result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    assert [r.nodeid for r in reports if r.failed] == ["test_unmarked.py::test_not_marked_fails"]
    reasons = {}
    for report in reports:
        if report.skipped:
            assert isinstance(report.longrepr, tuple)
            reasons[report.nodeid.rsplit("::", 1)[1]] = str(report.longrepr[2])
    return reasons


def test_tests_skip_naming_the_missing_binary_and_the_build_command(
    pytester: pytest.Pytester, empty_cache: Path
) -> None:
    reasons = _skip_reasons(pytester)
    assert set(reasons) == {
        "test_with_a_control_plane",
        "test_with_the_upstream_allocator",
        "test_calling_kubectl",
        "test_calling_helm",
    }
    for test in ("test_with_a_control_plane", "test_calling_kubectl"):
        assert reasons[test].startswith("Skipped: etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
    assert reasons["test_with_the_upstream_allocator"].startswith("Skipped: dra-allocate, k8s-cel not found")
    assert reasons["test_calling_helm"].startswith("Skipped: helm not found")
    for reason in reasons.values():
        assert f"not found in {empty_cache}" in reason and "`bash tests/controlplane/build.sh`" in reason


def test_ci_fails_them_instead(pytester: pytest.Pytester, empty_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_BINARIES, "1")
    result = _run(pytester)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 3 and outcomes.get("errors", 0) == 2 and "skipped" not in outcomes, outcomes
    result.stdout.fnmatch_lines(["*kube-apiserver*not found in*bash tests/controlplane/build.sh*"])


def test_prometheus_and_promtool_are_named_with_their_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: neither is found
    monkeypatch.delenv(REQUIRE_BINARIES, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"^prometheus, promtool not installed: `apt-get install prom"):
        require_binaries()
