"""The fleet's host network picks a 10.213.N.0/24 that no address of the machine overlaps."""

from __future__ import annotations

import pytest

from replicator.dev.hosts import HostNetworkError, free_subnet

LOOPBACK = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"


@pytest.mark.parametrize(("addresses", "third"), [
    ("", 1),
    (LOOPBACK, 1),
    (LOOPBACK + "5: mfbr1a2b    inet 10.213.1.1/24 scope global mfbr1a2b\n", 2),
    ("2: eth0    inet 10.213.1.7/24 brd 10.213.1.255\n3: br    inet 10.213.2.1/24\n", 3),
    ("2: eth0    inet 10.0.0.5/8 brd 10.255.255.255\n", None),  # a /8 covering every candidate
    ("2: eth0    inet 10.213.0.5/23\n", 2),  # 10.213.0.0-10.213.1.255
])
def test_free_subnet(addresses: str, third: int | None) -> None:
    if third is None:
        with pytest.raises(HostNetworkError, match=r"no free 10\.213\.N\.0/24"):
            free_subnet(addresses)
    else:
        assert free_subnet(addresses) == third
