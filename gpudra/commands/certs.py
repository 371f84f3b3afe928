"""`gpudra certs`: a development CA and serving certificate for the webhook Service, and its caBundle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..signature import add_command


@dataclass(frozen=True, slots=True)
class CertsOptions:
    """`gpudra certs`' options as typer shows them (the command's one signature)."""

    service: Annotated[str, typer.Option("--service", help="Service name the API server calls.")] = "gpudra-webhook"
    namespace: Annotated[str, typer.Option("--namespace", help="Namespace of the Service.")] = "gpudra-system"
    out: Annotated[Path, typer.Option("--out", help="Directory for ca.crt, ca.key, tls.crt, tls.key.")] = Path("certs")
    days: Annotated[int, typer.Option("--days", min=1, help="Validity in days.")] = 365
    host: Annotated[list[str], typer.Option("--host", help="Extra DNS name or IP for the SANs (repeatable).")] = field(
        default_factory=list
    )


def certs(options: CertsOptions) -> None:
    """Write the CA and serving certificate; what was written on stderr, the caBundle on stdout (exit 2 on error)."""
    from pki import CertificateError, service_dns_names, write_dev_certificates

    dns = service_dns_names(options.service, options.namespace)
    ips: list[str] = []
    for extra in options.host:
        (ips if _is_ip(extra) else dns).append(extra)
    try:
        written = write_dev_certificates(options.out, dns, ip_addresses=ips, days=options.days)
    except CertificateError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    err = Console(stderr=True)
    err.print(f"wrote {options.out}/ca.crt, ca.key, tls.crt, tls.key for {', '.join(dns + ips)} ({options.days} days)")
    err.print("caBundle for the webhook configurations:")
    typer.echo(written.ca_bundle)


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "certs",
        certs,
        help="Write a CA and a serving certificate with the Service DNS names as SANs; print the base64 caBundle.",
    )


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
