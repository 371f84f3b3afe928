"""`gpudra translate` results as text: the rewritten objects as a YAML stream or JSON, and the `-R` summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from policyengine.workload_translation import ObjectTranslation

__all__ = ["objects_with_templates", "translation_json", "tree_table"]


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


def translation_json(objects: Sequence[ObjectTranslation]) -> dict[str, Any]:
    """`{"objects", "templates", "translations"}`: the rewritten objects, the templates they need, and per pod
    template its object, path, template names, patch (paths from the object's root) and warnings."""
    templates = [o for o in objects_with_templates(objects) if o.get("kind") == "ResourceClaimTemplate"]
    translations = [
        {
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
        for obj in objects
        for t in obj.templates
    ]
    return {"objects": [o.result for o in objects], "templates": templates, "translations": translations}


def tree_table(scanned: int, changed: int, claim_files: int, kustomizations: int, errors: int) -> Table:
    """The `-R` summary as one row of counts."""
    table = Table(title="gpudra translate -R")
    for column in ("files scanned", "changed", "claim files written", "kustomizations updated", "errors"):
        table.add_column(column, justify="right")
    table.add_row(*(str(n) for n in (scanned, changed, claim_files, kustomizations, errors)))
    return table
