"""Before Spark runs, the driver estimates its slots from a local master (exactly-once fences them early)."""

from __future__ import annotations

import os

import pytest

from services.data_mirror.spark_start import local_cores


@pytest.mark.parametrize(
    ("master", "cores"),
    [("local", 1), ("local[3]", 3), ("local[3,2]", 3), ("local[0]", 1), ("spark://m:7077", None), ("yarn", None)],
)
def test_a_local_master_says_its_cores_and_a_cluster_master_leaves_it_to_spark(master: str, cores: int | None) -> None:
    assert local_cores(master) == cores


def test_local_star_is_every_core_this_process_may_run_on() -> None:
    assert local_cores("local[*]") == len(os.sched_getaffinity(0))
