"""pytest plugin (loaded by tests/conftest.py): the real control plane and the Go oracles as fixtures.

Nothing starts unless a test asks for a fixture. A test that meets missing or stale binaries (a fixture or its own
call raising `MissingBinaries`) is skipped with the message, which names them and the command that builds them;
with GPUDRA_REQUIRE_BINARIES=1 (CI, after build.sh) it fails instead. Fixture API: tests/controlplane/README.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from typing import Any, NoReturn

import pytest

from tests.controlplane import binaries
from tests.controlplane.cluster import ControlPlane, ControlPlaneError
from tests.controlplane.kube import Kube
from tests.oracle import runner

_RUNNING: list[ControlPlane] = []
# Set by .ci/run after build.sh: there a missing binary is a broken build, not a machine without Go.
REQUIRE_BINARIES = "GPUDRA_REQUIRE_BINARIES"


def missing_binaries(error: binaries.MissingBinaries) -> NoReturn:
    """Skips the running test with `error`'s message (what is missing, and `bash tests/controlplane/build.sh`), or
    fails it when GPUDRA_REQUIRE_BINARIES=1."""
    if os.environ.get(REQUIRE_BINARIES) == "1":
        pytest.fail(str(error), pytrace=False)
    pytest.skip(str(error))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """A fixture that meets missing binaries skips the test (see `missing_binaries`)."""
    try:
        return (yield)
    except binaries.MissingBinaries as e:
        missing_binaries(e)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A test body that meets missing binaries (e.g. `binaries.require("components")` for kubectl) skips."""
    try:
        return (yield)
    except binaries.MissingBinaries as e:
        missing_binaries(e)


def start_control_plane() -> ControlPlane:
    """A fresh control plane; raises `MissingBinaries` (the test skips, see `missing_binaries`) or fails the test with
    why it did not start."""
    problem = None
    try:
        return ControlPlane.start()
    except ControlPlaneError as e:
        problem = f"control plane did not start: {e}"
    pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler with DRA on, for the whole session."""
    cp = start_control_plane()
    _RUNNING.append(cp)
    try:
        yield cp
    finally:
        _RUNNING.remove(cp)
        cp.stop()


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Kube:
    """A JSON REST client (plain dicts) for the control plane, as cluster admin."""
    return Kube(control_plane.api_client())


@pytest.fixture
def k8s_namespace(kube: Kube) -> Iterator[str]:
    """A fresh namespace (with its default ServiceAccount ready), deleted after the test."""
    name = kube.create_namespace()
    yield name
    kube.delete("Namespace", name)


def _oracle(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    binaries.require("oracles")  # MissingBinaries: the test skips (see `missing_binaries`)
    return fn


@pytest.fixture(scope="session")
def dra_allocate_oracle() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """`dra_allocate_oracle(input_dict) -> output_dict` running the upstream structured allocator."""
    return _oracle(runner.dra_allocate)


@pytest.fixture(scope="session")
def k8s_cel_oracle() -> Callable[[list[dict[str, Any]] | dict[str, Any]], list[dict[str, Any]]]:
    """`k8s_cel_oracle(cases) -> results` running the upstream Kubernetes CEL environments."""
    return _oracle(runner.k8s_cel)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Attaches the components' log tails to the report of a failing test that used the control plane."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and _RUNNING and "control_plane" in getattr(item, "fixturenames", ()):
        report.sections.append(("control plane logs (tails)", _RUNNING[-1].logs()))
