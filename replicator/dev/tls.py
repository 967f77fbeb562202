"""A throwaway certificate authority for local clusters with TLS listeners.

``mirrorflow dev up --secure`` and the tests make one CA per dev home and issue each
broker (and each client that authenticates with a certificate) a key and a certificate
signed by it, with the ``cryptography`` library; nothing here ever leaves the machine.
Everything is PEM, the one format both librdkafka and the brokers read directly::

    <folder>/ca.pem, ca.key                 the CA (kept: clients trust it across restarts)
    <folder>/<name>.pem, <name>.key         a certificate issued to <name>, and its key
    <folder>/<name>.keystore.pem            key + certificate chain, a broker's PEM keystore

Keys are written mode 0600 and unencrypted (a broker's PEM keystore and librdkafka's
``ssl.key.location`` read them as they are); ``issue`` can encrypt one with a password
instead, for a client that sets ``ssl.key.password``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_YEARS = 10
LEAF_DAYS = 365
RENEW_BEFORE = dt.timedelta(days=7)  # a leaf that expires sooner is issued again by ``ensure``


@dataclass(frozen=True, slots=True)
class Issued:
    """The files of one issued certificate."""

    cert: Path
    key: Path
    keystore: Path  # key then certificate chain: a broker's ``ssl.keystore.type=PEM`` file


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "MirrorFlow dev"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    tmp.replace(path)


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption() if password is None
        else serialization.BestAvailableEncryption(password.encode()))
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def issued_files(folder: Path, name: str) -> Issued:
    """Where the CA kept in ``folder`` keeps what it issued ``name`` (whether issued yet or not)."""
    return Issued(folder / f"{name}.pem", folder / f"{name}.key", folder / f"{name}.keystore.pem")


class LocalCA:
    """A CA kept in ``folder`` (made at first use), and what it issues."""

    def __init__(self, folder: Path, common_name: str = "MirrorFlow dev CA") -> None:
        self.folder = folder
        self.pem = folder / "ca.pem"
        self._key_file = folder / "ca.key"
        if not (self.pem.exists() and self._key_file.exists()):
            self._create(common_name)
        self._cert = x509.load_pem_x509_certificate(self.pem.read_bytes())
        key = serialization.load_pem_private_key(self._key_file.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        self._key = key

    def _create(self, common_name: str) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        cert = (x509.CertificateBuilder()
                .subject_name(_name(common_name)).issuer_name(_name(common_name))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=365 * CA_YEARS))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        _write(self._key_file, _key_pem(key), private=True)
        _write(self.pem, cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, *, hosts: Sequence[str] = ("127.0.0.1", "localhost"), client: bool = False,
              valid_from: dt.datetime | None = None, valid_until: dt.datetime | None = None,
              key_password: str | None = None) -> Issued:
        """Issue ``name`` a new key and certificate: a server certificate for ``hosts`` (IP addresses or DNS
        names), or with ``client`` one a client authenticates with (its subject's CN is ``name``)."""
        key = ec.generate_private_key(ec.SECP256R1())
        start = valid_from or _now() - dt.timedelta(minutes=5)
        end = valid_until or _now() + dt.timedelta(days=LEAF_DAYS)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (x509.CertificateBuilder()
                   .subject_name(_name(name)).issuer_name(self._cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                                  critical=False))
        if hosts and not client:
            builder = builder.add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]),
                                            critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        chain = cert.public_bytes(serialization.Encoding.PEM) + self.pem.read_bytes()
        issued = self._files(name)
        key_pem = _key_pem(key, key_password)
        _write(issued.cert, chain)
        _write(issued.key, key_pem, private=True)
        _write(issued.keystore, key_pem + chain, private=True)
        return issued

    def _files(self, name: str) -> Issued:
        return issued_files(self.folder, name)

    def ensure(self, name: str, *, hosts: Sequence[str] = ("127.0.0.1", "localhost"),
               client: bool = False) -> Issued:
        """``name``'s certificate, issued when missing, not from this CA, or expiring within a week."""
        issued = self._files(name)
        if all(p.exists() for p in (issued.cert, issued.key, issued.keystore)):
            cert = x509.load_pem_x509_certificate(issued.cert.read_bytes())
            if cert.issuer == self._cert.subject and cert.not_valid_after_utc - RENEW_BEFORE > _now():
                return issued
        return self.issue(name, hosts=hosts, client=client)


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
