"""`gpudra policy lint|test|explain`: check, test and explain GPUClaimPolicy files.

Exit codes: 0 fine, 1 the policies said no (lint errors, a failed test, a denied pod), 2 an unreadable pod file, a
bad option or a `--policies` path that is missing or holds no policy file.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dra.errors import InputError
from manifest_translation import TemplatePod, namespace_for, namespaces_of, passed_through
from policyengine import (
    LEGACY_GPU,
    Decision,
    PolicySet,
    load_policies,
    policy_files,
    shipped_policies_dir,
    translates_nothing,
)
from policyengine.k8s_features import parse_minor, unserved_features
from policyengine.scheduler_path import scheduler_path
from policyengine.testing import run_tests

from ..coercion import command_group
from ..options import DeprecatedNamespaceOption, NamespaceFileOption, OptionError, deprecated_alias
from ..outcome import Outcome
from ..render.policy import (
    controller_additions,
    controller_json,
    explanation,
    lint_listing,
    policy_errors,
    policy_test_report,
    sizing_json,
)
from ..signature import add_command
from ._policy_set import EXIT_DENIED, EXIT_INPUT, Source, policy_set, translation_policies
from ._workload_inputs import nothing_to_translate, read_namespace, read_objects, template_pods_of

__all__ = ["EXIT_DENIED", "EXIT_INPUT", "Source", "policy_set", "translation_policies"]


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


def extended_resource_mapping(values: Sequence[str]) -> dict[str, str]:
    """`--extended-resource-class` values as a KEP-5004 mapping: `CLASS` maps nvidia.com/gpu, `RESOURCE=CLASS` names
    the resource (`nvidia.com/mig-1g.10gb=mig-1g10gb`). Raises InputError on an empty part or a resource named
    twice."""
    mapping: dict[str, str] = {}
    for value in values:
        resource, _, device_class = value.rpartition("=") if "=" in value else (LEGACY_GPU, "=", value)
        resource, device_class = resource.strip(), device_class.strip()
        if not resource or not device_class:
            raise InputError(f"--extended-resource-class {value!r}: expected CLASS or RESOURCE=CLASS")
        if resource in mapping:
            raise InputError(f"--extended-resource-class: {resource} is mapped twice")
        mapping[resource] = device_class
    return mapping


def _notes(
    pod: dict[str, Any], decision: Decision, policies: PolicySet, mapping: dict[str, str], minor: int | None
) -> tuple[str | None, list[str]]:
    """Whether the pod is left to kube-scheduler's claim (the reason), and what the target version does not serve."""
    native = scheduler_path(pod, decision, mapping, policies)
    if native is not None or decision.claim is None or minor is None:
        return (native.reason if native is not None else None), []
    return None, [f"claim {w}" for w in unserved_features(decision.claim, minor)]


