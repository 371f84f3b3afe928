"""`gpudra translate FILE` over a stream of any length: one document at a time, over worker processes when long.

Each document is read (`dra.documents.iter_text_documents`), translated and rendered to text on its own
(`document_result`), and merged in stream order (`Found.merge`): the output is held as text, never as objects.

A long stream (`PARALLEL_MIN_CHARS`, or any with `jobs` >= 2) is cut at its `---` lines into batches of whole
documents, and each batch is read, translated and rendered in a forked worker that inherited the policies, the
Namespace objects and the options (nothing is pickled but the batch's bounds and its rendered text and messages).
The batches come back in order and are merged as one process merges its documents, so the output, the messages
and the exit code are the same. A stream that could read differently once cut stays in one process: aliases (the
alias allowance counts across the whole stream), directives (`%YAML`, `%TAG`), `...` markers, line breaks other
than `\\n` (line numbers count them), a byte-order mark, JSON. (An alias named with a leading quote is not seen:
its batch still has the whole allowance, so any stream stays bounded by the batches times `MAX_ALIAS_NODES`.)
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dra.documents import Document, iter_text_documents
from dra.errors import InputError
from manifest_translation import TemplateTranslation, namespaces_of, passed_through, translate_documents
from policyengine import PolicySet
from policyengine.k8s_features import unserved_features

from ..render.translation import Rendered, TranslationOutput, rendered

__all__ = ["PARALLEL_MIN_CHARS", "Found", "translate_stream"]

Progress = Callable[[int, int], None]

# Below this a stream is translated in one process: forking and merging cost more than they save.
PARALLEL_MIN_CHARS = 4_000_000
_MAX_JOBS = 8
_BATCHES_PER_JOB = 8
_MIN_BATCH_CHARS = 256 * 1024
_DOCUMENT_START = re.compile(r"^---(?=[ \t\n]|$)", re.MULTILINE)
# What keeps a stream from being cut at its `---` lines: a directive or `...` line, a line break other than LF or
# a BOM (each document would read differently, or at other lines).
_UNSPLITTABLE = re.compile(r"^(?:%|\.\.\.(?:[ \t\n]|$))|[\r\x85\u2028\u2029\ufeff]", re.MULTILINE)
# And what keeps it in one process besides: an alias (`*name` where a node starts; a quoted "0 2 * * *" or
# --include=*.py has none, a quote never starts a name here), as the alias allowance counts across the stream.
_ALIAS = re.compile(r"(?:^|(?<=[\s\[{,]))\*[^\s\[\]{},\"']", re.MULTILINE)


@dataclass
class _DocumentResult:
    """One document translated: its messages and its rendered output (picklable: strings and tuples)."""

    kind: str
    unknown: list[str]
    errors: list[str]
    denied: list[tuple[str, str]]  # (template label, message)
    warnings: list[tuple[str, str]]
    unserved: list[tuple[str, str]]
    translations: int
    first_is_pod: bool
    output: list[Rendered]


@dataclass
class Found:
    """What a pass over the stream keeps besides the output text: messages, the kinds seen, the first translation."""

    unknown: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    denied: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    unserved: list[tuple[str, str]] = field(default_factory=list)  # what the target cluster would not serve
    kinds: set[str] = field(default_factory=set)
    translations: int = 0
    first_is_pod: bool = False  # the first translation is a Pod's (its messages then go unlabelled)
    jobs: int = 1  # the processes that translated the stream

    def merge(self, result: _DocumentResult, out: TranslationOutput) -> None:
        """Add one document's result, in stream order; its output only while nothing has failed."""
        self.kinds.add(result.kind)
        self.unknown.extend(result.unknown)
        self.errors.extend(result.errors)
        self.denied.extend(result.denied)
        self.warnings.extend(result.warnings)
        self.unserved.extend(result.unserved)
        if result.translations and not self.translations:
            self.first_is_pod = result.first_is_pod
        self.translations += result.translations
        if not self.errors and not self.denied:
            for piece in result.output:
                out.add_rendered(piece)


@dataclass(frozen=True)
class _Job:
    """What every document is translated with."""

    policies: PolicySet
    namespace: Mapping[str, Any] | None
    known: dict[str, dict[str, Any]]
    minor: int | None
    fmt: Literal["yaml", "json"]


def _unserved(t: TemplateTranslation, minor: int) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for template in t.templates:
        spec = (template.get("spec") or {}).get("spec") or {}
        name = template["metadata"]["name"]
        found.extend((t.pod.label, f"ResourceClaimTemplate {name} {w}") for w in unserved_features(spec, minor))
    return found


