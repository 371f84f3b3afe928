"""`gpudra translate -R DIR`: a directory of manifests rewritten for DRA, the GitOps way.

Every `*.yaml`, `*.yml` and `*.json` below DIR (hidden directories and kustomization files aside) is read; a file
whose pod templates the policies translate is rewritten (only its changed documents; see `manifest_files`), and
the ResourceClaimTemplates it now names go to `<name>.gpudra-claims.yaml` beside it (extended, never duplicated,
when it exists). The nearest kustomization that lists the file in `resources:` gets the claims file listed right
after it. A file with an error (unreadable, an unknown kind holding GPU requests, a denied template) is left as it
is and reported. Without `out`, DIR is rewritten in place; with it, DIR is left alone and `out` receives a full
copy of the tree (unchanged files byte for byte) with the changes applied.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra.documents import Document, dump_documents, read_documents
from dra.errors import InputError
from policyengine import PolicySet

from ..objects import ObjectTranslation, namespaces_of, passed_through, translate_documents
from .files import ManifestFile, read_manifest, write_atomically
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


def _stream(objects: list[dict[str, Any]]) -> str:
    return "".join("---\n" + dump_documents([o]) for o in objects)


@dataclass
class _Plan:
    """The new text of each file to write (absolute source paths), in the order they are written."""

    texts: dict[Path, str] = field(default_factory=dict)
    mode_like: dict[Path, Path] = field(default_factory=dict)  # whose permission bits a new file takes

    def current(self, path: Path) -> str | None:
        if path in self.texts:
            return self.texts[path]
        return path.read_text(encoding="utf-8") if path.is_file() else None


def _claims_text(path: Path, templates: list[dict[str, Any]], plan: _Plan) -> str | None:
    """The claims file's new text with `templates` added (None when it already has them all)."""
    existing = plan.current(path)
    if existing is None:
        return _stream(templates)
    try:
        documents = read_documents(existing + "\n")
    except InputError as exc:
        raise InputError(exc.message, source=str(path), line=exc.line) from None
    if any(d.data.get("kind") != "ResourceClaimTemplate" for d in documents):
        raise InputError("exists and holds objects other than ResourceClaimTemplates; not touched", source=str(path))
    known = {_key(d.data) for d in documents}
    new = [t for t in templates if _key(t) not in known]
    if not new:
        return None
    return existing + ("\n" if existing and not existing.endswith("\n") else "") + _stream(new)


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


def _file_messages(rel: str, objects: list[ObjectTranslation], report: TreeReport) -> bool:
    """Record the file's translations, warnings and denials; True when any template was denied."""
    denied = False
    for obj in objects:
        for t in obj.templates:
            report.warnings.extend(f"{rel}: {t.pod.label}: {w}" for w in t.warnings)
            if t.denied:
                denied = True
                report.denied.append(f"{rel}: {t.pod.label}: {t.decision.message}")
            elif t.translation.changed:
                names = ", ".join(r["metadata"]["name"] for r in t.templates)
                report.translated.append(f"{rel}: {t.pod.label} -> {names}")
    return denied


def _plan_file(
    root: Path, manifest: ManifestFile, policies: PolicySet, namespaces: dict[str, dict[str, Any]], ctx: _Context
) -> None:
    rel = str(manifest.path.relative_to(root))
    objects, found = translate_documents(list(manifest.documents), policies, ctx.namespace, namespaces)
    warnings, errors = passed_through(found)
    ctx.report.warnings.extend(warnings)
    ctx.report.errors.extend(str(e) for e in errors)
    denied = _file_messages(rel, objects, ctx.report)
    if errors or denied or not any(o.changed for o in objects):
        return
    try:
        text = manifest.rewritten([o.result for o in objects])
        claims = claims_file_for(manifest.path)
        unique = {_key(r): r for o in objects for r in o.claim_templates}
        claims_text = _claims_text(claims, list(unique.values()), ctx.plan)
    except InputError as exc:
        ctx.report.errors.append(str(exc))
        return
    if claims_text is not None:
        ctx.plan.texts[claims] = claims_text
        ctx.plan.mode_like[claims] = manifest.path
        ctx.report.claim_files.append(str(claims.relative_to(root)))
    ctx.plan.texts[manifest.path] = text
    ctx.report.changed.append(rel)
    _kustomize(root, manifest.path, claims, ctx.plan, ctx.report)


@dataclass
class _Context:
    namespace: Mapping[str, Any] | None
    plan: _Plan = field(default_factory=_Plan)
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
    ctx = _Context(namespace)
    manifests: list[ManifestFile] = []
    for path in _manifests(root):
        ctx.report.scanned += 1
        if path.is_symlink():  # never read: it may lead out of the tree, and rewriting it would rewrite its target
            ctx.report.errors.append(f"{path}: a symbolic link; not read (translate the file it points to)")
            continue
        try:
            manifests.append(read_manifest(path))
        except InputError as exc:
            ctx.report.errors.append(str(exc))
    documents: list[Document] = [d for m in manifests for d in m.documents]
    namespaces = namespaces_of(documents)
    for manifest in manifests:
        _plan_file(root, manifest, policies, namespaces, ctx)
    ctx.report.kustomizations = [str(p.relative_to(root)) for p in ctx.plan.texts if p.name in KUSTOMIZATION_NAMES]
    if not dry_run:
        _write(root, out, ctx.plan)
    return ctx.report
