"""Translating manifests ahead of the webhook, for the CLI only (`gpudra translate`, `policy explain`).

Every pod template of an object is decided as the pod its controller makes (`workloads`) and rewritten, with the
ResourceClaimTemplates it names (`objects`); `manifest_translation.tree` rewrites a directory (`translate -R`,
imported only there). Layered between the policy engine and the CLI: the webhook and the simulator never import it.
"""

from .objects import (
    SOURCE_ANNOTATION,
    ObjectTranslation,
    TemplatePod,
    TemplateTranslation,
    namespace_for,
    namespaces_of,
    passed_through,
    template_pods,
    template_prefix,
    translate_documents,
    translate_template,
)

__all__ = [
    "SOURCE_ANNOTATION",
    "ObjectTranslation",
    "TemplatePod",
    "TemplateTranslation",
    "namespace_for",
    "namespaces_of",
    "passed_through",
    "template_pods",
    "template_prefix",
    "translate_documents",
    "translate_template",
]
