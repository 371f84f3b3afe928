"""pytest plugin (loaded by tests/conftest.py): the real control plane and the Go oracles as fixtures.

Nothing starts unless a test asks for a fixture. Missing Go or binaries fail the test with what to run;
they never skip. Fixture API: tests/controlplane/README.md.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from tests.controlplane import binaries
from tests.controlplane.cluster import ControlPlane, ControlPlaneError
from tests.controlplane.kube import Kube
from tests.oracle import runner

_RUNNING: list[ControlPlane] = []


def start_control_plane() -> ControlPlane:
    """A fresh control plane, or the test failed with what is missing (binaries to build) or why it did not start."""
    problem = None
    try:
        return ControlPlane.start()
    except binaries.MissingBinaries as e:
        problem = str(e)
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
    problem = None
    try:
        binaries.require("oracles")
    except binaries.MissingBinaries as e:
        problem = str(e)
    if problem is not None:
        pytest.fail(problem, pytrace=False)
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
