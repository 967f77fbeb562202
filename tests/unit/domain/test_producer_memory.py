"""Which records the target's brokers forget the producer of, at once (``replicator.domain.producer_memory``)."""

import pytest

from replicator.domain.producer_memory import forgettable

NOW_S = 1_764_547_200.0  # 2025-12-01T00:00:00Z


@pytest.mark.parametrize(("forgets_s", "age_s", "forgotten"), [
    (86_400.0, 23.5 * 3600, True),  # within the hour's margin for clocks of a day's memory
    (86_400.0, 22.5 * 3600, False),
    (86_400.0, 60.0, False),
    (86_400.0, -60.0, False),  # stamped ahead of this host's clock
    (600.0, 301.0, True),  # a short memory: half of it is the margin
    (600.0, 299.0, False),
])
def test_a_record_counts_as_forgotten_once_its_timestamp_is_nearly_as_old_as_the_targets_memory(
        forgets_s: float, age_s: float, forgotten: bool) -> None:
    assert forgettable(int((NOW_S - age_s) * 1000), NOW_S, forgets_s) is forgotten
