"""Policy tests in the spirit of `kyverno test`: input pods and namespaces, a policy set, expected outcomes.

A `GPUClaimPolicyTest` file names its policies (default: the directory above it), Namespace and Pod objects and cases:
a pod, optional namespace, admission request and KEP-5004 `extendedResourceMapping` (resource -> DeviceClass), and
`expect` (docs/policy-authoring.md), compared exactly (variables: the named ones); failures come back as diffs.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dra.documents import parse_yaml
from dra.errors import InputError, PolicyError
from policyengine import PolicySet, load_policies, shipped_policies_dir
from policyengine.scheduler_path import scheduler_path
from policyengine.translate import Translation, translate

__all__ = ["TEST_KIND", "CaseResult", "PolicyTestResult", "find_test_files", "run_test_file", "run_tests"]

TEST_KIND = "GPUClaimPolicyTest"
_EXPECT_KEYS = (
    "allowed", "policy", "mode", "message", "claim", "patch", "pod", "warnings", "variables", "templates",
    "leftToScheduler",
)  # fmt: skip


@dataclass(frozen=True)
class CaseResult:
    """One case: passed, or the list of expectations that did not hold, each with its diff."""

    name: str
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class PolicyTestResult:
    """One test file: its cases, or the errors that kept it from running."""

    file: str
    cases: tuple[CaseResult, ...]
    errors: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.errors and all(c.passed for c in self.cases)


def _dump(value: Any) -> list[str]:
    text: str = yaml.dump(value, Dumper=_NoAliases, sort_keys=True, default_flow_style=False, width=120)
    return text.splitlines()


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _diff(what: str, expected: Any, got: Any) -> str:
    lines = difflib.unified_diff(_dump(expected), _dump(got), f"expected {what}", f"got {what}", lineterm="")
    return f"{what} differs:\n" + "\n".join(lines)


def _by_name(objects: Any, kind: str, where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if objects is None:
        return out
    if not isinstance(objects, list):
        raise PolicyError(f"{where}: expected a list of {kind} objects")
    for index, item in enumerate(objects):
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = (meta or {}).get("name") or (meta or {}).get("generateName")
        if not isinstance(name, str) or not name:
            raise PolicyError(f"{where}[{index}]: a {kind} needs metadata.name or metadata.generateName")
        out[name] = item
    return out


def _compare(name: str, expect: Mapping[str, Any], outcome: Mapping[str, Any]) -> CaseResult:
    failures: list[str] = []
    for key in _EXPECT_KEYS:
        if key not in expect:
            continue
        wanted, got = expect[key], outcome[key]
        if key == "message":
            if not isinstance(wanted, str) or wanted not in str(got):
                failures.append(f"message: expected it to contain {wanted!r}, got {got!r}")
        elif key == "variables":
            for policy, values in (wanted or {}).items():
                for var, value in (values or {}).items():
                    actual = got.get(policy, {}).get(var, "<unset>")
                    if actual != value:
                        failures.append(_diff(f"variables.{policy}.{var}", value, actual))
        elif wanted != got:
            failures.append(_diff(key, wanted, got))
    unknown = sorted(set(expect) - set(_EXPECT_KEYS))
    if unknown:
        failures.append(f"unknown expectation(s) {', '.join(unknown)} (known: {', '.join(_EXPECT_KEYS)})")
    return CaseResult(name, tuple(failures))


def _run_case(
    policies: PolicySet, case: Mapping[str, Any], pods: Mapping[str, Any], namespaces: Mapping[str, Any]
) -> CaseResult:
    name = str(case.get("name", "<unnamed>"))
    pod = case.get("pod")
    if isinstance(pod, str):
        if pod not in pods:
            return CaseResult(name, (f"no pod named {pod!r} in this file (have: {', '.join(sorted(pods))})",))
        pod = pods[pod]
    namespace = case.get("namespace")
    if isinstance(namespace, str):
        if namespace not in namespaces:
            return CaseResult(name, (f"no namespace named {namespace!r} in this file",))
        namespace = namespaces[namespace]
    if not isinstance(pod, dict):
        return CaseResult(name, ("'pod' must name a pod of this file or be a Pod object",))
    mapping = case.get("extendedResourceMapping") or {}
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        return CaseResult(name, ("'extendedResourceMapping' must map extended resources to DeviceClass names",))
    decision = policies.evaluate(pod, namespace, case.get("request"), extended_resources=mapping)
    left = scheduler_path(pod, decision, mapping, policies) is not None
    translation = Translation(pod, warnings=decision.warnings) if left else translate(pod, decision)
    outcome = {
        "allowed": decision.allowed,
        "policy": decision.policy,
        "mode": decision.mode,
        "message": decision.message,
        "claim": decision.claim,
        "patch": list(translation.patch),
        "pod": translation.pod,
        "warnings": list(translation.warnings),
        "variables": decision.variables,
        "templates": list(translation.templates),
        "leftToScheduler": left,
    }
    return _compare(name, case.get("expect") or {}, outcome)


def run_test_file(path: str | os.PathLike[str]) -> PolicyTestResult:
    """Run every case of one test file."""
    file = Path(path)
    try:
        documents = parse_yaml(file)
    except InputError as exc:
        return PolicyTestResult(str(file), (), (f"cannot read test file: {exc}",))
    data = documents[0] if len(documents) == 1 else None
    if not isinstance(data, dict) or data.get("kind") != TEST_KIND:
        return PolicyTestResult(str(file), (), (f"expected kind {TEST_KIND}",))
    sources = data.get("policies") or [".."]
    policies = load_policies(*(file.parent / str(p) for p in sources)).explaining()
    if policies.errors:
        return PolicyTestResult(str(file), (), tuple(str(e) for e in policies.errors))
    try:
        pods = _by_name(data.get("pods"), "Pod", "pods")
        namespaces = _by_name(data.get("namespaces"), "Namespace", "namespaces")
    except PolicyError as exc:
        return PolicyTestResult(str(file), (), (f"{file}: {exc}",))
    cases = data.get("tests") or []
    if not cases:
        return PolicyTestResult(str(file), (), ("the file has no tests",))
    return PolicyTestResult(str(file), tuple(_run_case(policies, case, pods, namespaces) for case in cases))


def _is_test_file(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return f"kind: {TEST_KIND}" in head


def find_test_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Test files under `paths`: files as given, directories searched recursively for GPUClaimPolicyTest."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            yield from (p for p in found if _is_test_file(p))
        else:
            yield path


def run_tests(*paths: str | os.PathLike[str]) -> list[PolicyTestResult]:
    """Run every test file under `paths` (default: the shipped policies' tests)."""
    return [run_test_file(p) for p in find_test_files(paths or (shipped_policies_dir(),))]
