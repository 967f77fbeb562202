"""Options of Spark's Kafka source (Java client names) from a cluster's librdkafka properties.

``mirrorflow.yaml`` holds librdkafka properties; Spark reads Kafka with the Java
client, which names some settings differently (``sasl.username`` + ``sasl.password``
become a ``sasl.jaas.config``, ``ssl.ca.location`` a PEM truststore, ...). Tuning
properties that only librdkafka knows are left out; a security property this
module cannot translate is an error naming it, never a silent downgrade. Values are
never put in an error message.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from replicator.errors import ConfigError

# Same name and meaning in both clients.
_SAME = ("bootstrap.servers", "security.protocol", "client.id", "sasl.kerberos.service.name",
         "ssl.key.password", "ssl.keystore.location", "ssl.keystore.password")
# Consumed by the translations below.
_TRANSLATED = {"sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "ssl.ca.location",
               "ssl.ca.pem", "ssl.certificate.location", "ssl.key.location", "ssl.certificate.pem", "ssl.key.pem",
               "ssl.endpoint.identification.algorithm", "sasl.kerberos.keytab", "sasl.kerberos.principal"}
_LOGIN = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
          "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
          "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sasl(props: Mapping[str, str], where: str) -> dict[str, str]:
    mechanism = props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "GSSAPI"
    out = {"sasl.mechanism": mechanism}
    if mechanism in _LOGIN:
        if "sasl.username" not in props or "sasl.password" not in props:
            raise ConfigError(f"{where}: sasl.mechanism {mechanism} needs sasl.username and sasl.password")
        out["sasl.jaas.config"] = (f"{_LOGIN[mechanism]} required username={_quoted(props['sasl.username'])}"
                                   f" password={_quoted(props['sasl.password'])};")
    elif mechanism == "GSSAPI" and "sasl.kerberos.keytab" in props:
        out["sasl.jaas.config"] = (
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true"
            f" keyTab={_quoted(props['sasl.kerberos.keytab'])}"
            f" principal={_quoted(props.get('sasl.kerberos.principal', 'kafkaclient'))};")
    elif mechanism != "GSSAPI":
        raise ConfigError(f"{where}: sasl.mechanism {mechanism} is not supported by the Spark jobs "
                          f"(supported: {', '.join(sorted(_LOGIN))}, GSSAPI)")
    return out


def _read(path: str, key: str, where: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: {key}: cannot read {path}: {exc.strerror}") from None


def _decrypted(key: str, password: str | None, where: str) -> str:
    """The client key as an unencrypted PKCS#8 PEM: Java's PEM keystore cannot decrypt the PBES2 keys that
    OpenSSL and librdkafka use ("PBES2 SecretKeyFactory not available" on Java 17), so the job decrypts it here,
    in memory. Spark's UI masks the option (``spark.sql.redaction.options.regex``)."""
    if "BEGIN ENCRYPTED PRIVATE KEY" not in key and "Proc-Type: 4,ENCRYPTED" not in key:
        return key
    if not password:
        raise ConfigError(f"{where}: the client key is encrypted: set ssl.key.password")
    from cryptography.hazmat.primitives import serialization

    try:
        loaded = serialization.load_pem_private_key(key.encode(), password.encode())
    except (ValueError, TypeError):
        raise ConfigError(f"{where}: ssl.key.password does not decrypt the client key") from None
    return loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()


def _ssl(props: Mapping[str, str], where: str) -> dict[str, str]:
    out = {}
    if "ssl.ca.location" in props:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": props["ssl.ca.location"]})
    elif "ssl.ca.pem" in props:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": props["ssl.ca.pem"]})
    cert = props.get("ssl.certificate.pem") or (
        _read(props["ssl.certificate.location"], "ssl.certificate.location", where)
        if "ssl.certificate.location" in props else None)
    key = props.get("ssl.key.pem") or (
        _read(props["ssl.key.location"], "ssl.key.location", where) if "ssl.key.location" in props else None)
    if (cert is None) != (key is None):
        raise ConfigError(f"{where}: a client certificate needs both its certificate and its key")
    if cert is not None and key is not None:
        out.update({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": cert,
                    "ssl.keystore.key": _decrypted(key, props.get("ssl.key.password"), where)})
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = props["ssl.endpoint.identification.algorithm"]
        out["ssl.endpoint.identification.algorithm"] = "" if algorithm == "none" else algorithm
    return out


def spark_kafka_options(cluster: str, properties: Mapping[str, str]) -> dict[str, str]:
    """``kafka.*`` options for ``spark.read.format("kafka")`` of the cluster named ``cluster``."""
    where = f"cluster {cluster!r}"
    unknown = sorted(k for k in properties if k.startswith(("sasl.", "ssl.")) and k not in _TRANSLATED
                     and k not in _SAME)
    if unknown:
        raise ConfigError(f"{where}: {', '.join(unknown)}: not supported by the Spark jobs (their Kafka source "
                          "uses the Java client)")
    java = {k: properties[k] for k in _SAME if k in properties}
    protocol = properties.get("security.protocol", "plaintext").upper()
    if protocol.startswith("SASL"):
        java.update(_sasl(properties, where))
    if protocol in ("SSL", "SASL_SSL"):
        java.update(_ssl(properties, where))
    if "ssl.keystore.location" in java:
        java["ssl.keystore.type"] = "PKCS12"  # librdkafka's keystore is always PKCS#12
    elif "ssl.keystore.key" in java:
        java.pop("ssl.key.password", None)  # the PEM key is passed decrypted
    return {f"kafka.{k}": v for k, v in java.items()}
