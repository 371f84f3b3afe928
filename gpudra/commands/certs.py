"""`gpudra certs`: a development CA and serving certificate for the webhook Service, and its caBundle."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command("certs")
    def certs(
        service: str = typer.Option("gpudra-webhook", "--service", help="Service name the API server calls."),
        namespace: str = typer.Option("gpudra-system", "--namespace", help="Namespace of the Service."),
        out: Path = typer.Option(Path("certs"), "--out", help="Directory for ca.crt, ca.key, tls.crt, tls.key."),
        days: int = typer.Option(365, "--days", min=1, help="Validity in days."),
        host: list[str] = typer.Option([], "--host", help="Extra DNS name or IP for the SANs (repeatable)."),
    ) -> None:
        """Write a CA and a serving certificate with the Service DNS names as SANs; print the base64 caBundle."""
        from webhook.tls import CertificateError, service_dns_names, write_dev_certificates

        dns = service_dns_names(service, namespace)
        ips: list[str] = []
        for extra in host:
            (ips if _is_ip(extra) else dns).append(extra)
        try:
            written = write_dev_certificates(out, dns, ip_addresses=ips, days=days)
        except CertificateError as exc:
            Console(stderr=True).print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        err = Console(stderr=True)
        err.print(f"wrote {out}/ca.crt, ca.key, tls.crt, tls.key for {', '.join(dns + ips)} ({days} days)")
        err.print("caBundle for the webhook configurations:")
        typer.echo(written.ca_bundle)


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
