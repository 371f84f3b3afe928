"""The inputs `gpudra translate` and `gpudra policy explain` share: the objects of a file, a Namespace file, and the
pod templates among the objects."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dra.documents import Document, read_documents
from dra.errors import InputError
from manifest_translation import TemplatePod, template_pods

__all__ = ["nothing_to_translate", "read_namespace", "read_objects", "template_pods_of"]

Source = str | os.PathLike[str]


def read_objects(file: Source) -> list[Document]:
    """Every object of a file (`-` is stdin): multi-document YAML, JSON, `List`s expanded."""
    return read_documents("-" if str(file) == "-" else Path(file))


def read_namespace(file: Source | None) -> dict[str, Any] | None:
    """The first Namespace object of `file` (None without a file)."""
    if file is None:
        return None
    for document in read_documents(Path(file)):
        if document.data.get("kind") == "Namespace":
            return document.data
    raise InputError("no Namespace object in the file", source=str(file))


def template_pods_of(documents: Sequence[Document]) -> tuple[list[TemplatePod], list[InputError]]:
    """The pod templates of every document in order, and the errors of the documents that could not be read."""
    pods: list[TemplatePod] = []
    errors: list[InputError] = []
    for document in documents:
        try:
            pods.extend(template_pods(document))
        except InputError as exc:
            errors.append(exc)
    return pods, errors


def nothing_to_translate(file: Source, documents: Sequence[Document]) -> InputError:
    """The error for a file with no pod template at all, naming the kinds it does hold."""
    kinds = sorted({str(d.data.get("kind") or "<no kind>") for d in documents})
    found = f"found {', '.join(kinds)}" if kinds else "the file holds no objects"
    return InputError(f"no Pod object in the file, nor a workload with a pod template ({found})", source=str(file))
