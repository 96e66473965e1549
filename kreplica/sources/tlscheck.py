"""Why a broker's TLS certificate is refused, in words (librdkafka only says "certificate
verify failed"): one handshake with Python's ssl module, with the client config's CA, client
certificate and hostname check, to the first bootstrap address."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping


def _first_address(bootstrap: str) -> tuple[str, int] | None:
    first = bootstrap.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        return None
    return host, int(port)


def diagnose(bootstrap: str, client_config: Mapping[str, str], timeout_s: float) -> str | None:
    """A short reason the certificate is not accepted, or None when the handshake works (or
    fails for another reason, which the caller reports as it is)."""
    address = _first_address(bootstrap)
    if address is None:
        return None
    host, port = address
    try:
        context = ssl.create_default_context(cafile=client_config.get("ssl.ca.location") or None)
        algorithm = client_config.get("ssl.endpoint.identification.algorithm", "https")
        if algorithm.strip().lower() != "https":
            context.check_hostname = False
        cert = client_config.get("ssl.certificate.location")
        if cert:
            context.load_cert_chain(
                cert,
                client_config.get("ssl.key.location") or None,
                client_config.get("ssl.key.password") or None,
            )
    except (OSError, ssl.SSLError, ValueError):
        return None  # the client itself reports a bad file
    try:
        with (
            socket.create_connection((host, port), timeout=min(timeout_s, 5.0)) as raw,
            context.wrap_socket(raw, server_hostname=host),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        reason = str(exc.verify_message or exc.reason or "").rstrip(".")
        if "hostname mismatch" in reason.lower() or "ip address mismatch" in reason.lower():
            return (
                f"the broker's certificate is not valid for {host!r} (hostname mismatch); "
                "connect with a host name or address the certificate lists"
            )
        return (
            f"the broker's certificate is not trusted ({reason}); set ssl.ca.location to the "
            "CA that signed it"
        )
    except (OSError, ssl.SSLError):
        return None
