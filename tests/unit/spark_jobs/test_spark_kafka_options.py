"""librdkafka properties -> Spark Kafka source options; untranslatable security settings are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.errors import ConfigError
from spark_jobs.kafka_options import spark_kafka_options


def test_plaintext_keeps_only_what_the_java_client_knows() -> None:
    assert spark_kafka_options("a", {"bootstrap.servers": "h:1", "client.id": "x", "linger.ms": "5",
                                     "statistics.interval.ms": "1000"}) == {
        "kafka.bootstrap.servers": "h:1", "kafka.client.id": "x"}


@pytest.mark.parametrize(("mechanism", "module"), [("PLAIN", "plain.PlainLoginModule"),
                                                   ("SCRAM-SHA-512", "scram.ScramLoginModule")])
def test_sasl_user_and_password_become_a_jaas_config(mechanism: str, module: str) -> None:
    options = spark_kafka_options("a", {"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL",
                                        "sasl.mechanisms": mechanism, "sasl.username": "u",
                                        "sasl.password": 'p"w\\', "ssl.ca.location": "/ca.pem"})
    assert options == {
        "kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": mechanism,
        "kafka.sasl.jaas.config": f'org.apache.kafka.common.security.{module} required username="u" '
                                  'password="p\\"w\\\\";',
        "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": "/ca.pem"}


def test_client_certificate_files_become_a_pem_keystore(tmp_path: Path) -> None:
    (tmp_path / "c.pem").write_text("CERT")
    (tmp_path / "k.pem").write_text("KEY")
    options = spark_kafka_options("a", {"bootstrap.servers": "h:1", "security.protocol": "ssl",
                                        "ssl.certificate.location": str(tmp_path / "c.pem"),
                                        "ssl.key.location": str(tmp_path / "k.pem"), "ssl.key.password": "kp",
                                        "ssl.endpoint.identification.algorithm": "none"})
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert (options["kafka.ssl.keystore.certificate.chain"], options["kafka.ssl.keystore.key"]) == ("CERT", "KEY")
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert "kafka.ssl.key.password" not in options  # Java would take the PEM key for an encrypted one


def test_an_encrypted_client_key_reaches_java_decrypted_in_memory(tmp_path: Path) -> None:
    """Java 17's PEM keystore cannot decrypt a PBES2 key ("PBES2 SecretKeyFactory not available")."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from replicator.dev.tls import LocalCA

    issued = LocalCA(tmp_path / "ca").issue("client", client=True, key_password="K3y-Pa55")
    props = {"bootstrap.servers": "h:1", "security.protocol": "SSL", "ssl.certificate.location": str(issued.cert),
             "ssl.key.location": str(issued.key), "ssl.key.password": "K3y-Pa55"}
    options = spark_kafka_options("a", props)
    key = options["kafka.ssl.keystore.key"]
    assert key.startswith("-----BEGIN PRIVATE KEY-----") and "kafka.ssl.key.password" not in options
    assert load_pem_private_key(key.encode(), None).public_key() == load_pem_private_key(
        issued.key.read_bytes(), b"K3y-Pa55").public_key()
    for password, said in ((None, "the client key is encrypted: set ssl.key.password"),
                           ("not-it", "ssl.key.password does not decrypt the client key")):
        wrong = {k: v for k, v in props.items() if k != "ssl.key.password"} | (
            {} if password is None else {"ssl.key.password": password})
        with pytest.raises(ConfigError) as refused:
            spark_kafka_options("a", wrong)
        assert said in str(refused.value) and "not-it" not in str(refused.value)


@pytest.mark.parametrize(("props", "message"), [
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "OAUTHBEARER is not supported"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.password": "topsecret"},
     "needs sasl.username and sasl.password"),
    ({"security.protocol": "SSL", "sasl.oauthbearer.client.secret": "topsecret"},
     "sasl.oauthbearer.client.secret: not supported"),
    ({"security.protocol": "SSL", "ssl.key.pem": "topsecret"}, "needs both its certificate and its key"),
    ({"security.protocol": "SSL", "ssl.certificate.location": "/nonexistent.pem", "ssl.key.pem": "topsecret"},
     "ssl.certificate.location: cannot read /nonexistent.pem"),
])
def test_untranslatable_security_is_an_error_naming_the_key_never_the_value(props: dict[str, str],
                                                                            message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        spark_kafka_options("backup", {"bootstrap.servers": "h:1", **props})
    assert "cluster 'backup'" in str(caught.value) and "topsecret" not in str(caught.value)
