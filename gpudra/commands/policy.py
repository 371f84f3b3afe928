"""`gpudra policy lint|test|explain`: check, test and explain GPUClaimPolicy files.

Exit codes: 0 fine, 1 the policies said no (lint errors, a failed test, a denied pod), 2 an unreadable pod file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import typer

from dra.errors import InputError
from webhook.policy import PolicySet, load_policies, policy_files, read_inputs, shipped_policies_dir
from webhook.policy_testing import run_tests

from ..outcome import Outcome, emit
from ..render.policy import explanation, lint_listing, policy_errors, policy_test_report

EXIT_DENIED = 1
EXIT_INPUT = 2

Source = str | os.PathLike[str]


def policy_set(directory: Source | None) -> PolicySet:
    """The policies of `directory`, or the shipped ones."""
    return load_policies(directory) if directory is not None else load_policies()


def lint(paths: Sequence[Source]) -> Outcome:
    """Load and compile every policy under `paths` (default: shipped); errors as file:line:column on stderr."""
    targets = list(paths) or [shipped_policies_dir()]
    policies = load_policies(*targets)
    files = len(list(policy_files(targets)))
    summary = f"{len(policies.policies)} policies in {files} files, {len(policies.errors)} errors\n"
    if policies.errors:
        return Outcome(stdout=summary, stderr=policy_errors(policies), code=EXIT_DENIED)
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
    """Why the policies decide what they decide for one pod; exit 1 when it is denied."""
    try:
        pod, namespace = read_inputs(pod_file, namespace_file)
    except InputError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    policies = policy_set(policies_dir).explaining()
    decision = policies.evaluate(pod, namespace)
    code = 0 if decision.allowed else EXIT_DENIED
    if as_json:
        data = decision.to_json()
        data["errors"] = [str(e) for e in policies.errors]
        return Outcome(stdout=json.dumps(data, indent=2, sort_keys=False) + "\n", code=code)
    return Outcome(stdout=explanation(pod, policies, decision), code=code)


policy_app = typer.Typer(help="Lint, test and explain GPUClaimPolicy files.", no_args_is_help=True)


@policy_app.command("lint")
def _lint(paths: list[Path] = typer.Argument(None, help="Policy files or directories (default: shipped).")) -> None:
    """Load and compile policies; report errors as file:line:column with the expression."""
    emit(lint(paths or []))


@policy_app.command("test")
def _test(paths: list[Path] = typer.Argument(None, help="Test files or directories (default: shipped tests).")) -> None:
    """Run GPUClaimPolicyTest files; print a diff for each failed expectation."""
    emit(test(paths or []))


@policy_app.command("explain")
def _explain(
    pod: Path = typer.Argument(..., help="Pod YAML or JSON."),
    namespace: Path | None = typer.Option(None, "--namespace", help="Namespace object YAML."),
    policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
    as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
) -> None:
    """Show which policies match a pod, the variables, the claim and the verdict."""
    emit(explain(pod, namespace, policies, as_json))


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
