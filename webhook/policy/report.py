"""What the `gpudra policy ...` and `gpudra translate` commands print: each function returns (text, exit code).

Exit codes: 0 fine, 1 the policies said no (denied pod, failed policy test, lint errors), 2 unreadable input.
Keeping this here lets the CLI stay a few lines per command and lets tests check the output without a shell.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dra.errors import InputError

from .decision import Decision
from .engine import PolicySet
from .loader import load_policies, policy_files, shipped_policies_dir
from .testing import run_tests

__all__ = ["Output", "explain", "lint", "read_inputs", "test", "translate_file", "yaml_stream"]


@dataclass(frozen=True)
class Output:
    """Text for stdout, text for stderr, and the exit code."""

    stdout: str
    code: int = 0
    stderr: str = ""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def yaml_stream(documents: Sequence[Any]) -> str:
    """Documents as one YAML stream (`---` between them), keys in their Kubernetes order."""
    return yaml.dump_all(list(documents), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def read_inputs(
    pod_file: str | os.PathLike[str], namespace_file: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The Pod of `pod_file` and a Namespace (from `namespace_file`, or a Namespace document beside the pod)."""
    pod: dict[str, Any] | None = None
    namespace: dict[str, Any] | None = None
    for file, wanted in ((pod_file, "Pod"), (namespace_file, "Namespace")):
        if file is None:
            continue
        try:
            documents = [d for d in yaml.safe_load_all(Path(file).read_text(encoding="utf-8")) if d is not None]
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=str(file)) from exc
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(f"invalid YAML: {exc}", source=str(file), line=mark.line + 1 if mark else None) from exc
        for document in documents:
            if not isinstance(document, dict):
                raise InputError(f"expected Kubernetes objects (got {type(document).__name__})", source=str(file))
            kind = document.get("kind")
            if kind == "Pod" and pod is None and wanted == "Pod":
                pod = document
            elif kind == "Namespace" and namespace is None:
                namespace = document
        found = pod if wanted == "Pod" else namespace
        if found is None:
            raise InputError(f"no {wanted} object in the file", source=str(file))
    assert pod is not None
    return pod, namespace


def _policies(directory: str | os.PathLike[str] | None) -> PolicySet:
    return load_policies(directory) if directory is not None else load_policies()


def _policy_errors(policies: PolicySet) -> str:
    return "".join(f"error: {e}\n" for e in policies.errors)


def lint(paths: Sequence[str | os.PathLike[str]]) -> Output:
    """Load and compile every policy under `paths` (default: shipped); report each error with file:line:col."""
    targets = list(paths) or [shipped_policies_dir()]
    policies = load_policies(*targets)
    files = len(list(policy_files(targets)))
    summary = f"{len(policies.policies)} policies in {files} files, {len(policies.errors)} errors\n"
    if policies.errors:
        return Output(summary, 1, _policy_errors(policies))
    lines = [f"ok  {p.name:<24} priority {p.priority:<5} {p.mode:<8} {p.where}" for p in policies.policies]
    return Output("\n".join(lines) + "\n" + summary)


def test(paths: Sequence[str | os.PathLike[str]]) -> Output:
    """Run policy test files; a diff for every failed expectation, exit 1 when anything fails."""
    results = run_tests(*paths)
    out: list[str] = []
    passed = failed = 0
    for result in results:
        for error in result.errors:
            out.append(f"ERROR {result.file}: {error}")
            failed += 1
        for case in result.cases:
            if case.passed:
                passed += 1
                out.append(f"PASS  {result.file}: {case.name}")
            else:
                failed += 1
                out.append(f"FAIL  {result.file}: {case.name}")
                out.extend("      " + line for failure in case.failures for line in failure.splitlines())
    if not results:
        return Output("", 1, "no GPUClaimPolicyTest files found\n")
    out.append(f"{passed} passed, {failed} failed")
    return Output("\n".join(out) + "\n", 1 if failed else 0)


def _explain_text(pod: dict[str, Any], policies: PolicySet, decision: Decision) -> str:
    meta = pod.get("metadata") or {}
    name = meta.get("name") or (str(meta.get("generateName", "")) + "<generated>")
    lines = [f"pod {decision.namespace}/{name}", "policies (in evaluation order):"]
    for policy in policies.policies:
        if policy.name == decision.policy:
            state = f"builds the claim ({decision.mode})"
        elif policy.name in decision.matched:
            state = "matched"
        elif policy.name in decision.shadowed:
            state = "matched, shadowed by a higher-priority claim policy"
        else:
            state = "not matched"
        lines.append(f"  {policy.name:<20} priority {policy.priority:<5} {state}")
    lines.extend(f"  error: {e}" for e in policies.errors)
    lines.append("verdict: " + ("allowed" if decision.allowed else f"denied ({decision.reason}): {decision.message}"))
    for violation in decision.violations:
        lines.append(f"  {violation.mode}: {violation.policy}: {violation.message}")
    for request in decision.containers:
        replaced = ", ".join(f"{k}={v}" for k, v in request.replaces.items())
        where = f"{request.kind}[{request.index}]"
        lines.append(f"container {request.container} ({where}): request {request.request}, replaces {replaced}")
    if decision.claim is not None:
        lines.append("claim:")
        lines.extend("  " + line for line in yaml_stream([decision.claim]).splitlines())
    for warning in decision.warnings:
        lines.append(f"warning: {warning}")
    if decision.variables:
        lines.append("variables:")
        for policy_name, values in decision.variables.items():
            for var, value in values.items():
                lines.append(f"  {policy_name}.{var} = {json.dumps(value, sort_keys=True)}")
    return "\n".join(lines) + "\n"


def explain(
    pod_file: str | os.PathLike[str],
    namespace_file: str | os.PathLike[str] | None = None,
    policies_dir: str | os.PathLike[str] | None = None,
    as_json: bool = False,
) -> Output:
    """Why the policies decide what they decide for one pod."""
    try:
        pod, namespace = read_inputs(pod_file, namespace_file)
    except InputError as exc:
        return Output("", 2, f"error: {exc}\n")
    policies = _policies(policies_dir).explaining()
    decision = policies.evaluate(pod, namespace)
    if as_json:
        data = decision.to_json()
        data["errors"] = [str(e) for e in policies.errors]
        return Output(json.dumps(data, indent=2, sort_keys=False) + "\n", 0 if decision.allowed else 1)
    return Output(_explain_text(pod, policies, decision), 0 if decision.allowed else 1)


def translate_file(
    pod_file: str | os.PathLike[str],
    policies_dir: str | os.PathLike[str] | None = None,
    output: str = "yaml",
    namespace_file: str | os.PathLike[str] | None = None,
) -> Output:
    """The mutated pod and its ResourceClaimTemplate(s) as a YAML stream, or the JSON object of the CLI contract."""
    from webhook.translate import translate

    if output not in ("yaml", "json"):
        return Output("", 2, f"error: -o must be yaml or json (got {output!r})\n")
    try:
        pod, namespace = read_inputs(pod_file, namespace_file)
    except InputError as exc:
        return Output("", 2, f"error: {exc}\n")
    policies = _policies(policies_dir)
    decision = policies.evaluate(pod, namespace)
    stderr = _policy_errors(policies)
    if not decision.allowed:
        return Output("", 1, stderr + f"denied: {decision.message}\n")
    result = translate(pod, decision)
    if output == "json":
        return Output(json.dumps(result.to_json(), indent=2) + "\n", 0, stderr)
    stderr += "".join(f"warning: {w}\n" for w in result.warnings)
    return Output(yaml_stream([result.pod, *result.templates]), 0, stderr)
