"""pytest plugin (loaded by tests/conftest.py): the real control plane and the Go oracles as fixtures.

Nothing starts unless a test asks for a fixture. Missing or stale binaries skip the test with a reason that names
them and the command that builds them (`missing_binaries`): in these fixtures, and, in tests marked `e2e` or
`oracle`, wherever `MissingBinaries` is raised (a module's fixture, the test's own `binaries.require`). With
GPUDRA_REQUIRE_BINARIES=1 (CI, after build.sh) they fail instead. Fixture API: tests/controlplane/README.md.
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


def _needs_binaries(item: pytest.Item) -> bool:
    # Only there: elsewhere a MissingBinaries is the code under test failing (simulator.verify raises it too).
    return any(item.get_closest_marker(name) is not None for name in ("e2e", "oracle"))


def _skipping_missing_binaries(item: pytest.Item) -> Generator[None, None, None]:
    """The hook wrappers' body: an e2e or oracle test that meets missing binaries skips (see `missing_binaries`)."""
    try:
        return (yield)
    except binaries.MissingBinaries as e:
        if not _needs_binaries(item):
            raise
        missing_binaries(e)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """A fixture of the test met missing binaries."""
    return (yield from _skipping_missing_binaries(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """The test itself met missing binaries (`binaries.require("components")` for kubectl)."""
    return (yield from _skipping_missing_binaries(item))


def start_control_plane() -> ControlPlane:
    """A fresh control plane, or the test skipped naming the binaries to build (see `missing_binaries`) or failed
    with why it did not start."""
    problem = None
    try:
        return ControlPlane.start()
    except binaries.MissingBinaries as e:
        missing_binaries(e)
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
    try:
        binaries.require("oracles")
    except binaries.MissingBinaries as e:
        missing_binaries(e)
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
