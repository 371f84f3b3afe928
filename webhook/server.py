"""Running the webhook: settings, the app wired from them, and uvicorn behind the connection gate.

With `workers > 1` uvicorn starts processes that import `app_factory` by name, so the settings travel through the
environment (`GPUDRA_SERVE_SETTINGS`, JSON). uvicorn accepts plain TCP; in each process the app's lifespan hands
every connection the gate and the TLS context (webhook.connections), and the app and the handshakes share one
`ReloadingCertificate`, so the certificate the poller reloads is the one new handshakes use.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kubeapi import (
    KubeSideEffects,
    ListWatchSource,
    NamespaceCache,
    SharedTemplates,
    TemplateWriter,
    api_client,
    pods_at_address,
)
from policyengine import ClaimCheck, PolicySet, load_policies
from webhook._uvicorn import logging_config
from webhook.admission import DEFAULT_EXEMPT_NAMESPACES, Admission, RolloutConfig
from webhook.app import DEFAULT_DEADLINE_SECONDS, BackgroundService, WebhookApp, create_app
from webhook.body import DEFAULT_BODY_SECONDS, DEFAULT_LARGE_BODY_BYTES
from webhook.client_auth import require_client_certificates
from webhook.cluster_view import (
    DeviceClassCache,
    DeviceShapeCache,
    device_class_cache,
    device_shape_cache,
    server_minor,
)
from webhook.connections import ALPN_PROTOCOLS, DEFAULT_HANDSHAKE_SECONDS, SETUP_KEY, ConnectionSetup
from webhook.gate import DEFAULT_MAX_CONNECTIONS, DEFAULT_PER_SOURCE, ConnectionGate, GateLimits
from webhook.heap_trim import HeapTrim
from webhook.log_throttle import ThrottleFilter
from webhook.metrics import WebhookMetrics
from webhook.policy_reloader import PolicyReloader
from webhook.policy_store import PolicyStore
from webhook.review_sources import DEFAULT_TRUSTED_NAMESPACES, ReviewSources
from webhook.settled_heap import SettledHeap
from webhook.sizing_cache import KubeRecommendationSource, RecommendationCache
from webhook.tls import ReloadingCertificate
from webhook.warm_up import DecisionWarmUp

__all__ = ["ServeSettings", "app_factory", "build_app", "serve"]

_ENV = "GPUDRA_SERVE_SETTINGS"
# CPython hands the GIL over every 5 ms by default: an ordinary review then waits up to that long for each of the many
# times its event-loop and decision steps take the GIL back from a thread deciding a huge review. 1 ms cut ordinary
# reviews' p99 beside huge ones (benchmarks/webhook_reliability.py, slow_neighbour).
_GIL_SWITCH_SECONDS = 0.001


@dataclass(frozen=True)
class ServeSettings:
    policies: str
    cert: str | None = None
    key: str | None = None
    host: str = "0.0.0.0"
    port: int = 8443
    kubeconfig: str | None = None
    in_cluster: bool = False
    workers: int = 1
    reload_seconds: float = 2.0
    api_timeout_seconds: float = 2.0
    max_body_bytes: int = 3 * 1024 * 1024
    enable_echo: bool = False
    review_deadline_seconds: float = DEFAULT_DEADLINE_SECONDS
    # Besides the cluster's own namespaces: where gpudra itself runs ($POD_NAMESPACE in the Deployment).
    exempt_namespaces: tuple[str, ...] = ()
    # GPUSizingRecommendation watch cache (webhook.sizing_cache): auto (on when the API server serves the CRD),
    # on (its absence is an error in /readyz and /metrics) or off. Needs API-server access.
    sizing_recommendations: str = "auto"
    # KEP-5004 coexistence (webhook.cluster_view): auto reads the DeviceClasses and admits unchanged the pods whose
    # decision is only whole devices of a class mapping their resource; off translates every GPU pod. Needs API access.
    extended_resource_mapping: str = "auto"
    # Claims checked against the cluster's devices (webhook.cluster_view's device-shape cache, policyengine's
    # ClaimCheck): auto (with API-server access) drops alternatives no device can satisfy and refuses a claim with
    # none left, as its policy's onUnsatisfiable says; off leaves claims unchecked.
    device_shapes: str = "auto"
    # Forged reviews (webhook.review_sources): auto (with API-server access) answers 403 to a source the API server
    # says is a live pod on the pod network outside review_source_namespaces; any: every source may send reviews.
    review_sources: str = "auto"
    review_source_namespaces: tuple[str, ...] = DEFAULT_TRUSTED_NAMESPACES
    # With a CA file (PEM), /mutate and /validate answer only clients with a certificate it signed
    # (webhook.client_auth).
    client_ca: str | None = None
    # Connections (webhook.gate, webhook.connections): a TLS handshake must end within handshake_seconds; a
    # request's headers must arrive within idle_seconds of the handshake or the previous response; its body within
    # body_seconds (webhook.body). Per process, at most max_connections are open, and a source that never had a
    # review answered nor showed a client certificate the --client-ca signed holds at most per_source_connections.
    idle_seconds: int = 15
    body_seconds: float = DEFAULT_BODY_SECONDS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    per_source_connections: int = DEFAULT_PER_SOURCE
    handshake_seconds: float = DEFAULT_HANDSHAKE_SECONDS
    large_body_bytes: int = DEFAULT_LARGE_BODY_BYTES

    @property
    def side_effects(self) -> bool:
        return self.in_cluster or self.kubeconfig is not None

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> ServeSettings:
        return cls(**json.loads(os.environ[_ENV]))


_certificates: dict[tuple[str, str, str], ReloadingCertificate] = {}


def _certificate(settings: ServeSettings) -> ReloadingCertificate | None:
    if not settings.cert or not settings.key:
        return None
    client_ca = settings.client_ca
    key = (settings.cert, settings.key, client_ca or "")  # the context's settings are part of it
    if key not in _certificates:

        def configure(ctx: ssl.SSLContext) -> None:
            if client_ca:
                require_client_certificates(ctx, client_ca)
            ctx.set_alpn_protocols(ALPN_PROTOCOLS)

        _certificates[key] = ReloadingCertificate(Path(settings.cert), Path(settings.key), configure=configure)
    return _certificates[key]


def refuse_empty(policies: PolicySet) -> str | None:
    """An empty set would let every GPU pod through untranslated and unchecked: never serve one."""
    if not policies.policies:
        return "the policy directory holds no GPUClaimPolicy (an empty set would admit GPU pods unchecked)"
    return None


def build_app(
    settings: ServeSettings,
    *,
    writer: TemplateWriter | None = None,
    recommendations: ListWatchSource | None = None,
) -> WebhookApp:
    """Wire policies, certificate, side effects, the recommendation cache, metrics and the gate into the app."""
    reads_cluster = writer is None and settings.side_effects  # DeviceClasses and /version (webhook.cluster_view)
    metrics = WebhookMetrics()
    if settings.device_shapes not in ("auto", "off"):
        raise ValueError(f"device_shapes must be auto or off (got {settings.device_shapes!r})")
    if settings.review_sources not in ("auto", "any"):
        raise ValueError(f"review_sources must be auto or any (got {settings.review_sources!r})")
    shapes: DeviceShapeCache | None = None
    load: Callable[[Path], PolicySet] = load_policies
    if reads_cluster and settings.device_shapes == "auto":
        shapes = device_shape_cache(
            api_client(settings.kubeconfig, in_cluster=settings.in_cluster),
            metrics,
            timeout=max(5.0, settings.api_timeout_seconds),
        )
        check = ClaimCheck(shapes.shapes)
        load = lambda path: load_policies(path).with_claim_check(check)  # noqa: E731 (every reload checked too)
    store = PolicyStore(
        Path(settings.policies),
        load,
        on_reload=lambda ok: metrics.policy_reloads.labels("success" if ok else "failure").inc(),
        refuse=refuse_empty,
    )
    metrics.policies_loaded.set(len(store.current.policies))
    kube: KubeSideEffects | None = None
    if writer is None and settings.side_effects:
        kube = KubeSideEffects(
            api_client(settings.kubeconfig, in_cluster=settings.in_cluster), timeout=settings.api_timeout_seconds
        )
        # Identical claims share one template, created once: a burst of replicas makes one call, not one each.
        writer = SharedTemplates(kube, call_seconds=kube.timeout)
    namespaces = NamespaceCache(writer, call_seconds=settings.api_timeout_seconds) if writer is not None else None
    sizing: RecommendationCache | None = None
    if settings.sizing_recommendations not in ("auto", "on", "off"):
        raise ValueError(f"sizing_recommendations must be auto, on or off (got {settings.sizing_recommendations!r})")
    if recommendations is None and settings.side_effects and settings.sizing_recommendations != "off":
        # Its own client: the watch holds a connection for minutes, apart from the side effects' pool.
        client = api_client(settings.kubeconfig, in_cluster=settings.in_cluster)
        recommendations = KubeRecommendationSource(client, timeout=max(5.0, settings.api_timeout_seconds))
    if recommendations is not None and settings.sizing_recommendations != "off":
        sizing = RecommendationCache(recommendations, metrics, mode=settings.sizing_recommendations)
    exempt = DEFAULT_EXEMPT_NAMESPACES | set(settings.exempt_namespaces)
    if os.environ.get("POD_NAMESPACE"):
        exempt |= {os.environ["POD_NAMESPACE"]}
    # KEP-5004 coexistence (the DeviceClasses' mapping, cached by list+watch) and the cluster's version for warnings.
    device_classes: DeviceClassCache | None = None
    k8s_minor: int | None = None
    if settings.extended_resource_mapping not in ("auto", "off"):
        raise ValueError(f"extended_resource_mapping must be auto or off (got {settings.extended_resource_mapping!r})")
    if reads_cluster:
        view_client = api_client(settings.kubeconfig, in_cluster=settings.in_cluster)
        if settings.extended_resource_mapping == "auto":
            timeout = max(5.0, settings.api_timeout_seconds)
            device_classes = device_class_cache(view_client, metrics, timeout=timeout)
        k8s_minor = server_minor(view_client, timeout=settings.api_timeout_seconds)
    admission = Admission(
        store, metrics, writer=writer, namespaces=namespaces, rollout=RolloutConfig(), exempt_namespaces=exempt,
        claims=kube or (writer if isinstance(writer, KubeSideEffects) else None), sizing=sizing,
        extended_resources=device_classes.mapping if device_classes is not None else None, k8s_minor=k8s_minor,
        shapes_token=(lambda: shapes.shapes().token) if shapes is not None else None,
    )  # fmt: skip
    certificate = _certificate(settings)

    # Policies reload on their own thread: a slow or refused load never delays the certificate's reload below.
    # The replaced set's reference cycles would stay in the frozen heap: the heap is settled again after a reload.
    heap = SettledHeap()
    reloader = PolicyReloader(store, settings.reload_seconds, metrics, after_replaced=heap.resettle)
    periodic: list[Callable[[], object]] = []
    readiness: dict[str, Callable[[], tuple[bool, str]]] = {
        "policies": admission.policies_ready,
        "policyReload": reloader.readiness,
    }
    if certificate is not None:
        cert = certificate
        if cert.not_after is not None:
            metrics.cert_expiry.set(cert.not_after.timestamp())

        def reload_certificate() -> None:
            if cert.reload_if_changed():
                metrics.cert_reloads.labels("success").inc()
                if cert.not_after is not None:
                    metrics.cert_expiry.set(cert.not_after.timestamp())
            elif cert.last_error:
                metrics.cert_reloads.labels("failure").inc()

        def certificate_ready() -> tuple[bool, str]:
            if not cert.valid_now():
                return False, f"serving certificate expired at {cert.not_after}"
            detail = f"valid until {cert.not_after:%Y-%m-%dT%H:%M:%SZ}" if cert.not_after else "valid"
            if cert.last_error:
                detail += f"; last reload failed: {cert.last_error}"
            return True, detail

        periodic.append(reload_certificate)
        readiness["certificate"] = certificate_ready
    if writer is not None:
        readiness["apiserver"] = writer.reachable
    # Each worker decides once before it serves (webhook.warm_up): a burst's first review does not pay for loading.
    services: list[BackgroundService] = [DecisionWarmUp(lambda: store.current), reloader]
    if sizing is not None:
        readiness["sizing"] = sizing.readiness  # never unready: see webhook.sizing_cache
        services.append(sizing)
    if device_classes is not None:
        readiness["deviceClasses"] = device_classes.readiness  # never unready: see kubeapi.deviceclasses
        services.append(device_classes)
    if shapes is not None:
        readiness["deviceShapes"] = shapes.readiness  # unready until both lists are in, 30 s at most
        services.append(shapes)
    services.append(heap)  # last: what the others loaded at start is set aside too (webhook.settled_heap)
    gate = ConnectionGate(
        GateLimits(max_connections=settings.max_connections, per_source=settings.per_source_connections)
    )
    metrics.watch_gate(gate)
    periodic.append(HeapTrim(lambda: gate.ended))  # a burst of connections gone: their memory back to the system
    tls_context: Callable[[], ssl.SSLContext] | None = None
    if certificate is not None:
        serving = certificate
        tls_context = lambda: serving.context  # noqa: E731 (read per handshake: the certificate's own context)
    sources: ReviewSources | None = None
    if reads_cluster and settings.review_sources == "auto":
        pods_client = api_client(settings.kubeconfig, in_cluster=settings.in_cluster)
        sources = ReviewSources(
            lambda address: pods_at_address(pods_client, address, timeout=settings.api_timeout_seconds),
            trusted_namespaces=settings.review_source_namespaces,
            lookup_seconds=settings.api_timeout_seconds + 0.5,
        )
        metrics.watch_review_sources(sources)
    setup = ConnectionSetup(
        gate,
        tls_context,
        handshake_seconds=settings.handshake_seconds,
        client_ca=settings.client_ca is not None,
        sources=sources,
    )
    return create_app(
        admission,
        metrics=metrics,
        readiness=readiness,
        periodic=periodic,
        period_seconds=settings.reload_seconds,
        max_body_bytes=settings.max_body_bytes,
        enable_echo=settings.enable_echo,
        deadline_seconds=settings.review_deadline_seconds,
        services=services,
        body_seconds=settings.body_seconds,
        large_body_bytes=settings.large_body_bytes,
        lifespan_state={SETUP_KEY: setup},
    )


def app_factory() -> WebhookApp:
    """Entry point for uvicorn worker processes (settings from the environment)."""
    sys.setswitchinterval(_GIL_SWITCH_SECONDS)
    return build_app(ServeSettings.from_env())


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, plus gpudra's own loggers at INFO through the same handler (reloads, refusals); a flood of
    bad requests writes a bounded number of lines (webhook.log_throttle)."""
    config = logging_config()
    config["filters"] = {"throttle": {"()": ThrottleFilter}}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("throttle")
    config["loggers"]["gpudra"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


def serve(settings: ServeSettings) -> None:
    """Run uvicorn until interrupted. Without a certificate it serves plain HTTP (for local experiments only).
    uvicorn itself is given no TLS settings: each connection starts TLS behind the gate (webhook.connections)."""
    import uvicorn

    os.environ[_ENV] = settings.to_env()
    tls = settings.cert is not None and settings.key is not None
    if settings.client_ca and not tls:
        raise ValueError("--client-ca needs --cert and --key: client certificates are checked in the TLS handshake")
    if tls:
        _certificate(settings)  # a certificate that cannot serve (unreadable, expired) stops here, with its reason
    uvicorn.run(
        "webhook.server:app_factory",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        http="webhook.connections:GatedProtocol",
        timeout_keep_alive=settings.idle_seconds,
        log_config=_log_config(),
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=10,
    )
