"""`gpudra serve`: the admission webhook over HTTPS (FastAPI on uvicorn)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..signature import add_command

if TYPE_CHECKING:  # the type only: the web server is imported when the command runs
    from webhook.server import ServeSettings


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """`gpudra serve`'s options as typer shows them (the command's one signature)."""

    policies: Annotated[Path | None, typer.Option("--policies", help="Policy directory (default: shipped).")] = None
    cert: Annotated[Path | None, typer.Option("--cert", help="Serving certificate (PEM); reloaded on change.")] = None
    key: Annotated[Path | None, typer.Option("--key", help="Private key of the serving certificate (PEM).")] = None
    client_ca: Annotated[
        Path | None,
        typer.Option(
            "--client-ca", help="CA (PEM) whose client certificates alone may POST reviews (the API server's)."
        ),
    ] = None
    host: Annotated[str, typer.Option("--host")] = "0.0.0.0"
    port: Annotated[int, typer.Option("--port")] = 8443
    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="Create templates through this cluster.")] = (
        None
    )
    in_cluster: Annotated[bool, typer.Option("--in-cluster", help="Use the pod's service account for the API.")] = False
    workers: Annotated[int, typer.Option("--workers", min=1, help="uvicorn worker processes.")] = 1
    reload_seconds: Annotated[float, typer.Option("--reload-seconds", help="How often to look for new files.")] = 2.0
    api_timeout: Annotated[float, typer.Option("--api-timeout", help="Bound on each API-server call (seconds).")] = 2.0
    echo: Annotated[
        bool, typer.Option("--enable-echo", hidden=True, help="Serve the benchmark baselines /echo and /echo-patch.")
    ] = False
    idle_seconds: Annotated[
        int,
        typer.Option(
            "--idle-seconds", min=1, help="Close a connection whose next request's headers are not in by then."
        ),
    ] = 15
    body_seconds: Annotated[
        float,
        typer.Option("--body-seconds", min=0.1, help="Answer 408 to a request whose body is not in by then."),
    ] = 10.0
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            min=1,
            help="Connections per worker process; near it, idle connections from sources that never had a review "
            "answered are reset first, and at it a new connection is refused.",
        ),
    ] = 512
    per_source_connections: Annotated[
        int,
        typer.Option(
            "--per-source-connections",
            min=1,
            help="Connections a source may hold until it has a review answered or shows a certificate the "
            "--client-ca signed (kube-apiserver opens up to --max-mutating-requests-inflight, 200 by default).",
        ),
    ] = 256
    handshake_seconds: Annotated[
        float,
        typer.Option(
            "--tls-handshake-seconds", min=0.1, help="Reset a connection whose TLS handshake is not done by then."
        ),
    ] = 5.0
    sizing_recommendations: Annotated[
        str,
        typer.Option(
            "--sizing-recommendations",
            envvar="GPUDRA_SIZING_RECOMMENDATIONS",
            help="Watch GPUSizingRecommendation objects and size unannotated pods from them: auto (when the API "
            "server serves the CRD), on, or off. Needs --kubeconfig or --in-cluster.",
        ),
    ] = "auto"
    extended_resource_mapping: Annotated[
        str,
        typer.Option(
            "--extended-resource-mapping",
            envvar="GPUDRA_EXTENDED_RESOURCE_MAPPING",
            help="auto: read the DeviceClasses and admit unchanged the pods that would only get whole devices of a "
            "class mapping their resource (KEP-5004), unless a policy says Translate; off: translate every GPU pod. "
            "Needs --kubeconfig or --in-cluster.",
        ),
    ] = "auto"
    device_shapes: Annotated[
        str,
        typer.Option(
            "--device-shapes",
            envvar="GPUDRA_DEVICE_SHAPES",
            help="auto: read the cluster's ResourceSlices and DeviceClasses and check every claim against them, "
            "dropping alternatives no device can satisfy and refusing a claim with none left (onUnsatisfiable); "
            "off: claims unchecked. Needs --kubeconfig or --in-cluster.",
        ),
    ] = "auto"
    review_sources: Annotated[
        str,
        typer.Option(
            "--review-sources",
            envvar="GPUDRA_REVIEW_SOURCES",
            help="auto: answer 403 to reviews from an address the API server says is a live pod on the pod network "
            "outside --review-source-namespace (a forged review from a tenant); any: every source may send reviews. "
            "Needs --kubeconfig or --in-cluster (and RBAC to list pods).",
        ),
    ] = "auto"
    review_source_namespaces: Annotated[
        list[str] | None,
        typer.Option(
            "--review-source-namespace",
            help="A namespace whose pods may send reviews (repeatable; default kube-system, where managed clusters "
            "run the API server's tunnel agents).",
        ),
    ] = None


def serve_settings(options: ServeOptions) -> ServeSettings:
    """The server's settings from the options; `typer.BadParameter` for options that do not go together."""
    from policyengine import shipped_policies_dir
    from webhook.review_sources import DEFAULT_TRUSTED_NAMESPACES
    from webhook.server import ServeSettings

    if (options.cert is None) != (options.key is None):
        raise typer.BadParameter("--cert and --key go together")
    if options.client_ca is not None and options.cert is None:
        raise typer.BadParameter("--client-ca needs --cert and --key")
    if options.sizing_recommendations not in ("auto", "on", "off"):
        raise typer.BadParameter("--sizing-recommendations must be auto, on or off")
    if options.extended_resource_mapping not in ("auto", "off"):
        raise typer.BadParameter("--extended-resource-mapping must be auto or off")
    if options.device_shapes not in ("auto", "off"):
        raise typer.BadParameter("--device-shapes must be auto or off")
    if options.review_sources not in ("auto", "any"):
        raise typer.BadParameter("--review-sources must be auto or any")

    def text(path: Path | None) -> str | None:
        return str(path) if path else None

    return ServeSettings(
        policies=str(options.policies or shipped_policies_dir()),
        cert=text(options.cert),
        key=text(options.key),
        client_ca=text(options.client_ca),
        host=options.host,
        port=options.port,
        kubeconfig=text(options.kubeconfig),
        in_cluster=options.in_cluster,
        workers=options.workers,
        reload_seconds=options.reload_seconds,
        api_timeout_seconds=options.api_timeout,
        enable_echo=options.echo,
        idle_seconds=options.idle_seconds,
        body_seconds=options.body_seconds,
        max_connections=options.max_connections,
        sizing_recommendations=options.sizing_recommendations,
        extended_resource_mapping=options.extended_resource_mapping,
        device_shapes=options.device_shapes,
        per_source_connections=options.per_source_connections,
        handshake_seconds=options.handshake_seconds,
        review_sources=options.review_sources,
        review_source_namespaces=tuple(options.review_source_namespaces or DEFAULT_TRUSTED_NAMESPACES),
    )


def serve(options: ServeOptions) -> None:
    """Serve until stopped."""
    from webhook.server import serve as run

    run(serve_settings(options))


def register(app: typer.Typer) -> None:
    add_command(app, "serve", serve, help="Serve /mutate, /validate, /healthz, /readyz and /metrics.")
