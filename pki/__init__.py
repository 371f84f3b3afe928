"""Development and test certificates (a CA and what it signs); see pki.issue."""

from pki.issue import (
    CertificateError,
    DevCertificates,
    generate_dev_certificates,
    issue_certificate,
    new_ca,
    service_dns_names,
    write_dev_certificates,
)

__all__ = [
    "CertificateError",
    "DevCertificates",
    "generate_dev_certificates",
    "issue_certificate",
    "new_ca",
    "service_dns_names",
    "write_dev_certificates",
]
