"""Rewriting a directory of manifests ahead of the webhook (`gpudra translate -R`): every workload's pod templates
translated by the policies, the ResourceClaimTemplates written beside it and listed in its kustomization, files
replaced atomically and left byte-identical where nothing changes."""

from __future__ import annotations

from .files import ManifestFile, read_manifest, write_atomically
from .kustomization import (
    KUSTOMIZATION_NAMES,
    add_resource,
    find_kustomization,
    listed_resources,
)
from .rewrite import (
    CLAIMS_SUFFIX,
    EXIT_DENIED,
    EXIT_INPUT,
    TreeReport,
    claims_file_for,
    translate_tree,
)

__all__ = [
    "CLAIMS_SUFFIX",
    "EXIT_DENIED",
    "EXIT_INPUT",
    "KUSTOMIZATION_NAMES",
    "ManifestFile",
    "TreeReport",
    "add_resource",
    "claims_file_for",
    "find_kustomization",
    "listed_resources",
    "read_manifest",
    "translate_tree",
    "write_atomically",
]
