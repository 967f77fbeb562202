"""The local CA of `dev up --secure` and the tests: what it issues, kept across runs, renewed before expiry."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from replicator.dev.tls import LocalCA


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_a_broker_certificate_names_its_hosts_and_is_signed_by_the_ca(tmp_path: Path) -> None:
    ca = LocalCA(tmp_path)
    issued = ca.issue("broker", hosts=("127.0.0.1", "kafka.local"))
    cert, root = _cert(issued.cert), _cert(ca.pem)
    cert.verify_directly_issued_by(root)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.get_values_for_type(x509.DNSName) == ["kafka.local"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    keystore = issued.keystore.read_text()
    assert keystore.startswith("-----BEGIN PRIVATE KEY-----") and keystore.count("BEGIN CERTIFICATE") == 2
    assert stat.S_IMODE(issued.key.stat().st_mode) == 0o600 == stat.S_IMODE(issued.keystore.stat().st_mode)


def test_a_client_certificate_carries_its_name_as_cn_and_no_hosts(tmp_path: Path) -> None:
    cert = _cert(LocalCA(tmp_path).issue("mirrorflow", client=True).cert)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "mirrorflow"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not [e for e in cert.extensions if isinstance(e.value, x509.SubjectAlternativeName)]


def test_the_ca_is_kept_and_a_valid_certificate_is_not_issued_again(tmp_path: Path) -> None:
    first = LocalCA(tmp_path)
    issued = first.ensure("broker")
    before = (first.pem.read_bytes(), issued.cert.read_bytes())
    again = LocalCA(tmp_path)
    assert (again.pem.read_bytes(), again.ensure("broker").cert.read_bytes()) == before


def test_an_expiring_or_foreign_certificate_is_issued_again(tmp_path: Path) -> None:
    ca = LocalCA(tmp_path / "ca")
    now = dt.datetime.now(dt.UTC)
    old = ca.issue("broker", valid_from=now - dt.timedelta(days=400), valid_until=now + dt.timedelta(days=2))
    renewed = _cert(ca.ensure("broker").cert)
    assert renewed.not_valid_after_utc > now + dt.timedelta(days=300) and old.cert.exists()
    LocalCA(tmp_path / "other", "Other CA").issue("broker")
    for name in ("broker.pem", "broker.key", "broker.keystore.pem"):  # files another CA issued
        (tmp_path / "ca" / name).write_bytes((tmp_path / "other" / name).read_bytes())
    _cert(ca.ensure("broker").cert).verify_directly_issued_by(_cert(ca.pem))
