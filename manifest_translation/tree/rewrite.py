"""`gpudra translate -R DIR`: a directory of manifests rewritten for DRA, the GitOps way.

Every `*.yaml`, `*.yml` and `*.json` below DIR (hidden directories and kustomization files aside) is read; a file
whose pod templates the policies translate is rewritten (only its changed documents; see `manifest_files`), and
the ResourceClaimTemplates it now names go to `<name>.gpudra-claims.yaml` beside it (extended, never duplicated,
when it exists). The nearest kustomization that lists the file in `resources:` gets the claims file listed right
after it. A file with an error (unreadable, an unknown kind holding GPU requests, a denied template) is left as it
is and reported. Without `out`, DIR is rewritten in place; with it, DIR is left alone and `out` receives a full
copy of the tree (unchanged files byte for byte) with the changes applied. Files are read one YAML document at a
time, twice (the Namespace objects first, then the translation) and a rewritten manifest waits in a temporary file
until it is written: a run costs one file's text and one document's objects, whatever the size of the tree.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra.documents import Document, dump_documents, read_documents
from dra.errors import InputError
from policyengine import PolicySet

from ..objects import ObjectTranslation, namespaces_of, passed_through, translate_documents
from .files import read_manifest, write_atomically
from .kustomization import KUSTOMIZATION_NAMES, add_resource, find_kustomization, lists

__all__ = ["CLAIMS_SUFFIX", "EXIT_DENIED", "EXIT_INPUT", "TreeReport", "claims_file_for", "translate_tree"]

CLAIMS_SUFFIX = ".gpudra-claims.yaml"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
EXIT_DENIED = 1
EXIT_INPUT = 2


@dataclass
class TreeReport:
    """What a run found and did (paths relative to DIR); `code` is the exit code."""

    scanned: int = 0
    changed: list[str] = field(default_factory=list)
    claim_files: list[str] = field(default_factory=list)
    kustomizations: list[str] = field(default_factory=list)
    translated: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)

    @property
    def code(self) -> int:
        return EXIT_INPUT if self.errors else EXIT_DENIED if self.denied else 0


def claims_file_for(manifest: Path) -> Path:
    """`apps/vllm.yaml` → `apps/vllm.gpudra-claims.yaml`."""
    return manifest.with_name(manifest.stem + CLAIMS_SUFFIX)


def _manifests(root: Path) -> Iterator[Path]:
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(MANIFEST_SUFFIXES) and name not in KUSTOMIZATION_NAMES:
                yield Path(directory) / name


def _all_files(root: Path) -> Iterator[Path]:
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        yield from (Path(directory) / name for name in sorted(files))


def _key(rct: Mapping[str, Any]) -> tuple[str, str]:
    metadata = rct.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _dumped(template: Mapping[str, Any]) -> str:
    """One ResourceClaimTemplate as a document of the claims file."""
    return "---\n" + dump_documents([template])


@dataclass
class _Plan:
    """The new text of each file to write (absolute source paths), in the order they are written: the text itself,
    or the temporary file in `spool` that holds it (a rewritten manifest, of any length)."""

    spool: Path
    texts: dict[Path, str | Path] = field(default_factory=dict)
    mode_like: dict[Path, Path] = field(default_factory=dict)  # whose permission bits a new file takes

    def current(self, path: Path) -> str | None:
        if path in self.texts:
            planned = self.texts[path]
            return planned.read_bytes().decode("utf-8") if isinstance(planned, Path) else planned
        return path.read_text(encoding="utf-8") if path.is_file() else None


def _claims_text(path: Path, templates: Mapping[tuple[str, str], str], plan: _Plan) -> str | None:
    """The claims file's new text with `templates` (their documents, by namespace and name) added; None when it
    already has them all."""
    existing = plan.current(path)
    if existing is None:
        return "".join(templates.values())
    try:
        documents = read_documents(existing + "\n")
    except InputError as exc:
        raise InputError(exc.message, source=str(path), line=exc.line) from None
    if any(d.data.get("kind") != "ResourceClaimTemplate" for d in documents):
        raise InputError("exists and holds objects other than ResourceClaimTemplates; not touched", source=str(path))
    known = {_key(d.data) for d in documents}
    new = [text for key, text in templates.items() if key not in known]
    if not new:
        return None
    return existing + ("\n" if existing and not existing.endswith("\n") else "") + "".join(new)


def _kustomize(root: Path, manifest: Path, claims: Path, plan: _Plan, report: TreeReport) -> None:
    """List `claims` right after `manifest` in the nearest kustomization (up to `root`) that lists `manifest`."""
    directory, seen = manifest.parent, False
    while True:
        kustomization = find_kustomization(directory)
        if kustomization is not None:
            seen = True
            text = plan.current(kustomization) or ""
            entry = lists(kustomization, text, manifest)
            if entry is not None:
                if lists(kustomization, text, claims) is not None:
                    return
                new_entry = os.path.relpath(claims, kustomization.parent).replace(os.sep, "/")
                edited = add_resource(text, entry, new_entry)
                if edited is None:
                    report.warnings.append(
                        f"{kustomization.relative_to(root)}: could not add {new_entry} to resources: after {entry} "
                        "(flow style?); add it by hand"
                    )
                else:
                    plan.texts[kustomization] = edited
                return
        if directory == root or root not in directory.parents:
            break
        directory = directory.parent
    if seen:
        report.warnings.append(
            f"{manifest.relative_to(root)}: no kustomization lists it in resources:; list "
            f"{claims.name} wherever the manifest is included"
        )


@dataclass
class _Findings:
    """What one file's translation found, kept apart until the file is done (the report lists a file's pass-through
    warnings before its templates' warnings, as for a file read whole)."""

    passed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    translated: list[str] = field(default_factory=list)
    changed: bool = False

    def add(self, rel: str, objects: list[ObjectTranslation], errors: list[InputError]) -> None:
        """Record one group's translations, warnings, denials and input errors."""
        passed, unreadable = passed_through(errors)
        self.passed.extend(passed)
        self.errors.extend(str(e) for e in unreadable)
        for obj in objects:
            self.changed = self.changed or obj.changed
            for t in obj.templates:
                self.warnings.extend(f"{rel}: {t.pod.label}: {w}" for w in t.warnings)
                if t.denied:
                    self.denied.append(f"{rel}: {t.pod.label}: {t.decision.message}")
                elif t.translation.changed:
                    names = ", ".join(r["metadata"]["name"] for r in t.templates)
                    self.translated.append(f"{rel}: {t.pod.label} -> {names}")

    def report(self, report: TreeReport) -> None:
        report.warnings.extend(self.passed)
        report.errors.extend(self.errors)
        report.warnings.extend(self.warnings)
        report.denied.extend(self.denied)
        report.translated.extend(self.translated)


