"""`gpudra translate FILE` and `gpudra translate -R DIR`: manifests rewritten to DRA with their ResourceClaimTemplates.

FILE may hold Pods, workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, KubeRay, Kubeflow,
LeaderWorkerSet, JobSet: `workloads.KNOWN_KINDS`), `List`s and multi-document streams; every object
comes back in order, each followed by the templates it needs. The stream is read and translated one document at a
time, over worker processes when it is long (`_translate_stream`), with a progress bar on a terminal. With `-R`, a
directory is rewritten (`manifest_translation.tree`: only the changed lines of a document are edited).

Exit codes: 0 translated (an object of a kind gpudra cannot rewrite ahead of time passes through with a warning),
1 a pod template denied (the policy's message on stderr), 2 an unreadable file or document, a bad option, or a
policy set that cannot translate (`--policies` missing or empty, a policy file that does not load, no policy with a
claim). Nothing is printed to stdout (or written with `-R`'s file) when anything in the file failed.
`-o json` is always `{"objects", "templates", "translations"}` (`render.translation.translation_json`), whatever
the file holds.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dra.documents import Document
from dra.errors import InputError
from dra.yamlio import read_source
from policyengine.k8s_features import parse_minor

from ..options import DeprecatedNamespaceOption, NamespaceFileOption, OptionError, deprecated_alias, output_format
from ..outcome import Outcome
from ..render.translation import TranslationOutput, tree_table
from ..signature import add_command
from ..terminal import styled
from ._catalog_check import catalog_check
from ._policy_set import EXIT_DENIED, EXIT_INPUT, Source, translation_policies
from ._translate_stream import translate_stream
from ._workload_inputs import nothing_to_translate, read_namespace

if TYPE_CHECKING:
    from policyengine import PolicySet

Progress = Callable[[int, int], None]


@contextmanager
def _progress_bar(label: str) -> Iterator[Progress | None]:
    """A progress bar on stderr (characters of the stream read) while it is a terminal; None otherwise. It is drawn
    when the count moves (no refresh thread: worker processes are forked while it shows)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    with RichProgress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), transient=True, auto_refresh=False,
    ) as bar:  # fmt: skip
        task = bar.add_task(label, total=None)
        last = -1

        def advance(done: int, total: int) -> None:
            nonlocal last
            if done - last >= total // 500 or done == total:  # a few hundred updates, however long the stream
                last = done
                bar.update(task, completed=done, total=total, refresh=True)

        yield advance


def checked(policies: PolicySet, slices_file: Source | None) -> PolicySet:
    """`policies` with each claim checked against device shapes: the ResourceSlices and DeviceClasses of
    `slices_file` (a cluster dump), or the GPU catalog (`dra.shapes`; folded when the first claim is checked)."""
    if slices_file is None:
        return policies.with_claim_check(catalog_check())
    from dra.documents import load_documents
    from dra.shapes import DeviceShapes, dump_shapes
    from policyengine import ClaimCheck

    shapes: DeviceShapes = dump_shapes(load_documents(Path(slices_file)))
    return policies.with_claim_check(ClaimCheck(lambda: shapes))