def document_result(document: Document, job: _Job) -> _DocumentResult:
    """Translate and render one document."""
    objects, all_errors = translate_documents([document], job.policies, job.namespace, job.known)
    unknown, errors = passed_through(all_errors)
    translations = [t for o in objects for t in o.templates]
    first = translations[0] if translations else None
    return _DocumentResult(
        kind=str(document.data.get("kind") or "<no kind>"),
        unknown=unknown,
        errors=[str(e) for e in errors],
        denied=[(t.pod.label, t.decision.message) for t in translations if t.denied],
        warnings=[(t.pod.label, w) for t in translations for w in t.warnings],
        unserved=[u for t in translations for u in _unserved(t, job.minor)] if job.minor is not None else [],
        translations=len(translations),
        first_is_pod=first is not None and first.pod.is_pod,
        output=[rendered(job.fmt, obj) for obj in objects],
    )


def _batches(text: str, jobs: int) -> list[tuple[int, int, int]]:
    """(start, end, first line) of batches of whole documents, cut at `---` lines, about `jobs` * 8 of them."""
    size = max(_MIN_BATCH_CHARS, len(text) // (jobs * _BATCHES_PER_JOB))
    batches: list[tuple[int, int, int]] = []
    start, line = 0, 1
    for marker in _DOCUMENT_START.finditer(text):
        cut = marker.start()
        if cut - start >= size:
            batches.append((start, cut, line))
            line += text.count("\n", start, cut)
            start = cut
    batches.append((start, len(text), line))
    return batches


# The stream and job of a parallel run, set in the parent before the workers fork (they inherit it).
_SHARED: tuple[str, str, _Job] | None = None


def _batch_results(bounds: tuple[int, int, int]) -> tuple[list[_DocumentResult], str | None]:
    """A worker's batch: its documents' results, and the error that stopped reading it (lines as in the stream)."""
    assert _SHARED is not None
    text, name, job = _SHARED
    start, end, first_line = bounds
    offset = first_line - 1
    results: list[_DocumentResult] = []
    try:
        for document in iter_text_documents(text[start:end], name):
            results.append(document_result(document._replace(line=document.line + offset), job))
    except InputError as exc:
        line = exc.line + offset if exc.line is not None else None
        return results, str(InputError(exc.message, source=exc.source, line=line))
    return results, None


def _splittable(text: str) -> bool:
    return not text.lstrip().startswith(("{", "[")) and _UNSPLITTABLE.search(text) is None


def _jobs_for(text: str, jobs: int | None) -> int:
    """How many worker processes the stream gets (1: translated in this process)."""
    if jobs == 1 or (jobs is None and len(text) < PARALLEL_MIN_CHARS):
        return 1
    import multiprocessing  # only for a stream big enough to share out

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1  # forking a process that runs other threads may deadlock the child
    if not _splittable(text) or _ALIAS.search(text):
        return 1
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(jobs, _MAX_JOBS))


def _namespace_candidates(text: str, name: str, *, cut: bool) -> Iterator[Document]:
    """The documents that may be Namespaces: all of them, or (a stream that can be cut) those whose text names one.
    An unreadable document is left to the translation pass, which reports it where it is."""
    if not cut:
        yield from iter_text_documents(text, name)
        return
    starts = [0, *(m.start() for m in _DOCUMENT_START.finditer(text)), len(text)]
    for start, end in zip(starts, starts[1:], strict=False):
        if text.find("Namespace", start, end) >= 0:
            try:
                yield from list(iter_text_documents(text[start:end], name))
            except InputError:
                continue


def _one_process(text: str, name: str, job: _Job, progress: Progress | None) -> Iterator[_DocumentResult]:
    for document in iter_text_documents(text, name, progress):
        yield document_result(document, job)


def translate_stream(
    text: str,
    name: str,
    policies: PolicySet,
    namespace: Mapping[str, Any] | None,
    minor: int | None,
    out: TranslationOutput,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Found:
    """Translate the stream into `out` (which stops growing at the first failure) and return what was found.

    `jobs`: worker processes (None: as many as this process may use, up to 8, for a stream of
    `PARALLEL_MIN_CHARS` or more; 1: this process). Raises `InputError` for the first unreadable document."""
    global _SHARED
    workers = _jobs_for(text, jobs)
    known: dict[str, dict[str, Any]] = {}
    if namespace is None and "Namespace" in text:  # a pod is decided in its Namespace, wherever the stream has it
        known = namespaces_of(_namespace_candidates(text, name, cut=_splittable(text)))
    job = _Job(policies, namespace, known, minor, out.fmt)
    found = Found()
    batches = _batches(text, workers) if workers > 1 else []
    if len(batches) < 2:
        for result in _one_process(text, name, job, progress):
            found.merge(result, out)
        return found
    found.jobs = min(workers, len(batches))
    _SHARED = (text, name, job)
    try:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(found.jobs) as pool:
            for (_, end, _), (results, error) in zip(batches, pool.imap(_batch_results, batches), strict=True):
                for result in results:
                    found.merge(result, out)
                if error is not None:
                    raise InputError(error)
                if progress is not None:
                    progress(end, len(text))
    finally:
        _SHARED = None
    return found
