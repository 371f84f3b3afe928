"""`gpudra policy lint|test|explain`: check, test and explain GPUClaimPolicy files.

Exit codes: 0 fine, 1 the policies said no (lint errors, a failed test, a denied pod), 2 an unreadable pod file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from dra.errors import InputError
from policyengine import (
    Decision,
    PolicySet,
    load_policies,
    policy_files,
    shipped_policies_dir,
    translates_nothing,
)
from policyengine.testing import run_tests
from policyengine.workload_translation import TemplatePod, namespace_for, namespaces_of

from ..outcome import Outcome, emit
from ..render.policy import explanation, lint_listing, policy_errors, policy_test_report, sizing_json
from ._workload_inputs import nothing_to_translate, read_namespace, read_objects, template_pods_of

EXIT_DENIED = 1
EXIT_INPUT = 2

Source = str | os.PathLike[str]


def policy_set(directory: Source | None) -> PolicySet:
    """The policies of `directory`, or the shipped ones."""
    return load_policies(directory) if directory is not None else load_policies()


def lint(paths: Sequence[Source], strict: bool = False) -> Outcome:
    """Load and compile every policy under `paths` (default: shipped); errors as file:line:column on stderr. A set
    that translates nothing is a warning on stderr, an error (exit 1) with `strict`."""
    targets = list(paths) or [shipped_policies_dir()]
    policies = load_policies(*targets)
    files = len(list(policy_files(targets)))
    summary = f"{len(policies.policies)} policies in {files} files, {len(policies.errors)} errors\n"
    if policies.errors:
        return Outcome(stdout=summary, stderr=policy_errors(policies), code=EXIT_DENIED)
    idle = translates_nothing(policies)
    if idle is not None:
        level = "error" if strict else "warning"
        return Outcome(
            stdout=lint_listing(policies) + summary, stderr=f"{level}: {idle}\n", code=EXIT_DENIED if strict else 0
        )
    return Outcome(stdout=lint_listing(policies) + summary)


def test(paths: Sequence[Source]) -> Outcome:
    """Run policy test files; a diff for every failed expectation, exit 1 when anything fails or none exist."""
    results = run_tests(*paths)
    if not results:
        return Outcome(stderr="no GPUClaimPolicyTest files found\n", code=EXIT_DENIED)
    text, failed = policy_test_report(results)
    return Outcome(stdout=text, code=EXIT_DENIED if failed else 0)


def explain(
    pod_file: Source, namespace_file: Source | None = None, policies_dir: Source | None = None, as_json: bool = False
) -> Outcome:
    """Why the policies decide what they decide for each pod template of the file (a Pod, a workload, a stream or
    a `List`); exit 1 when one is denied, 2 when an object could not be read (the others are still explained)."""
    try:
        documents = read_objects(pod_file)
        namespace = read_namespace(namespace_file)
    except InputError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    pods, input_errors = template_pods_of(documents)
    if not pods and not input_errors:
        return Outcome(stderr=f"error: {nothing_to_translate(pod_file, documents)}\n", code=EXIT_INPUT)
    policies = policy_set(policies_dir).explaining()
    known = namespaces_of(documents)
    # Each template decided as the pod its controller creates, as translate and the webhook decide it.
    decided = [(pod, policies.evaluate(pod.decided, namespace_for(pod, namespace, known)[0])) for pod in pods]
    stderr = "".join(f"error: {e}\n" for e in input_errors)
    code = EXIT_INPUT if input_errors else 0 if all(d.allowed for _, d in decided) else EXIT_DENIED
    lone_pod = len(decided) == 1 and decided[0][0].is_pod and not input_errors
    if as_json:
        if lone_pod:
            data = decided[0][1].to_json()
            data["sizing"] = sizing_json(decided[0][0].decided)
            data["errors"] = [str(e) for e in policies.errors]
        else:
            data = {
                "templates": [_template_json(p, d) for p, d in decided],
                "errors": [str(e) for e in policies.errors],
            }
        return Outcome(stdout=json.dumps(data, indent=2, sort_keys=False) + "\n", stderr=stderr, code=code)
    if lone_pod:
        return Outcome(stdout=explanation(decided[0][0].decided, policies, decided[0][1]), code=code)
    texts = [f"== {p.label}\n" + explanation(p.decided, policies, d) for p, d in decided]
    return Outcome(stdout="\n".join(texts), stderr=stderr, code=code)


def _template_json(pod: TemplatePod, decision: Decision) -> dict[str, Any]:
    return {
        "kind": pod.kind,
        "name": pod.name,
        "namespace": pod.namespace,
        "path": pod.where,
        "role": pod.template.role,
        "decision": decision.to_json(),
        "sizing": sizing_json(pod.decided),
    }


policy_app = typer.Typer(help="Lint, test and explain GPUClaimPolicy files.", no_args_is_help=True)


@policy_app.command("lint")
def _lint(
    paths: list[Path] = typer.Argument(None, help="Policy files or directories (default: shipped)."),
    strict: bool = typer.Option(False, "--strict", help="A set that translates no pod is an error, not a warning."),
) -> None:
    """Load and compile policies; report errors as file:line:column with the expression."""
    emit(lint(paths or [], strict))


@policy_app.command("test")
def _test(paths: list[Path] = typer.Argument(None, help="Test files or directories (default: shipped tests).")) -> None:
    """Run GPUClaimPolicyTest files; print a diff for each failed expectation."""
    emit(test(paths or []))


@policy_app.command("explain")
def _explain(
    pod: Path = typer.Argument(..., help="Pods or workloads (YAML or JSON, streams and Lists): each pod template."),
    namespace: Path | None = typer.Option(None, "--namespace", help="Namespace object YAML."),
    policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
    as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
) -> None:
    """Show which policies match each pod template, the variables, the claim and the verdict."""
    emit(explain(pod, namespace, policies, as_json))


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
