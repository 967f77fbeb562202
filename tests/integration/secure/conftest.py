"""One broker with TLS listeners for the secured-cluster tests (started once per session, when first asked):

- SECURE    SASL_SSL, SCRAM-SHA-256/512 users ``mirrorflow`` and ``app``
- MTLS      SSL with client certificates required (the CA's ``mirrorflow`` certificate gets in)
- EXPIRED   SSL, presenting a certificate that expired in 2021
- WRONGNAME SSL, presenting a certificate for ``kafka.example.com`` only
- ROTATE    SASL_SSL like SECURE, but a login lasts 3 s: clients authenticate again (KIP-368), so a password
            changed on the broker is asked for within seconds (credential rotation)

Its PLAINTEXT listener stays for the tests' own reads and writes. Two cluster names of a config may point
at two listeners of this one broker: a route between them crosses TLS on both sides.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from replicator.dev.localcluster import LocalCluster, LocalClusterSpec, TlsListener
from replicator.dev.tls import Issued, LocalCA
from tests.support import free_port

PASSWORDS = {"mirrorflow": "Scram-Pa55-mirrorflow-7f3a", "app": "Scram-Pa55-app-91c2"}
KEY_PASSWORD = "Key-Pa55-client-4e8d"  # of the encrypted client key


@dataclass(frozen=True)
class Secured:
    """The secured broker and the files its clients need."""

    cluster: LocalCluster
    ca: Path
    client: Issued  # signed by the broker's CA, CN=mirrorflow
    encrypted: Issued  # the same, its key encrypted with KEY_PASSWORD
    expired_client: Issued  # signed by the broker's CA, expired in 2021
    stranger: Issued  # a client certificate from another CA
    other_ca: Path
    listeners: dict[str, str]  # listener name -> host:port

    @property
    def plaintext(self) -> str:
        """The PLAINTEXT listener, for the tests' own clients."""
        return self.cluster.spec.bootstrap_servers

    def scram(self, user: str = "mirrorflow", password: str | None = None,
              mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
        """Client properties of a SCRAM login on the SASL_SSL listener."""
        return {"bootstrap.servers": self.listeners["SECURE"], "security.protocol": "SASL_SSL",
                "sasl.mechanism": mechanism, "sasl.username": user,
                "sasl.password": PASSWORDS.get(user, "x") if password is None else password,
                "ssl.ca.location": str(self.ca)}

    def mtls(self, key_password: str | None = None) -> dict[str, str]:
        """Client properties of a certificate login on the mutual-TLS listener (with ``key_password``: the
        encrypted key, that value as its ``ssl.key.password``)."""
        issued = self.client if key_password is None else self.encrypted
        return {"bootstrap.servers": self.listeners["MTLS"], "security.protocol": "SSL",
                "ssl.ca.location": str(self.ca), "ssl.certificate.location": str(issued.cert),
                "ssl.key.location": str(issued.key),
                **({} if key_password is None else {"ssl.key.password": key_password})}


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    home = tmp_path_factory.mktemp("secured")
    ca = LocalCA(home / "tls")
    other = LocalCA(home / "other-ca", "Some other CA")
    broker = ca.issue("broker")
    past = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    expired = ca.issue("expired", valid_from=past, valid_until=past + dt.timedelta(days=365))
    wrong_name = ca.issue("wrongname", hosts=("kafka.example.com",))
    listeners = (TlsListener("SECURE", free_port(), "SASL_SSL", broker.keystore, ca.pem),
                 TlsListener("MTLS", free_port(), "SSL", broker.keystore, ca.pem, client_auth=True),
                 TlsListener("EXPIRED", free_port(), "SSL", expired.keystore, ca.pem),
                 TlsListener("WRONGNAME", free_port(), "SSL", wrong_name.keystore, ca.pem),
                 TlsListener("ROTATE", free_port(), "SASL_SSL", broker.keystore, ca.pem))
    reauth = {f"listener.name.rotate.{mechanism}.connections.max.reauth.ms": "3000"
              for mechanism in ("scram-sha-256", "scram-sha-512")}
    cluster = LocalCluster(LocalClusterSpec("secured", home / "broker", free_port(), free_port(), heap="384m",
                                            tls_listeners=listeners, scram_users=PASSWORDS,
                                            extra_properties=reauth))
    cluster.start()
    try:
        yield Secured(cluster, ca.pem, ca.issue("mirrorflow", client=True),
                      ca.issue("mirrorflow-encrypted", client=True, key_password=KEY_PASSWORD),
                      ca.issue("expired-client", client=True, valid_from=past,
                               valid_until=past + dt.timedelta(days=365)),
                      other.issue("stranger", client=True), other.pem,
                      {lst.name: lst.bootstrap_servers("127.0.0.1") for lst in listeners})
    finally:
        cluster.stop()
