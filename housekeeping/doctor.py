"""`gpudra doctor`: which of gpudra's protections an installed cluster has, read back from the objects themselves.

Each check reads what the install created (the webhook's Deployment and NetworkPolicy, the two admission policies
and their bindings, the quota CronJob) through an `InstallReader` and says whether the protection is on, what it
saw, and what to change when it is off. The threat model behind the list is docs/webhook-reliability.md's "Threat
model and defaults".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

__all__ = ["InstallReader", "Protection", "check_install"]


class InstallReader(Protocol):
    def read(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The installed object of `kind` called `name` (in `namespace` for a namespaced kind), or None."""
        ...


@dataclass(frozen=True)
class Protection:
    """One protection: whether it is on, what the check saw, and what turns it on."""

    name: str
    on: bool
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _container(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = ((deployment.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [{}]
    return next((c for c in containers if c.get("name") == "webhook"), containers[0])


def _client_auth(deployment: Mapping[str, Any] | None, where: str) -> Protection:
    fix = (
        "where kube-apiserver presents a client certificate to webhooks (an AdmissionConfiguration: kubeadm and other "
        "self-managed control planes), add the client-auth component or set webhook.clientAuth.enabled=true"
    )
    if deployment is None:
        return Protection("client-auth", False, f"no Deployment {where}", fix)
    args = [str(a) for a in _container(deployment).get("args") or []]
    if any(a == "--client-ca" or a.startswith("--client-ca=") for a in args):
        return Protection("client-auth", True, "/mutate and /validate answer only the API server's client certificate")
    return Protection(
        "client-auth", False, "any client that reaches the Service may send a review (and have templates created)", fix
    )


def _review_sources(deployment: Mapping[str, Any] | None, role: Mapping[str, Any] | None, where: str) -> Protection:
    fix = "drop --review-sources=any from the webhook's args and grant its ClusterRole `list` on pods"
    if deployment is None:
        return Protection("review-sources", False, f"no Deployment {where}", fix)
    container = _container(deployment)
    args = [str(a) for a in container.get("args") or []]
    env = {str(e.get("name")): str(e.get("value", "")) for e in container.get("env") or [] if isinstance(e, dict)}
    said = [a.split("=", 1)[1] for a in args if a.startswith("--review-sources=")]
    said += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--review-sources"]
    mode = said[-1] if said else env.get("GPUDRA_REVIEW_SOURCES", "auto")
    if mode != "auto":
        return Protection("review-sources", False, f"--review-sources={mode}: a tenant pod's review is answered", fix)
    rules = (role or {}).get("rules") or []
    lists_pods = any(
        "" in (r.get("apiGroups") or []) and "pods" in (r.get("resources") or []) and "list" in (r.get("verbs") or [])
        for r in rules
        if isinstance(r, dict)
    )
    if not lists_pods:
        return Protection(
            "review-sources", False, "the webhook may not list pods: sources are let through unchecked", fix
        )
    return Protection("review-sources", True, "a review from a tenant pod's address is refused (403)")


def _network_policy(policy: Mapping[str, Any] | None, where: str) -> Protection:
    fix = (
        "list your control plane's addresses as ipBlocks in the NetworkPolicy's ingress `from` "
        "(webhook.networkPolicy.from), where your CNI matches host-network traffic by ipBlock"
    )
    if policy is None:
        return Protection("network-policy", False, f"no NetworkPolicy {where}: every pod reaches the webhook", fix)
    rules = (policy.get("spec") or {}).get("ingress") or []
    if any(not rule.get("from") for rule in rules):
        return Protection("network-policy", False, "the webhook port admits any source (no `from`)", fix)
    peers = sum(len(rule["from"]) for rule in rules)
    return Protection("network-policy", True, f"the webhook port admits {peers} listed peer(s) only")


def _admission_policy(reader: InstallReader, check: str, name: str, what: str, must_name: str = "") -> Protection:
    fix = f"apply the ValidatingAdmissionPolicy {name} and its binding (manifests/base/admission-policies.yaml)"
    policy = reader.read("ValidatingAdmissionPolicy", name)
    if policy is None:
        return Protection(check, False, f"no ValidatingAdmissionPolicy {name}", fix)
    binding = (reader.read("ValidatingAdmissionPolicyBinding", name) or {}).get("spec") or {}
    if binding.get("policyName") != name:
        return Protection(
            check, False, f"no binding {name} for ValidatingAdmissionPolicy {name}: it checks nothing", fix
        )
    if "Deny" not in (binding.get("validationActions") or []):
        return Protection(check, False, f"binding {name} does not Deny ({binding.get('validationActions')})", fix)
    conditions = " ".join(str(c.get("expression", "")) for c in (policy.get("spec") or {}).get("matchConditions") or [])
    if must_name and must_name not in conditions:
        return Protection(check, False, f"ValidatingAdmissionPolicy {name} does not name {must_name}", fix)
    return Protection(check, True, what)


def _namespace_quota(cronjob: Mapping[str, Any] | None, where: str) -> Protection:
    fix = "install manifests/base/namespace-quota.yaml (the chart's namespaceQuota.enabled=true)"
    if cronjob is None:
        return Protection("namespace-quota", False, f"no CronJob {where}", fix)
    if (cronjob.get("spec") or {}).get("suspend"):
        return Protection("namespace-quota", False, f"CronJob {where} is suspended", "unsuspend it")
    return Protection("namespace-quota", True, "each gpudra.io/max-gpus label is a ResourceQuota: a namespace total")


def _spread(deployment: Mapping[str, Any] | None, where: str) -> Protection:
    fix = "a topologySpreadConstraint on kubernetes.io/hostname with DoNotSchedule (the shipped default)"
    if deployment is None:
        return Protection("replica-spread", False, f"no Deployment {where}", fix)
    spec = deployment.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    spread = any(
        c.get("topologyKey") == "kubernetes.io/hostname" and c.get("whenUnsatisfiable") == "DoNotSchedule"
        for c in pod.get("topologySpreadConstraints") or []
    )
    required = any(
        term.get("topologyKey") == "kubernetes.io/hostname"
        for term in ((pod.get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or []
    )
    replicas = int(spec.get("replicas", 1))
    if replicas >= 2 and (spread or required):
        return Protection(
            "replica-spread", True, f"{replicas} replicas, never two on one node while another can run one"
        )
    return Protection("replica-spread", False, f"{replicas} replica(s), spread over nodes only preferred", fix)


def check_install(reader: InstallReader, namespace: str = "gpudra-system", prefix: str = "gpudra") -> list[Protection]:
    """Every protection of the install whose objects are named `<prefix>-...` in `namespace` (the shipped
    manifests: `gpudra`, `gpudra-system`; the chart: its fullname and release namespace)."""
    webhook = f"{prefix}-webhook"
    deployment = reader.read("Deployment", webhook, namespace)
    pod = (((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    account = str(pod.get("serviceAccountName") or webhook)
    return [
        _client_auth(deployment, f"{namespace}/{webhook}"),
        _review_sources(deployment, reader.read("ClusterRole", webhook), f"{namespace}/{webhook}"),
        _network_policy(reader.read("NetworkPolicy", webhook, namespace), f"{namespace}/{webhook}"),
        _admission_policy(
            reader,
            "managed-objects-policy",
            f"{prefix}-managed-objects",
            "gpudra's ServiceAccounts write only templates and quotas labelled app.kubernetes.io/managed-by=gpudra",
            f"system:serviceaccount:{namespace}:{account}",
        ),
        _admission_policy(
            reader,
            "namespace-caps-policy",
            f"{prefix}-namespace-caps",
            "every ResourceClaim in a namespace labelled gpudra.io/max-gpus or max-vram is held to the caps",
        ),
        _namespace_quota(
            reader.read("CronJob", f"{prefix}-namespace-quota", namespace), f"{namespace}/{prefix}-namespace-quota"
        ),
        _spread(deployment, f"{namespace}/{webhook}"),
    ]
