"""Serving certificates, made at start as a cluster's bootstrap makes them (kubeadm's `certs` phase).

A fresh CA per simulator signs one serving certificate whose SANs cover the loopback names
(127.0.0.1, ::1, localhost) and the address served on. The CA's PEM goes into the kubeconfig as
`certificate-authority-data`, so clients verify the server as they would a real one: nothing here
asks a client to turn verification off. Keys are ECDSA P-256 (what kubeadm can use, and quick to make).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_LOOPBACK_NAMES = ("localhost",)
_LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")
_VALIDITY = dt.timedelta(days=365)


@dataclass(frozen=True, slots=True)
class ServingCertificates:
    ca_pem: str
    cert_pem: str
    key_pem: str

    def server_context(self) -> ssl.SSLContext:
        """A server-side context holding the serving certificate (TLS 1.2+, as the API server's default)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # load_cert_chain reads only files: write both into a private directory for the moment it takes.
        with tempfile.TemporaryDirectory(prefix="kubesim-tls-") as folder:
            chain, key = os.path.join(folder, "tls.crt"), os.path.join(folder, "tls.key")
            for path, content in ((chain, self.cert_pem), (key, self.key_pem)):
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "w") as handle:
                    handle.write(content)
            context.load_cert_chain(chain, key)
        return context


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def _alt_names(host: str) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in _LOOPBACK_NAMES]
    addresses = {ipaddress.ip_address(a) for a in _LOOPBACK_ADDRESSES}
    try:
        served = ipaddress.ip_address(host)
    except ValueError:
        if host and host not in _LOOPBACK_NAMES:
            names.append(x509.DNSName(host))
    else:
        if not served.is_unspecified:
            addresses.add(served)
    names.extend(x509.IPAddress(a) for a in sorted(addresses, key=lambda a: (a.version, int(a))))
    return names


def generate(host: str = "127.0.0.1") -> ServingCertificates:
    """A new CA and a serving certificate for `host` and the loopback names, valid for a year."""
    now = dt.datetime.now(dt.UTC)
    # Valid from 90 days back: tests that travel in time (time-machine moves Python's clock, to the
    # middle of the month or its last hours) start kubesim on a clock OpenSSL does not share, since it
    # verifies against the real one; skew between processes is covered too.
    not_before = now - dt.timedelta(days=90)
    ca_key, serving_key = _key(), _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    serving = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(_alt_names(host)), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificates(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM).decode("ascii"),
        cert_pem=serving.public_bytes(serialization.Encoding.PEM).decode("ascii"),
        key_pem=_pem(serving_key),
    )
