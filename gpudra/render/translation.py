"""`gpudra translate` results as text: the rewritten objects as a YAML stream or JSON, and the `-R` summary."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dra.documents import dump_documents
from manifest_translation import ObjectTranslation, TemplateTranslation

__all__ = ["Rendered", "TranslationOutput", "objects_with_templates", "rendered", "translation_json", "tree_table"]


def _key(rct: dict[str, Any]) -> tuple[str, str]:
    metadata = rct.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def objects_with_templates(objects: Sequence[ObjectTranslation]) -> list[dict[str, Any]]:
    """Every object in input order, each followed by the ResourceClaimTemplates it is the first to need."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for obj in objects:
        out.append(obj.result)
        for rct in obj.claim_templates:
            if _key(rct) not in seen:
                seen.add(_key(rct))
                out.append(rct)
    return out


def _translation_entry(t: TemplateTranslation) -> dict[str, Any]:
    return {
        "kind": t.pod.kind,
        "name": t.pod.name,
        "namespace": t.pod.namespace,
        "path": t.pod.where,
        "role": t.pod.template.role,
        "policy": t.decision.policy,
        "templates": [r["metadata"]["name"] for r in t.templates],
        "patch": list(t.patch),
        "warnings": list(t.warnings),
    }


def translation_json(objects: Sequence[ObjectTranslation]) -> dict[str, Any]:
    """`{"objects", "templates", "translations"}`: the rewritten objects, the templates they need, and per pod
    template its object, path, template names, patch (paths from the object's root) and warnings."""
    templates = [o for o in objects_with_templates(objects) if o.get("kind") == "ResourceClaimTemplate"]
    translations = [_translation_entry(t) for obj in objects for t in obj.templates]
    return {"objects": [o.result for o in objects], "templates": templates, "translations": translations}


@dataclass(frozen=True)
class Rendered:
    """One object as `TranslationOutput` prints it: its text, its templates' texts by key, its translations'."""

    obj: str
    templates: tuple[tuple[tuple[str, str], str], ...]
    translations: tuple[str, ...] = ()


def rendered(fmt: Literal["yaml", "json"], obj: ObjectTranslation) -> Rendered:
    """The object's text in `fmt` (YAML documents, or JSON items as `translation_json` indents them)."""
    if fmt == "yaml":
        templates = tuple((_key(rct), dump_documents([rct])) for rct in obj.claim_templates)
        return Rendered(dump_documents([obj.result]), templates)
    return Rendered(
        _json_item(obj.result),
        tuple((_key(rct), _json_item(rct)) for rct in obj.claim_templates),
        tuple(_json_item(_translation_entry(t)) for t in obj.templates),
    )


class TranslationOutput:
    """What `gpudra translate` prints, built one object at a time so that a long stream is held as text, never as
    objects: the YAML stream of `objects_with_templates`, or the JSON of `translation_json` (the same text as
    `json.dumps(translation_json(objects), indent=2)`)."""

    def __init__(self, fmt: Literal["yaml", "json"]) -> None:
        self.fmt = fmt
        self._seen: set[tuple[str, str]] = set()
        self._parts: dict[str, list[str]] = {"objects": [], "templates": [], "translations": []}

    def add(self, obj: ObjectTranslation) -> None:
        """The object, then the ResourceClaimTemplates it is the first to need."""
        self.add_rendered(rendered(self.fmt, obj))

    def add_rendered(self, piece: Rendered) -> None:
        """`add` of an object rendered elsewhere (`rendered`, in a worker process)."""
        templates: list[str] = []
        for key, text in piece.templates:
            if key not in self._seen:
                self._seen.add(key)
                templates.append(text)
        if self.fmt == "yaml":  # one stream: documents joined by `---` lines, as `dump_documents` joins them
            self._parts["objects"].append("---\n".join([piece.obj, *templates]))
            return
        self._parts["objects"].append(piece.obj)
        self._parts["templates"].extend(templates)
        self._parts["translations"].extend(piece.translations)

    def text(self) -> str:
        if self.fmt == "yaml":
            return "---\n".join(self._parts["objects"])
        fields = ",\n".join(
            f"  {json.dumps(name)}: " + ("[\n" + ",\n".join(items) + "\n  ]" if items else "[]")
            for name, items in self._parts.items()
        )
        return "{\n" + fields + "\n}\n"


def _json_item(value: Any) -> str:
    """`value` as `json.dumps(..., indent=2)` writes it two levels down (an item of a list in an object)."""
    return "\n".join("    " + line for line in json.dumps(value, indent=2).split("\n"))


if TYPE_CHECKING:
    from rich.table import Table


def tree_table(scanned: int, changed: int, claim_files: int, kustomizations: int, errors: int) -> Table:
    """The `-R` summary as one row of counts."""
    from rich.table import Table

    table = Table(title="gpudra translate -R")
    for column in ("files scanned", "changed", "claim files written", "kustomizations updated", "errors"):
        table.add_column(column, justify="right")
    table.add_row(*(str(n) for n in (scanned, changed, claim_files, kustomizations, errors)))
    return table