def _plan_file(
    root: Path, path: Path, policies: PolicySet, namespaces: dict[str, dict[str, Any]], ctx: _Context
) -> None:
    """Translate one file a group at a time, its new text spooled to a temporary file; plan it (with its claims and
    its kustomization's entry) when it changed and nothing in it failed."""
    rel = str(path.relative_to(root))
    found = _Findings()
    unique: dict[tuple[str, str], str] = {}  # the claims' documents (dumped at once: one per Pod can be many)
    failed: InputError | None = None  # the first document whose layout cannot be rewritten
    fd, name = tempfile.mkstemp(dir=ctx.plan.spool, suffix=".yaml")
    spooled = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            manifest = read_manifest(path)
            for chunk, documents in manifest.groups():
                objects, errors = translate_documents(documents, policies, ctx.namespace, namespaces)
                found.add(rel, objects, errors)
                unique.update((_key(r), _dumped(r)) for o in objects for r in o.claim_templates)
                if found.errors or found.denied or failed is not None:
                    continue  # nothing of this file will be written
                try:
                    out.write(manifest.rendered(chunk, documents, [o.result for o in objects]).encode("utf-8"))
                except InputError as exc:
                    failed = exc
    except InputError as exc:  # unreadable: it changed since the Namespace objects were read
        found.errors.append(str(exc))
    found.report(ctx.report)
    if found.errors or found.denied or not found.changed:
        spooled.unlink()
        return
    claims = claims_file_for(path)
    try:
        if failed is not None:
            raise failed
        claims_text = _claims_text(claims, unique, ctx.plan)
    except InputError as exc:
        ctx.report.errors.append(str(exc))
        spooled.unlink()
        return
    if claims_text is not None:
        ctx.plan.texts[claims] = claims_text
        ctx.plan.mode_like[claims] = path
        ctx.report.claim_files.append(str(claims.relative_to(root)))
    ctx.plan.texts[path] = spooled
    ctx.report.changed.append(rel)
    _kustomize(root, path, claims, ctx.plan, ctx.report)


@dataclass
class _Context:
    namespace: Mapping[str, Any] | None
    plan: _Plan
    report: TreeReport = field(default_factory=TreeReport)


def _check_out(root: Path, out: Path) -> None:
    resolved_root, resolved_out = root.resolve(), out.resolve()
    if resolved_out == resolved_root or resolved_root in resolved_out.parents or resolved_out in resolved_root.parents:
        raise InputError("--out must be outside the directory it copies (and not contain it)", source=str(out))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("--out must be a new or empty directory", source=str(out))


def _write(root: Path, out: Path | None, plan: _Plan) -> None:
    if out is not None:
        for source in _all_files(root):
            target = out / source.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for source, text in plan.texts.items():
        target = source if out is None else out / source.relative_to(root)
        write_atomically(target, text, mode_like=plan.mode_like.get(source))


def _scan(root: Path, report: TreeReport) -> tuple[list[Path], dict[str, dict[str, Any]]]:
    """The manifests under `root` that can be read, and the Namespace objects among them (every file read one
    document at a time; a file that cannot be read, or a symbolic link, is reported and left out)."""
    readable: list[Path] = []

    def namespace_objects() -> Iterable[Document]:
        for path in _manifests(root):
            report.scanned += 1
            if path.is_symlink():  # never read: it may lead out of the tree, and rewriting it would rewrite its target
                report.errors.append(f"{path}: a symbolic link; not read (translate the file it points to)")
                continue
            try:
                found = [d for d in read_manifest(path).documents() if d.data.get("kind") == "Namespace"]
            except InputError as exc:
                report.errors.append(str(exc))
                continue
            readable.append(path)
            yield from found

    return readable, namespaces_of(namespace_objects())


def translate_tree(
    root: Path,
    policies: PolicySet,
    *,
    out: Path | None = None,
    namespace: Mapping[str, Any] | None = None,
    dry_run: bool = False,
) -> TreeReport:
    """Translate every manifest under `root` (see the module's docstring); `dry_run` plans and writes nothing."""
    if not root.is_dir():
        raise InputError("not a directory (-R takes a directory of manifests)", source=str(root))
    if out is not None:
        _check_out(root, out)
    with tempfile.TemporaryDirectory(prefix="gpudra-translate-") as spool:
        ctx = _Context(namespace, _Plan(Path(spool)))
        readable, namespaces = _scan(root, ctx.report)
        for path in readable:
            _plan_file(root, path, policies, namespaces, ctx)
        ctx.report.kustomizations = [str(p.relative_to(root)) for p in ctx.plan.texts if p.name in KUSTOMIZATION_NAMES]
        if not dry_run:
            _write(root, out, ctx.plan)
    return ctx.report
