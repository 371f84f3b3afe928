"""`gpudra translate FILE` and `gpudra translate -R DIR`: manifests rewritten to DRA with their ResourceClaimTemplates.

FILE may hold Pods, workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, KubeRay, Kubeflow,
LeaderWorkerSet, JobSet: `policyengine.workloads.KNOWN_KINDS`), `List`s and multi-document streams; every object
comes back in order, each followed by the templates it needs. With `-R`, a directory is rewritten
(`policyengine.manifest_tree`).

Exit codes: 0 translated, 1 a pod template denied (the policy's message on stderr), 2 an unreadable file, an
object whose pod templates gpudra cannot find (its kind and the paths tried named), or a bad option. Nothing is
printed to stdout (or written with `-R`'s file) when anything in the file failed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer

from dra.errors import InputError
from policyengine.k8s_features import parse_minor, unserved_features
from policyengine.manifest_tree import translate_tree
from policyengine.workload_translation import TemplateTranslation, passed_through, translate_documents

from ..options import OptionError, output_format
from ..outcome import Outcome, emit
from ..render.documents import yaml_stream
from ..render.policy import policy_errors
from ..render.translation import objects_with_templates, translation_json, tree_table
from ..terminal import styled
from ._workload_inputs import nothing_to_translate, read_namespace, read_objects
from .policy import EXIT_DENIED, EXIT_INPUT, Source, policy_set


def _lone_pod_json(t: TemplateTranslation) -> dict[str, object]:
    """The contract for a file of one Pod: `{"pod", "templates", "patch", "warnings"}`."""
    return {
        "pod": t.rewritten_template(),
        "templates": list(t.templates),
        "patch": list(t.patch),
        "warnings": list(t.warnings),
    }


def translate_file(
    pod_file: Source,
    policies_dir: Source | None = None,
    output: str = "yaml",
    namespace_file: Source | None = None,
    k8s_version: str | None = None,
) -> Outcome:
    """Every object of the file with its pod templates translated, as a YAML stream or the JSON of the CLI contract."""
    try:
        fmt = output_format(output)
        minor = parse_minor(k8s_version) if k8s_version is not None else None
        documents = read_objects(pod_file)
        namespace = read_namespace(namespace_file)
    except (OptionError, InputError, ValueError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    policies = policy_set(policies_dir)
    objects, all_errors = translate_documents(documents, policies, namespace)
    unknown, errors = passed_through(all_errors)  # only unreadable input is an error
    passed = "".join(f"warning: {w}\n" for w in unknown)
    translations = [t for o in objects for t in o.templates]
    if not translations and not errors:
        note = "" if unknown else f"note: {nothing_to_translate(pod_file, documents)}; printed unchanged\n"
        body = (
            json.dumps(translation_json(objects), indent=2) + "\n"
            if fmt == "json"
            else yaml_stream(objects_with_templates(objects))
        )
        return Outcome(stdout=body, stderr=passed + note)
    lone_pod = len(translations) == 1 and translations[0].pod.is_pod and not errors and not unknown

    def named(t: TemplateTranslation, text: str) -> str:
        return text if lone_pod else f"{t.pod.label}: {text}"

    stderr = policy_errors(policies) + "".join(f"error: {e}\n" for e in errors)
    denied = [t for t in translations if t.denied]
    stderr += "".join(f"denied: {named(t, t.decision.message)}\n" for t in denied)
    if errors or denied:
        return Outcome(stderr=stderr, code=EXIT_INPUT if errors else EXIT_DENIED)
    stderr += passed + "".join(f"warning: {named(t, w)}\n" for t in translations for w in t.warnings)
    if minor is not None:  # what the target cluster would not serve, per claim template
        for t in translations:
            for template in t.templates:
                spec = (template.get("spec") or {}).get("spec") or {}
                name = template["metadata"]["name"]
                stderr += "".join(f"warning: {named(t, f'ResourceClaimTemplate {name} {w}')}\n"
                                  for w in unserved_features(spec, minor))  # fmt: skip
    if fmt == "json":
        data = _lone_pod_json(translations[0]) if lone_pod else translation_json(objects)
        return Outcome(stdout=json.dumps(data, indent=2) + "\n", stderr=stderr)
    return Outcome(stdout=yaml_stream(objects_with_templates(objects)), stderr=stderr)


def translate_directory(
    root: Source,
    policies_dir: Source | None = None,
    namespace_file: Source | None = None,
    out: Source | None = None,
    dry_run: bool = False,
    output: str = "yaml",
) -> Outcome:
    """Rewrite a directory of manifests (in place, or a copy into `out`); the summary on stdout, problems on stderr."""
    try:
        fmt = output_format(output)
        namespace = read_namespace(namespace_file)
        policies = policy_set(policies_dir)
        report = translate_tree(
            Path(root), policies, out=Path(out) if out is not None else None, namespace=namespace, dry_run=dry_run
        )
    except (OptionError, InputError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    stderr = policy_errors(policies)
    stderr += "".join(f"warning: {w}\n" for w in report.warnings)
    stderr += "".join(f"error: {e}\n" for e in report.errors)
    stderr += "".join(f"denied: {d}\n" for d in report.denied)
    if fmt == "json":
        data = {**dataclasses.asdict(report), "dryRun": dry_run}
        return Outcome(stdout=json.dumps(data, indent=2) + "\n", stderr=stderr, code=report.code)
    verb = "would translate" if dry_run else "translated"
    lines = [f"{verb} {line}\n" for line in report.translated]
    counts = (report.scanned, len(report.changed), len(report.claim_files), len(report.kustomizations))
    table = styled(tree_table(*counts, len(report.errors) + len(report.denied)))
    note = "(dry run: nothing written)\n" if dry_run else ""
    return Outcome(stdout="".join(lines) + table + note, stderr=stderr, code=report.code)


def register(app: typer.Typer) -> None:
    @app.command("translate")
    def _translate(
        path: Path = typer.Argument(
            ...,
            help="Manifests (YAML or JSON: Pods, workloads, Lists, multi-document streams); with -R a directory.",
        ),
        policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
        output: str = typer.Option("yaml", "-o", "--output", help="yaml (a YAML stream) or json."),
        namespace: Path | None = typer.Option(None, "--namespace", help="Namespace object YAML."),
        recursive: bool = typer.Option(
            False, "-R", "--recursive", help="Rewrite every manifest under the directory PATH (in place by default)."
        ),
        out: Path | None = typer.Option(
            None, "--out", help="With -R: write a full copy of the tree here instead (a new or empty directory)."
        ),
        dry_run: bool = typer.Option(False, "--dry-run", help="With -R: report what would change, write nothing."),
        k8s_version: str | None = typer.Option(
            None, "--k8s-version", help="Warn where a claim needs a feature this Kubernetes version does not serve."
        ),
    ) -> None:
        """Print the objects with their pod templates rewritten to DRA and the ResourceClaimTemplates they need."""
        if recursive:
            emit(translate_directory(path, policies, namespace, out, dry_run, output))
        elif out is not None or dry_run:
            emit(Outcome(stderr="error: --out and --dry-run go with -R DIR\n", code=EXIT_INPUT))
        else:
            emit(translate_file(path, policies, output, namespace, k8s_version))
