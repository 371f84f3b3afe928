"""Translating the pod templates of Kubernetes objects ahead of admission (`gpudra translate`, `policy explain`).

Each pod template an object holds (`workloads.pod_templates`) is decided as the pod its controller stamps out: the
template's metadata and spec, in the workload's namespace, with what the controller adds (`workloads.controller_pod`:
the operators' labels, env and commands), so the decision is the webhook's for that pod; what else the kind needs
when a template changes (its record's `effects`) is applied beside it. An enforced decision rewrites the template
(as written, without those additions) in a copy of the object and adds the ResourceClaimTemplate it names, called
after the workload and the template's role (`<workload>[-<role>]-<hash>`, the hash still the claim spec's, so
identical requests of one template share it).
Those templates belong to the manifests, not to the webhook: they carry no `app.kubernetes.io/managed-by: gpudra`
label, so `gpudra gc` never deletes one a Deployment scaled to zero still needs, and they sit in the workload's
namespace (none when the workload names none, as kustomize and `kubectl apply -n` expect).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra.documents import Document
from dra.errors import InputError
from policyengine import Decision, PolicySet
from policyengine.denial import AdmissionDenied
from policyengine.pod_shape import check_pod_shape
from policyengine.translate import MANAGED_BY, TEMPLATE_PREFIX, Translation, pointer, translate
from workloads import PodTemplate, UnknownWorkload, controller_pod, dotted, pod_templates, workload_kind

__all__ = [
    "SOURCE_ANNOTATION",
    "ObjectTranslation",
    "TemplatePod",
    "TemplateTranslation",
    "namespace_for",
    "passed_through",
    "namespaces_of",
    "template_pods",
    "template_prefix",
    "translate_documents",
    "translate_template",
]

SOURCE_ANNOTATION = "gpudra.io/translated-from"

_MAX_NAME = 253  # a ResourceClaimTemplate's name is a DNS subdomain
_HASH_PART = 11  # "-" and ten hex digits


def _metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def template_prefix(*parts: str) -> str:
    """`parts` joined by `-` as the start of a DNS-subdomain name: lowercase, other characters as `-`, at most
    242 characters (the name's limit less the hash), `gpudra` when nothing usable is left."""
    raw = "-".join(p for p in parts if p).lower()
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", raw)
    cleaned = re.sub(r"-{2,}", "-", cleaned).strip("-.")
    cleaned = cleaned[: _MAX_NAME - _HASH_PART].rstrip("-.")
    return cleaned or TEMPLATE_PREFIX


@dataclass(frozen=True)
class TemplatePod:
    """One pod template of a document, as the pod the policies decide (`pod`), and how to name and place it."""

    document: Document
    template: PodTemplate
    pod: dict[str, Any]
    added: tuple[str, ...]  # metadata keys the pod has that the template does not
    # The pod as the workload's controller creates it (`workloads.controller_pod`): what the policies decide,
    # so that the webhook, deciding that pod at admission, gives the same claim. `pod` is what is rewritten.
    decided: dict[str, Any] = field(default_factory=dict)

    @property
    def obj(self) -> dict[str, Any]:
        return self.document.data

    @property
    def kind(self) -> str:
        return _text(self.obj.get("kind"))

    @property
    def name(self) -> str:
        metadata = _metadata(self.obj)
        return _text(metadata.get("name")) or _text(metadata.get("generateName"))

    @property
    def namespace(self) -> str:
        return _text(_metadata(self.obj).get("namespace"))

    @property
    def is_pod(self) -> bool:
        return not self.template.path

    @property
    def where(self) -> str:
        return dotted(self.template.path)

    @property
    def label(self) -> str:
        """`Deployment team-a/vllm spec.template`, `Pod team-a/x` (as messages name the template)."""
        name = (f"{self.namespace}/" if self.namespace else "") + (self.name or "<unnamed>")
        return f"{self.kind} {name}" + (f" {self.where}" if self.where else "")

    @property
    def prefix(self) -> str:
        metadata = _metadata(self.obj)
        owner = _text(metadata.get("name")) or _text(metadata.get("generateName")).rstrip("-")
        return template_prefix(owner, self.template.role)


def _template_pod(document: Document, template: PodTemplate) -> TemplatePod:
    if not template.path:
        return TemplatePod(document, template, document.data, (), document.data)
    metadata = dict(template.template.get("metadata") or {})
    added: list[str] = []
    owner = _metadata(document.data)
    namespace = _text(owner.get("namespace"))
    if namespace and "namespace" not in metadata:
        metadata["namespace"] = namespace
        added.append("namespace")
    if not metadata.get("name") and not metadata.get("generateName"):
        base = _text(owner.get("name")) or _text(owner.get("generateName")).rstrip("-") or "pod"
        metadata["generateName"] = f"{base}-"
        added.append("generateName")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.template["spec"]}
    return TemplatePod(document, template, pod, tuple(added), controller_pod(document.data, template, pod))