def explain(
    pod_file: Source,
    namespace_file: Source | None = None,
    policies_dir: Source | None = None,
    as_json: bool = False,
    extended_resource_classes: Sequence[str] = (),
    k8s_version: str | None = None,
) -> Outcome:
    """Why the policies decide what they decide for each pod template of the file (a Pod, a workload, a stream or
    a `List`); exit 1 when one is denied, 2 when an object could not be read (the others are still explained); a
    kind gpudra cannot rewrite ahead of time is a warning and a file without pod templates a note (exit 0).
    `extended_resource_classes`: the cluster's KEP-5004 mapping (`extended_resource_mapping`): pods whose decision is
    only whole devices of a mapped class are said to be left to kube-scheduler, as `gpudra serve` leaves them;
    `k8s_version`: warn where a claim needs a feature that version does not serve by default."""
    try:
        mapping = extended_resource_mapping(extended_resource_classes)
        minor = parse_minor(k8s_version) if k8s_version is not None else None
        documents = read_objects(pod_file)
        namespace = read_namespace(namespace_file)
    except (InputError, ValueError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    pods, all_errors = template_pods_of(documents)
    # As translate: a kind gpudra cannot rewrite ahead of time is a warning (its pods are decided at admission), and
    # a file with nothing to explain is a note; only unreadable input is an error.
    unknown, input_errors = passed_through(all_errors)
    passed = "".join(f"warning: {w}\n" for w in unknown)
    if not pods and not input_errors:
        note = "" if unknown else f"note: {nothing_to_translate(pod_file, documents)}; nothing to explain\n"
        return Outcome(stderr=passed + note)
    try:
        policies = policy_set(policies_dir).explaining()
    except InputError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    known = namespaces_of(documents)
    # Each template decided as the pod its controller creates, as translate and the webhook decide it.
    decided = [
        (pod, policies.evaluate(pod.decided, namespace_for(pod, namespace, known)[0], extended_resources=mapping))
        for pod in pods
    ]
    notes = [_notes(p.decided, d, policies, mapping, minor) for p, d in decided]
    stderr = "".join(f"error: {e}\n" for e in input_errors) + passed
    code = EXIT_INPUT if input_errors else 0 if all(d.allowed for _, d in decided) else EXIT_DENIED
    lone_pod = len(decided) == 1 and decided[0][0].is_pod and not input_errors and not unknown
    if as_json:
        if lone_pod:
            data = decided[0][1].to_json()
            data["sizing"] = sizing_json(decided[0][0].decided)
            data["leftToScheduler"], data["versionWarnings"] = notes[0]
            data["errors"] = [str(e) for e in policies.errors]
        else:
            data = {
                "templates": [_template_json(p, d, n) for (p, d), n in zip(decided, notes, strict=True)],
                "errors": [str(e) for e in policies.errors],
            }
        return Outcome(stdout=json.dumps(data, indent=2, sort_keys=False) + "\n", stderr=stderr, code=code)
    if lone_pod:
        text = explanation(decided[0][0].decided, policies, decided[0][1], _lines(notes[0]))
        return Outcome(stdout=text, stderr=stderr, code=code)
    texts = [
        f"== {p.label}\n" + explanation(p.decided, policies, d, _lines(n), controller_additions(p.pod, p.decided))
        for (p, d), n in zip(decided, notes, strict=True)
    ]
    return Outcome(stdout="\n".join(texts), stderr=stderr, code=code)


def _lines(notes: tuple[str | None, list[str]]) -> list[str]:
    native, version = notes
    return ([f"scheduler: {native}"] if native else []) + [f"warning: {w}" for w in version]


def _template_json(pod: TemplatePod, decision: Decision, notes: tuple[str | None, list[str]]) -> dict[str, Any]:
    return {
        "kind": pod.kind,
        "name": pod.name,
        "namespace": pod.namespace,
        "path": pod.where,
        "role": pod.template.role,
        "decision": decision.to_json(),
        "sizing": sizing_json(pod.decided),
        "controller": controller_json(pod.pod, pod.decided),
        "leftToScheduler": notes[0],
        "versionWarnings": notes[1],
    }


@dataclass(frozen=True, slots=True)
class LintOptions:
    """`gpudra policy lint`'s options as typer shows them (the command's one signature)."""

    paths: Annotated[list[Path] | None, typer.Argument(help="Policy files or directories (default: shipped).")] = None
    strict: Annotated[
        bool, typer.Option("--strict", help="A set that translates no pod is an error, not a warning.")
    ] = False


@dataclass(frozen=True, slots=True)
class PolicyTestOptions:
    """`gpudra policy test`'s options as typer shows them (the command's one signature)."""

    paths: Annotated[list[Path] | None, typer.Argument(help="Test files or directories (default: shipped tests).")] = (
        None
    )


@dataclass(frozen=True, slots=True)
class ExplainOptions:
    """`gpudra policy explain`'s options as typer shows them (the command's one signature)."""

    pod: Annotated[Path, typer.Argument(help="Pods or workloads (YAML or JSON, streams and Lists): each pod template.")]
    namespace_file: NamespaceFileOption = None
    namespace: DeprecatedNamespaceOption = None
    policies: Annotated[Path | None, typer.Option("--policies", help="Policy directory (default: shipped).")] = None
    as_json: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False
    extended_resource_class: Annotated[
        list[str] | None,
        typer.Option(
            "--extended-resource-class",
            help="The cluster maps an extended resource to this DeviceClass (KEP-5004 extendedResourceName): CLASS "
            "for nvidia.com/gpu, or RESOURCE=CLASS; repeatable. Says which pods gpudra serve leaves to kube-scheduler.",
        ),
    ] = None
    k8s_version: Annotated[
        str | None,
        typer.Option(
            "--k8s-version", help="Warn where a claim needs a feature this Kubernetes version does not serve."
        ),
    ] = None


def lint_command(options: LintOptions) -> Outcome:
    """`lint` with the command's options."""
    return lint(options.paths or [], options.strict)


def policy_test_command(options: PolicyTestOptions) -> Outcome:
    """`test` with the command's options."""
    return test(options.paths or [])


def explain_command(options: ExplainOptions) -> Outcome:
    """`explain` with the command's options."""
    o = options
    try:
        namespace, deprecated = deprecated_alias(o.namespace_file, o.namespace, "--namespace-file", "--namespace")
    except OptionError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    done = explain(o.pod, namespace, o.policies, o.as_json, o.extended_resource_class or [], o.k8s_version)
    return dataclasses.replace(done, stderr=deprecated + done.stderr)


policy_app = command_group(help="Lint, test and explain GPUClaimPolicy files.", no_args_is_help=True)
add_command(
    policy_app,
    "lint",
    lint_command,
    help="Load and compile policies; report errors as file:line:column with the expression.",
)
add_command(
    policy_app,
    "test",
    policy_test_command,
    help="Run GPUClaimPolicyTest files; print a diff for each failed expectation.",
)
add_command(
    policy_app,
    "explain",
    explain_command,
    help="Show which policies match each pod template, the variables, the claim and the verdict.",
)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
