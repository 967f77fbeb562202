"""`dev up --secure`: what the written config holds, and that the choice is kept until --plaintext (no broker)."""

from __future__ import annotations

import stat
from pathlib import Path

from replicator.config import load_config
from replicator.dev.devenv import dev_clusters, dev_config, is_secure, set_secure, write_dev_config

PORTS = {"primary": 19092, "backup": 29092}


def test_a_secured_dev_config_uses_the_tls_listener_and_reads_the_password_from_its_file(tmp_path: Path) -> None:
    set_secure(tmp_path, True)
    assert [c.spec.scram_users for c in dev_clusters(tmp_path, PORTS)] == [{}, {}]  # asking makes nothing
    assert not (tmp_path / "dev" / "tls").exists() and not (tmp_path / "dev" / "secrets").exists()
    clusters = {c.spec.name: c.spec for c in dev_clusters(tmp_path, PORTS, prepare=True)}
    assert {c.spec.name: c.spec for c in dev_clusters(tmp_path, PORTS)} == clusters  # the files made, read
    assert [(lst.name, lst.port, lst.protocol) for lst in clusters["backup"].tls_listeners] == [
        ("SECURE", 29094, "SASL_SSL")]
    password_file = tmp_path / "dev" / "secrets" / "scram.password"
    password = password_file.read_text().strip()
    assert len(password) >= 24 and stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert clusters["primary"].scram_users == {"mirrorflow": password}

    path = write_dev_config(tmp_path, PORTS)
    assert password not in path.read_text()
    primary = load_config(path, {}).cluster("primary").client_properties()
    assert primary["bootstrap.servers"] == "127.0.0.1:19094" and primary["security.protocol"] == "SASL_SSL"
    assert primary["sasl.password"] == password  # read from the file the config names
    assert primary["ssl.ca.location"] == str((tmp_path / "dev" / "tls" / "ca.pem").resolve())


def test_the_choice_is_kept_and_the_same_secrets_are_used_again(tmp_path: Path) -> None:
    assert not is_secure(tmp_path)
    assert dev_config(tmp_path, PORTS)["clusters"] == {  # type: ignore[comparison-overlap]
        "primary": {"bootstrap.servers": "127.0.0.1:19092"}, "backup": {"bootstrap.servers": "127.0.0.1:29092"}}
    set_secure(tmp_path, True)
    first = [c.spec for c in dev_clusters(tmp_path, PORTS, prepare=True)]
    again = [c.spec for c in dev_clusters(tmp_path, PORTS, prepare=True)]
    assert is_secure(tmp_path) and first == again  # same password, same broker certificate
    set_secure(tmp_path, False)
    assert not is_secure(tmp_path) and all(not c.spec.tls_listeners for c in dev_clusters(tmp_path, PORTS))
