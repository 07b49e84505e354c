"""One-sided MPI conformance through btl-ofi: every provider x MR path x rank
count x variant is one mpirun (see matrix.py); every check it ran is one test.
Verdicts come from outcome.py only."""

import outcome


def test_launch(group, launches):
    """The launch ran to the end, its traffic went through btl-ofi with the
    requested provider and an MR mode inside the requested mask, and every
    registration was released."""
    launch = launches.get(group)
    outcome.judge_group(launch, group, launch.check_ids).apply()


def test_check(group, check, launches):
    """Exact window contents, sentinels and fetched results, and the right
    btl-ofi counters moved (none at all for Win.Allocate on one node)."""
    outcome.judge_check(launches.get(group), group, check).apply()
