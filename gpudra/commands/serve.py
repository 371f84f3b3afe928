"""`gpudra serve`: the admission webhook over HTTPS (Starlette on uvicorn, behind the connection gate)."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
        cert: Path | None = typer.Option(None, "--cert", help="Serving certificate (PEM); reloaded on change."),
        key: Path | None = typer.Option(None, "--key", help="Private key of the serving certificate (PEM)."),
        client_ca: Path | None = typer.Option(
            None, "--client-ca", help="CA (PEM) whose client certificates alone may POST reviews (the API server's)."
        ),
        host: str = typer.Option("0.0.0.0", "--host"),
        port: int = typer.Option(8443, "--port"),
        kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Create templates through this cluster."),
        in_cluster: bool = typer.Option(False, "--in-cluster", help="Use the pod's service account for the API."),
        workers: int = typer.Option(1, "--workers", min=1, help="uvicorn worker processes."),
        reload_seconds: float = typer.Option(2.0, "--reload-seconds", help="How often to look for new files."),
        api_timeout: float = typer.Option(2.0, "--api-timeout", help="Bound on each API-server call (seconds)."),
        echo: bool = typer.Option(
            False, "--enable-echo", hidden=True, help="Serve the benchmark baselines /echo and /echo-patch."
        ),
        idle_seconds: int = typer.Option(
            15, "--idle-seconds", min=1, help="Close a connection whose next request's headers are not in by then."
        ),
        body_seconds: float = typer.Option(
            10.0, "--body-seconds", min=0.1, help="Answer 408 to a request whose body is not in by then."
        ),
        max_connections: int = typer.Option(
            512,
            "--max-connections",
            min=1,
            help="Connections per worker process; near it, idle connections from sources that never had a review "
            "answered are reset first, and at it a new connection is refused.",
        ),
        per_source_connections: int = typer.Option(
            256,
            "--per-source-connections",
            min=1,
            help="Connections a source may hold until it has a review answered or shows a certificate the "
            "--client-ca signed (kube-apiserver opens up to --max-mutating-requests-inflight, 200 by default).",
        ),
        handshake_seconds: float = typer.Option(
            5.0, "--tls-handshake-seconds", min=0.1, help="Reset a connection whose TLS handshake is not done by then."
        ),
        sizing_recommendations: str = typer.Option(
            "auto",
            "--sizing-recommendations",
            envvar="GPUDRA_SIZING_RECOMMENDATIONS",
            help="Watch GPUSizingRecommendation objects and size unannotated pods from them: auto (when the API "
            "server serves the CRD), on, or off. Needs --kubeconfig or --in-cluster.",
        ),
        extended_resource_mapping: str = typer.Option(
            "auto",
            "--extended-resource-mapping",
            envvar="GPUDRA_EXTENDED_RESOURCE_MAPPING",
            help="auto: read the DeviceClasses and admit unchanged the pods that would only get whole devices of a "
            "class mapping their resource (KEP-5004), unless a policy says Translate; off: translate every GPU pod. "
            "Needs --kubeconfig or --in-cluster.",
        ),
    ) -> None:
        """Serve /mutate, /validate, /healthz, /readyz and /metrics."""
        from policyengine import shipped_policies_dir
        from webhook.server import ServeSettings
        from webhook.server import serve as run

        if (cert is None) != (key is None):
            raise typer.BadParameter("--cert and --key go together")
        if client_ca is not None and cert is None:
            raise typer.BadParameter("--client-ca needs --cert and --key")
        if sizing_recommendations not in ("auto", "on", "off"):
            raise typer.BadParameter("--sizing-recommendations must be auto, on or off")
        if extended_resource_mapping not in ("auto", "off"):
            raise typer.BadParameter("--extended-resource-mapping must be auto or off")
        run(
            ServeSettings(
                policies=str(policies or shipped_policies_dir()),
                cert=str(cert) if cert else None,
                key=str(key) if key else None,
                client_ca=str(client_ca) if client_ca else None,
                host=host,
                port=port,
                kubeconfig=str(kubeconfig) if kubeconfig else None,
                in_cluster=in_cluster,
                workers=workers,
                reload_seconds=reload_seconds,
                api_timeout_seconds=api_timeout,
                enable_echo=echo,
                idle_seconds=idle_seconds,
                body_seconds=body_seconds,
                max_connections=max_connections,
                sizing_recommendations=sizing_recommendations,
                extended_resource_mapping=extended_resource_mapping,
                per_source_connections=per_source_connections,
                handshake_seconds=handshake_seconds,
            )
        )