def translate_file(
    pod_file: Source,
    policies_dir: Source | None = None,
    output: str = "yaml",
    namespace_file: Source | None = None,
    k8s_version: str | None = None,
    jobs: int | None = None,
    slices_file: Source | None = None,
) -> Outcome:
    """Every object of the file with its pod templates translated, as a YAML stream or as JSON, always
    `{"objects", "templates", "translations"}` (one Pod or many, with the objects gpudra passes through).

    The stream is read and translated one document at a time, the output kept as text (a long stream costs about
    its text and its output's, never all its objects at once), over `jobs` worker processes for a long stream
    (`_translate_stream`: None picks them; the output is the same)."""
    try:
        fmt = output_format(output)
        minor = parse_minor(k8s_version) if k8s_version is not None else None
        text, name = read_source("-" if str(pod_file) == "-" else Path(pod_file))
        namespace = read_namespace(namespace_file)
        policies = checked(translation_policies(policies_dir), slices_file)
    except (OptionError, InputError, ValueError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    out = TranslationOutput(fmt)
    try:
        with _progress_bar(f"translating {name}") as progress:
            found = translate_stream(text, name, policies, namespace, minor, out, jobs=jobs, progress=progress)
    except InputError as exc:  # unreadable YAML further down the stream
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    del text
    passed = "".join(f"warning: {w}\n" for w in found.unknown)
    if not found.translations and not found.errors:
        kinds = [Document({"kind": k}, name, 0) for k in sorted(found.kinds)]
        note = "" if found.unknown else f"note: {nothing_to_translate(pod_file, kinds)}; printed unchanged\n"
        return Outcome(stdout=out.text(), stderr=passed + note)
    lone_pod = found.translations == 1 and found.first_is_pod and not found.errors and not found.unknown

    def named(label: str, message: str) -> str:
        return message if lone_pod else f"{label}: {message}"

    stderr = "".join(f"error: {e}\n" for e in found.errors)
    stderr += "".join(f"denied: {named(label, m)}\n" for label, m in found.denied)
    if found.errors or found.denied:
        return Outcome(stderr=stderr, code=EXIT_INPUT if found.errors else EXIT_DENIED)
    stderr += passed + "".join(f"warning: {named(label, w)}\n" for label, w in found.warnings + found.unserved)
    return Outcome(stdout=out.text(), stderr=stderr)


def translate_directory(
    root: Source,
    policies_dir: Source | None = None,
    namespace_file: Source | None = None,
    out: Source | None = None,
    dry_run: bool = False,
    output: str = "yaml",
    slices_file: Source | None = None,
) -> Outcome:
    """Rewrite a directory of manifests (in place, or a copy into `out`); the summary on stdout, problems on stderr."""
    from manifest_translation.tree import translate_tree  # only `-R` rewrites a directory

    try:
        fmt = output_format(output)
        namespace = read_namespace(namespace_file)
        policies = checked(translation_policies(policies_dir), slices_file)
        report = translate_tree(
            Path(root), policies, out=Path(out) if out is not None else None, namespace=namespace, dry_run=dry_run
        )
    except (OptionError, InputError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    stderr = "".join(f"warning: {w}\n" for w in report.warnings)
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


@dataclass(frozen=True, slots=True)
class TranslateOptions:
    """`gpudra translate`'s options as typer shows them (the command's one signature)."""

    path: Annotated[
        Path,
        typer.Argument(
            help="Manifests (YAML or JSON: Pods, workloads, Lists, multi-document streams); with -R a directory."
        ),
    ]
    policies: Annotated[Path | None, typer.Option("--policies", help="Policy directory (default: shipped).")] = None
    output: Annotated[
        str,
        typer.Option(
            "-o", "--output", help='yaml (a YAML stream) or json (always {"objects", "templates", "translations"}).'
        ),
    ] = "yaml"
    namespace_file: NamespaceFileOption = None
    namespace: DeprecatedNamespaceOption = None
    recursive: Annotated[
        bool,
        typer.Option(
            "-R", "--recursive", help="Rewrite every manifest under the directory PATH (in place by default)."
        ),
    ] = False
    out: Annotated[
        Path | None,
        typer.Option("--out", help="With -R: write a full copy of the tree here instead (a new or empty directory)."),
    ] = None
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With -R: report what would change, write nothing.")] = (
        False
    )
    k8s_version: Annotated[
        str | None,
        typer.Option(
            "--k8s-version", help="Warn where a claim needs a feature this Kubernetes version does not serve."
        ),
    ] = None
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", min=1, help="Worker processes for a long FILE stream (default: the CPUs, for 4 MB or more)."
        ),
    ] = None
    slices: Annotated[
        Path | None,
        typer.Option(
            "--slices",
            help="Check each claim against the ResourceSlices and DeviceClasses of this cluster dump (default: the "
            "GPU catalog): alternatives no device satisfies are dropped; a claim with none left follows its "
            "policy's onUnsatisfiable.",
        ),
    ] = None


def translate(options: TranslateOptions) -> Outcome:
    """A directory rewritten with `-R` (`translate_directory`), else a file or stream translated (`translate_file`)."""
    o = options
    try:
        namespace, deprecated = deprecated_alias(o.namespace_file, o.namespace, "--namespace-file", "--namespace")
    except OptionError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    if o.recursive:
        done = translate_directory(o.path, o.policies, namespace, o.out, o.dry_run, o.output, o.slices)
    elif o.out is not None or o.dry_run:
        done = Outcome(stderr="error: --out and --dry-run go with -R DIR\n", code=EXIT_INPUT)
    else:
        done = translate_file(o.path, o.policies, o.output, namespace, o.k8s_version, o.jobs, o.slices)
    return dataclasses.replace(done, stderr=deprecated + done.stderr)


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "translate",
        translate,
        help="Print the objects with their pod templates rewritten to DRA and the ResourceClaimTemplates they need.",
    )
