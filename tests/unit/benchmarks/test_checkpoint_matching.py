"""How the checkpoint benchmarks match commits to the checkpoints that cover them."""

from __future__ import annotations

from benchmarks.checkpoint_follower import Written, checkpoint_delays, commit_lags
from benchmarks.group_committer import TimedCommit


def test_a_commit_is_covered_by_the_first_checkpoint_reaching_its_offset() -> None:
    commits = [TimedCommit("g", 0, 10, 1000.0), TimedCommit("g", 0, 20, 2000.0)]
    written: Written = {("g", 0): [(5, 900), (10, 1150), (25, 2600), (30, 3000)]}

    lags, uncovered = commit_lags(commits, written)

    assert sorted(lags) == [150.0, 600.0]
    assert uncovered == 0


def test_a_skipped_commit_is_covered_later_and_the_last_one_not_at_all() -> None:
    """As MM2 does when a commit's translated offset does not move: a later checkpoint covers it, or none."""
    commits = [TimedCommit("g", 0, 10, 1000.0), TimedCommit("g", 0, 20, 2000.0), TimedCommit("g", 0, 40, 3000.0)]
    written: Written = {("g", 0): [(20, 2100)]}

    lags, uncovered = commit_lags(commits, written)

    assert sorted(lags) == [100.0, 1100.0]
    assert uncovered == 1


def test_groups_and_partitions_are_matched_apart() -> None:
    commits = [TimedCommit("g", 0, 10, 1000.0), TimedCommit("g", 1, 10, 1000.0), TimedCommit("h", 0, 10, 1000.0)]
    written: Written = {("g", 1): [(10, 1300)], ("h", 0): [(10, 1200)]}

    lags, uncovered = commit_lags(commits, written)

    assert sorted(lags) == [200.0, 300.0]
    assert uncovered == 1


def test_delay_counts_only_checkpoints_of_exactly_a_commits_offset_once() -> None:
    commits = [TimedCommit("g", 0, 10, 1000.0), TimedCommit("g", 0, 20, 2000.0)]
    # 0 is the position committed before timing began; 10 is checkpointed twice (a re-emit); 15 was never committed
    written: Written = {("g", 0): [(0, 500), (10, 1400), (10, 1900), (15, 1950), (20, 2050)]}

    assert sorted(checkpoint_delays(commits, written)) == [50.0, 400.0]