def _input_error(document: Document, message: str) -> InputError:
    return InputError(message, source=document.source, line=document.line)


def template_pods(document: Document) -> list[TemplatePod]:
    """The pod templates of one document as pods, checked as the webhook checks a pod (`InputError` naming the file,
    line, object and field otherwise); [] for an object that asks for no GPUs and holds no pod template."""
    try:
        templates = pod_templates(document.data)
    except UnknownWorkload as exc:  # kept apart: a kind gpudra cannot rewrite ahead of time, not unreadable input
        raise UnknownWorkload(exc.message, source=document.source, line=document.line) from None
    except InputError as exc:
        raise _input_error(document, exc.message) from None
    pods = [_template_pod(document, t) for t in templates]
    for pod in pods:
        try:
            check_pod_shape(pod.pod)  # the template as written, then as its controller stamps it
            check_pod_shape(pod.decided)
        except AdmissionDenied as exc:
            detail = exc.message.removeprefix("gpudra: ")
            raise _input_error(document, f"{pod.label}: {detail}") from None
    return pods


@dataclass(frozen=True)
class TemplateTranslation:
    """The decision on one pod template and what it changes: the rewritten template, the ResourceClaimTemplates
    it names, the patch against the whole object (paths from the object's root) and the warnings."""

    pod: TemplatePod
    decision: Decision
    translation: Translation
    templates: tuple[dict[str, Any], ...]
    patch: tuple[dict[str, Any], ...]
    # Fields of the object outside the template that change with it (a Ray group's rayStartParams), by path.
    object_changes: tuple[tuple[tuple[str | int, ...], Any], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def denied(self) -> bool:
        return not self.decision.allowed

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.translation.warnings + self.notes

    def rewritten_template(self) -> dict[str, Any]:
        """The pod template (or the Pod) after the decision; the original mapping when nothing changed."""
        if not self.translation.changed:
            return self.pod.template.template
        mutated = self.translation.pod
        if self.pod.is_pod:
            return mutated
        metadata = {k: v for k, v in mutated["metadata"].items() if k not in self.pod.added}
        original = self.pod.template.template
        rewritten: dict[str, Any] = {} if "metadata" in original else {"metadata": metadata}
        for key, value in original.items():
            rewritten[key] = metadata if key == "metadata" else mutated["spec"] if key == "spec" else value
        return rewritten


@dataclass(frozen=True)
class ObjectTranslation:
    """One input object: its pod templates' translations and the object to write back (`result`)."""

    document: Document
    templates: tuple[TemplateTranslation, ...] = ()
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(t.translation.changed for t in self.templates)

    @property
    def claim_templates(self) -> list[dict[str, Any]]:
        return [rct for t in self.templates for rct in t.templates]


def _owned_template(rct: dict[str, Any], pod: TemplatePod, namespace: str) -> dict[str, Any]:
    metadata = dict(rct["metadata"])
    labels = {k: v for k, v in (metadata.pop("labels", None) or {}).items() if MANAGED_BY.get(k) != v}
    metadata.pop("namespace", None)
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    metadata["annotations"] = {SOURCE_ANNOTATION: f"{pod.kind}/{pod.name}" + (f" {pod.where}" if pod.where else "")}
    return {**rct, "metadata": metadata}


def _prefixed(ops: Iterable[dict[str, Any]], base: str) -> tuple[dict[str, Any], ...]:
    return tuple({**op, "path": base + op["path"]} for op in ops)


def _replaced(value: Any, path: tuple[str | int, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, list) and isinstance(head, int):
        items = list(value)
        items[head] = _replaced(value[head], rest, new)
        return items
    copied = dict(value)
    copied[head] = _replaced(value[head], rest, new)
    return copied


def _set_at(obj: dict[str, Any], path: tuple[str | int, ...], value: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj` with `value` at `path`, copying only the containers on the way (the rest is shared)."""
    result: dict[str, Any] = _replaced(obj, path, value)
    return result


def _set_at_new(obj: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A copy of `obj` with `value` at `path`, whose last key may be new (its parent exists)."""
    parent: Any = obj
    for part in path[:-1]:
        parent = parent[part]
    updated = {**parent, path[-1]: value}
    return _set_at(obj, path[:-1], updated) if path[:-1] else updated


def namespace_for(
    pod: TemplatePod, namespace: Mapping[str, Any] | None, namespaces: Mapping[str, dict[str, Any]]
) -> tuple[Mapping[str, Any] | None, str]:
    """The Namespace object the template is decided in, and the namespace its ResourceClaimTemplate goes to."""
    if namespace is not None:
        return namespace, pod.namespace or _text(_metadata(namespace).get("name"))
    if pod.namespace:
        return namespaces.get(pod.namespace), pod.namespace
    if len(namespaces) == 1:
        (only,) = namespaces.values()
        return only, ""
    return None, ""


def translate_template(
    pod: TemplatePod,
    policies: PolicySet,
    namespace: Mapping[str, Any] | None = None,
    namespaces: Mapping[str, dict[str, Any]] | None = None,
) -> TemplateTranslation:
    """Decide and translate one pod template (see the module's docstring for the naming and placement rules)."""
    namespace_object, target = namespace_for(pod, namespace, namespaces or {})
    decision = policies.evaluate(pod.decided or pod.pod, namespace_object)
    translation = translate(pod.pod, decision, pod.prefix)
    templates = tuple(_owned_template(rct, pod, target) for rct in translation.templates)
    patch = _prefixed(_template_ops(pod, translation), pointer(*pod.template.path))
    changes, notes = _effects(pod, translation)
    for path, value in changes:
        patch += ({"op": "add", "path": pointer(*path), "value": value},)
    return TemplateTranslation(pod, decision, translation, templates, patch, changes, notes)


def _effects(
    pod: TemplatePod, translation: Translation
) -> tuple[tuple[tuple[tuple[str | int, ...], Any], ...], tuple[str, ...]]:
    """What else the object needs when the template changed (its kind's `effects`: KubeRay's `num-gpus`, notes)."""
    known = workload_kind(pod.obj)
    if not translation.changed or known is None or known.effects is None:
        return (), ()
    effects = known.effects(pod.obj, pod.template, translation.pod)
    return effects.changes, effects.notes


def _template_ops(pod: TemplatePod, translation: Translation) -> tuple[dict[str, Any], ...]:
    """The translation's patch as it applies to the template: the pod the policies saw always has metadata (its
    namespace and generated name), so a template without `metadata` gets the whole rewritten metadata in one op
    instead of ops under a `/metadata` it does not have."""
    template = pod.template.template
    if pod.is_pod or not translation.changed or isinstance(template.get("metadata"), dict):
        return translation.patch
    metadata = {k: v for k, v in translation.pod["metadata"].items() if k not in pod.added}
    ops = [op for op in translation.patch if not op["path"].startswith("/metadata")]
    return (*ops, {"op": "add", "path": "/metadata", "value": metadata})


def namespaces_of(documents: Iterable[Document]) -> dict[str, dict[str, Any]]:
    """The Namespace objects among `documents`, by name."""
    found: dict[str, dict[str, Any]] = {}
    for document in documents:
        if document.data.get("kind") == "Namespace" and workload_kind(document.data) is None:
            name = _text(_metadata(document.data).get("name"))
            if name:
                found.setdefault(name, document.data)
    return found


def translate_documents(
    documents: Sequence[Document],
    policies: PolicySet,
    namespace: Mapping[str, Any] | None = None,
    namespaces: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[list[ObjectTranslation], list[InputError]]:
    """Every document translated, in order, and the input errors of those that could not be read.

    A document with an error, or with a denied template, comes back unchanged (`result` is the input object).
    `namespaces` are the Namespace objects known besides `documents`'s own; `namespace` overrides them all.
    """
    known = {**namespaces_of(documents), **(namespaces or {})}
    results: list[ObjectTranslation] = []
    errors: list[InputError] = []
    for document in documents:
        try:
            pods = template_pods(document)
        except InputError as exc:
            errors.append(exc)
            results.append(ObjectTranslation(document, (), document.data))
            continue
        translated = tuple(translate_template(p, policies, namespace, known) for p in pods)
        result = document.data
        if not any(t.denied for t in translated):
            for t in translated:
                if t.translation.changed:
                    result = _set_at(result, t.pod.template.path, t.rewritten_template())
                for path, value in t.object_changes:
                    result = _set_at_new(result, path, value)
        results.append(ObjectTranslation(document, translated, result))
    return results, errors


def passed_through(errors: Sequence[InputError]) -> tuple[list[str], list[InputError]]:
    """`translate_documents`' errors split: warnings for the objects of a kind gpudra cannot rewrite ahead of time
    (they stay as they are; their pods are translated at admission), and the errors of unreadable input."""
    warnings = [
        f"{e}; passed through unchanged: `gpudra serve` translates its pods when they are created"
        for e in errors
        if isinstance(e, UnknownWorkload)
    ]
    return warnings, [e for e in errors if not isinstance(e, UnknownWorkload)]
