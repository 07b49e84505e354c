"""Many windows over a run leave nothing behind (issue 28 item 4).

rank_many_windows.py, 2 ranks: after a warm-up of WARMUP windows, SEQUENCE
windows created and freed one after another (every 100th carries a put),
then LIVE windows alive at once (a put through the last), all freed, and
that once more. From
btl-ofi's MPI_T counters and /proc, per rank:
  - registrations_live is back where it started after the sequence and at
    the end, and rose by at least one per live window while they lived (the
    windows really were registered through btl-ofi);
  - the open file descriptors are back where they started;
  - resident memory grew by less than RSS_PER_WINDOW bytes per window of the
    sequence (a leak of that much per window would show); LIVE windows made
    and freed a second time leave it within RSS_AGAIN of where the first
    round left it (the allocator and Open MPI keep some of what 1,000 live
    windows used, about 18 MB here, once; a leak would grow again).
Every launch exact and carried by btl-ofi (its put counter moved).
"""

import pytest

import outcome

WARMUP, SEQUENCE, LIVE = 1000, 10000, 1000
RSS_PER_WINDOW = 100        # bytes
RSS_AGAIN = 2 * 1024        # KiB: 2 KiB per live window
CHECK = {"kind": "many_windows", "id": "many_windows", "warmup": WARMUP,
         "sequence": SEQUENCE, "live": LIVE}


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_many_windows_leave_nothing(provider, launches, tmp_path, capsys):
    launch = outcome.run_one_check(provider, CHECK, 900, tmp_path, launches=launches)
    lines = outcome.rank_lines(launch, "MANYWIN", CHECK["id"])
    problems = []
    for rank, p in sorted(lines.items()):
        s, q, live, e, e2 = (p["start"], p["after_sequence"], p["while_live"], p["end"],
                             p["end_again"])
        with capsys.disabled():
            print(f"\n{provider} rank {rank}: registrations {s['registrations_live']} -> "
                  f"{q['registrations_live']} -> {live['registrations_live']} (live) -> "
                  f"{e['registrations_live']}; fds {s['fds']} -> {q['fds']} -> {e['fds']}; "
                  f"RSS KiB {s['rss_kib']} -> {q['rss_kib']} -> {live['rss_kib']} (live) -> "
                  f"{e['rss_kib']} -> {p['while_live_again']['rss_kib']} (live again) -> "
                  f"{e2['rss_kib']}")
        if not s["registrations_live"] == q["registrations_live"] == e["registrations_live"] \
                == e2["registrations_live"]:
            problems.append(f"rank {rank}: registrations_live {s['registrations_live']} at the "
                            f"start, {q['registrations_live']} after {SEQUENCE} windows, "
                            f"{e['registrations_live']} at the end")
        if live["registrations_live"] - s["registrations_live"] < LIVE:
            problems.append(f"rank {rank}: {LIVE} live windows raised registrations_live by "
                            f"{live['registrations_live'] - s['registrations_live']} only")
        if not s["fds"] == q["fds"] == e["fds"] == e2["fds"]:
            problems.append(f"rank {rank}: open descriptors {s['fds']} -> {q['fds']} -> {e['fds']}")
        grown = (q["rss_kib"] - s["rss_kib"]) * 1024
        if grown > RSS_PER_WINDOW * SEQUENCE:
            problems.append(f"rank {rank}: resident memory grew {grown} bytes over {SEQUENCE} "
                            f"windows (> {RSS_PER_WINDOW} per window)")
        if e2["rss_kib"] - e["rss_kib"] > RSS_AGAIN:
            problems.append(f"rank {rank}: {LIVE} live windows made and freed again left "
                            f"{e2['rss_kib'] - e['rss_kib']} KiB more resident than the first "
                            f"time (> {RSS_AGAIN}: a leak per window)")
    assert not problems, "\n".join(problems) + f"\n  {launch.command_line()}"
