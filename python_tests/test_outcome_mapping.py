"""The verdict mapping itself (outcome.py), on synthetic launches: a timeout is
a timeout, a signal a crash, missing counters 'not carried', a wrong byte a
failure. No mpirun here."""

import json

import check_sets
import launcher
import matrix
import outcome

GROUP = matrix.Group("shm", "default", 2, "base", "virt_addr")
PUT = check_sets.op_check("put", "create_du8", "fence", "int64", 4)
SELECTED = "".join(f"[vm:{p}] btl:{launcher.component_name()}: selected provider shm "
                   f"(fabric shm, domain shm), "
                   f"mr_mode virt_addr, key size 8, completion delivery\n" for p in (1, 2))


def fake(records, rc=0, timed_out=False, stderr=SELECTED):
    return launcher.Launch(argv=["mpirun"], returncode=None if timed_out else rc,
                           timed_out=timed_out, seconds=1.0, stdout="", stderr=stderr,
                           records=records, timeout=10.0, plan_ids=[PUT["id"]],
                           check_ids=[PUT["id"]])


START_OK = {"type": "start", "nranks": 2, "counters": [["ok", ""], ["ok", ""]]}
MOVED = {"put_count": 2, "put_bytes": 64}


def check(errors=(), deltas=MOVED):
    return {"type": "check", "id": PUT["id"], "errors": list(errors), "deltas": deltas}


def test_exact_and_carried_passes():
    launch = fake([START_OK, check()])
    assert outcome.judge_check(launch, GROUP, PUT).status == "pass"
    assert outcome.judge_group(launch, GROUP, [PUT["id"]]).status == "pass"


def test_wrong_bytes_fail_naming_every_axis():
    verdict = outcome.judge_check(fake([START_OK, check(["rank 1: element 0: got 1"])]),
                                  GROUP, PUT)
    assert verdict.status == "fail"
    for word in ("provider=shm", "mr_path=default", "nranks=2", "flavor_name=create_du8",
                 "sync=fence", "op=put", "dtype=int64"):
        assert word in verdict.message


def test_counters_that_did_not_move_fail():
    verdict = outcome.judge_check(fake([START_OK, check(deltas={"get_count": 3})]), GROUP, PUT)
    assert (verdict.status == "fail"
            and f"{launcher.param('put_count')} did not move" in verdict.message)


def test_absent_counters_are_not_ours():
    start = {**START_OK, "counters": [["absent", "x"], ["absent", "x"]]}
    launch = fake([start, check(deltas={})], stderr="")
    assert outcome.judge_check(launch, GROUP, PUT).status == "fail"
    carried, reasons = outcome.proof_of_path(launch, GROUP)
    assert not carried and any("absent" in r for r in reasons)


def test_mr_mode_outside_mask_fails_the_group():
    group = matrix.Group("shm", "prov_key", 2, "base")
    verdict = outcome.judge_group(fake([START_OK, check()]), group, [PUT["id"]])
    assert verdict.status == "fail" and "virt_addr" in verdict.message


def test_row_named_for_another_mode_fails_the_group():
    """A row is named by the mode it must negotiate; the ranks' report decides."""
    group = matrix.Group("shm", "0", 2, "base", "none")
    verdict = outcome.judge_group(fake([START_OK, check()]), group, [PUT["id"]])
    assert verdict.status == "fail" and "named for none" in verdict.message


def test_hmem_is_not_an_mr_requirement():
    stderr = SELECTED.replace("mr_mode virt_addr,", "mr_mode virt_addr|hmem,")
    launch = fake([START_OK, check()], stderr=stderr)
    assert outcome.judge_group(launch, GROUP, [PUT["id"]]).status == "pass"


STRICT = matrix.Group("shm;ofi_strictmr", "default", 2, "base", "local+virt_addr+allocated+prov_key",
                      ("verbs-like", 2))


def _strict_launch(tmp_path, lines, key_size=2):
    stderr = "".join(f"[vm:{p}] btl:{launcher.component_name()}: selected provider "
                     f"shm;ofi_strictmr (fabric shm, domain shm), mr_mode "
                     f"local|virt_addr|allocated|prov_key, key size {key_size}, completion "
                     f"delivery\n" for p in (1, 2))
    launch = fake([START_OK, check()], stderr=stderr)
    launch.strict_report = tmp_path / "strictmr.jsonl"
    if lines is not None:
        launch.strict_report.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return launch


def test_strict_rows_need_a_clean_report(tmp_path):
    clean = {"checked": {"range": 40, "desc_missing": 12}, "violations": {"range": 0}}
    assert outcome.judge_group(_strict_launch(tmp_path, [clean, clean]), STRICT,
                               [PUT["id"]]).status == "pass"


def test_strict_violation_fails_the_group(tmp_path):
    bad = {"checked": {"range": 40}, "violations": {"range": 0, "desc_missing": 3}}
    verdict = outcome.judge_group(_strict_launch(tmp_path, [bad]), STRICT, [PUT["id"]])
    assert verdict.status == "fail" and "desc_missing" in verdict.message


def test_strict_row_without_report_or_checks_fails(tmp_path):
    assert outcome.judge_group(_strict_launch(tmp_path, None), STRICT,
                               [PUT["id"]]).status == "fail"
    idle = {"checked": {"range": 0}, "violations": {}}
    assert outcome.judge_group(_strict_launch(tmp_path, [idle]), STRICT,
                               [PUT["id"]]).status == "fail"


def test_strict_key_size_must_be_the_demanded_one(tmp_path):
    clean = {"checked": {"range": 40}, "violations": {}}
    verdict = outcome.judge_group(_strict_launch(tmp_path, [clean], key_size=8), STRICT,
                                  [PUT["id"]])
    assert verdict.status == "fail" and "key size" in verdict.message


def test_timeout_is_reported_as_timeout():
    launch = fake([START_OK], timed_out=True)
    assert outcome.judge_check(launch, GROUP, PUT).status == "timeout"
    assert "hung in this check" in outcome.judge_check(launch, GROUP, PUT).message
    assert outcome.judge_group(launch, GROUP, [PUT["id"]]).status == "timeout"


def test_signal_is_a_crash():
    launch = fake([START_OK], rc=139)
    verdict = outcome.judge_group(launch, GROUP, [PUT["id"]])
    assert verdict.status == "fail" and "CRASH (SIGSEGV)" in verdict.message


def test_crash_shows_the_frames_nearest_the_fault():
    """A backtrace longer than the tail still shows its first frames (where it failed)."""
    trace = ["[vm:7] *** Process received signal ***", "[vm:7] Signal: Segmentation fault (11)"]
    trace += [f"[vm:7] [{i:2d}] /lib/frame{i}.so(+0x{i:x})" for i in range(30)]
    trace += ["[vm:7] *** End of error message ***"]
    launch = fake([START_OK], rc=139, stderr=SELECTED + "\n".join(trace) + "\n")
    verdict = outcome.judge_group(launch, GROUP, [PUT["id"]])
    assert "CRASH (SIGSEGV)" in verdict.message
    assert "/lib/frame0.so(+0x0)" in verdict.message, verdict.message
    assert "/lib/frame29.so" in verdict.message, verdict.message


def test_allocate_must_not_touch_the_btl():
    spec = check_sets.op_check("put", "allocate", "fence", "int64", 4)
    rec = {**check(), "id": spec["id"]}
    verdict = outcome.judge_check(fake([START_OK, rec]), GROUP, spec)
    assert verdict.status == "fail" and "must not use any BTL" in verdict.message
