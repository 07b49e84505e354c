"""compare.py's runs: one benchmark of one configuration (its command line and
environment, launched under the machine-wide lock and bounded), what the run said (its
status, its JSON records, which component carried each row), and every configuration and
benchmark in turn, repetition after repetition.
"""

import json
import os
import re
import sys
import time

import compare_net

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python_tests"))
import launcher  # noqa: E402  the suite's locked, bounded runner

EXIT_SKIP = 77


def bench_args(bench, mode, kind):
    """Program and arguments of one benchmark for a configuration of this kind (Config.kind).
    Open MPI's latency runs also time the two ranks' core-to-core round trip beside each row
    (osc_latency -c: the machine's mode, compare_stats.machine_modes)."""
    lat = ["-S", mode["lat_sizes"]] if mode["lat_sizes"] else []
    bw = ["-S", mode["bw_sizes"]] if mode["bw_sizes"] else []
    rate = ["-S", mode["rate_sizes"]] if mode.get("rate_sizes") else []
    common = ["-j", "-B", mode["budget"]]
    if kind == "raw":
        table = {
            "latency": ["-t", "latency", "-i", mode["lat_iters"]] + lat,
            "bw": ["-t", "bw", "-i", mode["bw_iters"]] + bw,
            "bibw": ["-t", "bibw", "-i", mode["bw_iters"]] + bw,
            "msgrate": ["-t", "msgrate", "-i", mode["rate_iters"]] + rate,
            "atomic_rate": ["-t", "atomic_rate", "-i", mode["rate_iters"]],
        }
        return ("ofi_rma_ref", table[bench] + common) if bench in table else None
    table = {
        "latency": ("osc_latency", ["-i", mode["lat_iters"]] + lat),
        # an epoch per operation: MPI_Win_lock (shared / exclusive), the operation, unlock
        "latency_lock": ("osc_latency", ["-s", "lock", "-i", mode["lat_iters"]] + lat),
        "latency_lock_excl": ("osc_latency", ["-s", "lock_excl", "-i", mode["lat_iters"]] + lat),
        "bw": ("osc_bw", ["-i", mode["bw_iters"]] + bw),
        "bw_fence": ("osc_bw", ["-s", "fence", "-i", mode["bw_iters"]] + bw),
        "bibw": ("osc_bw", ["-d", "bi", "-i", mode["bw_iters"]] + bw),
        "msgrate": ("osc_msgrate", ["-i", mode["rate_iters"]] + rate),
        "atomic_rate": ("osc_atomic_rate", ["-i", mode["rate_iters"]]),
    }
    prog, args = table[bench]
    rtt = ["-c"] if kind == "mpi" and prog == "osc_latency" else []
    return prog, args + rtt + common


def run_env(cfg, base_env, paths):
    env = {k: v for k, v in base_env.items() if not k.startswith(("OMPI_MCA_", "PMIX_MCA_"))}
    env["BTL_OFI_COMPONENT"] = paths["BTL_OFI_COMPONENT"]  # the harness reads our counters by it
    env.update(cfg.env)
    if cfg.kind == "mpi":
        env["OMPI_MCA_mca_base_component_path"] = cfg.component_path
        if paths["PMIX_MCA_mca_base_component_path"]:
            env["PMIX_MCA_mca_base_component_path"] = paths["PMIX_MCA_mca_base_component_path"]
        if os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


# Written to drop the clean page cache (proc(5)); compare.py --drop-caches, root.
DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_page_cache():
    """Write dirty pages back and drop the clean page cache, so that the next run reads its
    programs and shared objects into newly chosen physical pages. Kept cached from run to
    run, one install's code keeps its physical pages (and, the likely cause, its sets in the
    physically indexed caches) for the whole comparison: two installs of one source then
    differed by up to 4 % in paired ratios, and not with the cache dropped before every run
    (osc_harness/PERFORMANCE.md). OSError where it cannot be written."""
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("1\n")


def drop_caches_refused():
    """None where the page cache can be dropped (it is, once), else why not."""
    try:
        drop_page_cache()
    except OSError as e:
        return f"--drop-caches: cannot write {DROP_CACHES} ({e.strerror}); it takes root"
    return None


def locked_run(cmd, env, timeout):
    """Run under the machine-wide MPI lock, bounded (the whole process tree is killed at the
    timeout); returns (rc, stdout, stderr, seconds), rc None for a timeout."""
    run = launcher.run_argv(cmd, timeout, env, None)
    return run.returncode, run.stdout, run.stderr, run.seconds


def classify(rc, stderr):
    if rc is None:
        return "timeout"
    if rc == 0:
        return "ok"
    if rc == EXIT_SKIP:
        return "skipped"
    if rc < 0:
        return f"crashed (signal {-rc})"
    for sig, name in ((11, "SIGSEGV"), (6, "SIGABRT"), (7, "SIGBUS")):
        if f"signal {sig}" in stderr or rc == 128 + sig:
            return f"crashed ({name})"
    if "abort" in stderr.lower():
        return f"aborted (exit {rc})"
    return f"failed (exit {rc})"


def why_not(stderr):
    """The program's own reason for a run that did not end well (its last line that
    says so), without mpirun's boilerplate around it."""
    lines = [line.strip() for line in stderr.splitlines()
             if "mpirun" not in line and not line.startswith(("-", "*"))]
    for pattern in (r"not supported here", r"not supported|could not|cannot|error|failed|abort"):
        said = [line for line in lines if re.search(pattern, line, re.I)]
        if said:
            return said[-1][:200]
    return ""


def parse_records(stdout):
    meta, rows = {}, []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("meta"):
            meta = rec
        else:
            rows.append(rec)
    return meta, rows


def osc_path(stderr):
    """What osc/rdma 5.0 said it used (osc_base_verbose), or "" when it said nothing."""
    direct = sorted(set(re.findall(r"accelerated_query: selected btl: (\S+)", stderr)))
    if direct:
        return "osc/rdma direct over btl/" + ",".join(direct)
    alternate = sorted(set(re.findall(r"found alternate btl (\S+)", stderr)))
    if alternate:
        return "osc/rdma active messages over btl/" + ",btl/".join(alternate)
    return ""


def btl_selected(stderr):
    """What btl-ofi said it selected (btl_base_verbose 10), e.g. "provider tcp, atomics
    messages, gets native", or "" when it said nothing."""
    said = sorted(set(re.findall(r"selected provider (\S+) \(.*?\).*?atomics (\w+), gets (\w+)",
                                 stderr)))
    return "; ".join(f"provider {p}, atomics {a}, gets {g}" for p, a, g in said)


def carried_label(cfg, meta, row, paths):
    """Who carried a row, from what the run proved (never from what was asked for)."""
    if cfg.kind == "raw":
        where = f"; fabric {meta['fabric']}, domain {meta['domain']}" if meta.get("domain") else ""
        return f"raw libfabric ({cfg.provider}{where})"
    if cfg.kind == "hydra":
        return f"{cfg.name} (its own build and launcher)"
    so = meta.get("btl_ofi_so", "")
    ours_dir = (cfg.ours_dir or paths["BTL_OFI_COMPONENT_DIR"]).rstrip("/") + "/"
    how = "".join(f"; {meta[k]}" for k in ("btl_selected", "osc_path") if meta.get(k))
    if row.get("carried_by") == "btl_ofi":
        return (f"btl-ofi (ours; counters moved{how})" if so.startswith(ours_dir) else
                f"btl-ofi counters moved, but mapped {so or 'no btl-ofi DSO'}")
    if so.startswith(ours_dir):
        return f"not btl-ofi (ours loaded, counters idle{how})"
    if so:
        return f"not btl-ofi (stock btl/ofi DSO loaded{how})"
    return f"not btl-ofi ({how[2:] or 'no btl-ofi DSO loaded'})"


def metric_key(bench, row):
    """(metric, op, size) for one record, or None for rows that are not compared."""
    b = row.get("bench")
    if b == "osc_latency":
        return ("lat_us" + bench[len("latency"):], row["op"], row["size"]), row["lat_us"]
    if b == "osc_bw":
        return (bench + "_MBps", row["op"], row["size"]), row["bw_MBps"]
    if b == "osc_msgrate":
        return ("msgrate_per_s", row["op"], row["size"]), row["msgs_per_s"]
    if b == "osc_atomic_rate":
        return ("atomic_ops_per_s", row["op"], row["size"]), row["ops_per_s"]
    if b == "ofi_rma_ref":
        test = row["test"]
        if test == "latency":
            return ("lat_us", row["op"], row["size"]), row["us_per_iter"]
        if test in ("bw", "bibw"):
            return (test + "_MBps", row["op"], row["size"]), row["bw_MBps"]
        if test == "msgrate":
            return ("msgrate_per_s", row["op"], row["size"]), row["ops_per_s"]
        if test == "atomic_rate":
            return ("atomic_ops_per_s", row["op"], row["size"]), row["ops_per_s"]
    return None


def row_rtt(row):
    """The slower of a row's two core round trips (osc_latency -c), or None without them."""
    both = (row.get("rtt_before_ns"), row.get("rtt_after_ns"))
    return max(both) if all(isinstance(x, (int, float)) and x > 0 for x in both) else None


def run_one(cfg, bench, mode, args, paths, base_env, hosts=None, outdir=None):
    """One run; with hosts (--net) across the host namespaces, with their proof."""
    spec = bench_args(bench, mode, cfg.kind)
    if spec is None:
        return None
    prog, prog_args = spec
    if args.drop_caches:
        drop_page_cache()
    exe = os.path.join(cfg.component_path if cfg.kind == "hydra" else args.bin_dir, prog)
    env = run_env(cfg, base_env, paths)
    if cfg.kind == "raw":
        prog_args = ["-p", cfg.provider, "-T", str(args.timeout)] + prog_args
    evidence, crossed, proved = {}, True, ""
    if hosts is not None:
        if args.ranks > 2 and cfg.kind != "raw":
            prog_args = ["-y"] + prog_args  # ranks 2.. idle in MPI until rank 0 is done
        cmd, env = compare_net.command(cfg, exe, prog_args, env, hosts, outdir, args.ranks)
        rc, out, err, secs, evidence = compare_net.run(exe, cmd, env, args.timeout, hosts,
                                                       locked_run)
        crossed, proved = compare_net.proof(evidence, out + "\n" + err)
    elif cfg.kind == "raw":
        cmd = [exe] + prog_args
        rc, out, err, secs = locked_run(cmd, env, args.timeout)
    else:
        cmd = ["mpirun", "-np", "2"] + [a for k in cfg.env for a in ("-x", k)] + cfg.mca + \
            [exe] + prog_args
        rc, out, err, secs = locked_run(cmd, env, args.timeout)
    meta, rows = parse_records(out)
    meta["osc_path"] = osc_path(err)
    meta["btl_selected"] = btl_selected(err)
    status = classify(rc, err)
    result = {"config": cfg.label, "bench": bench, "cmd": cmd, "status": status, "rc": rc,
              "seconds": round(secs, 2), "meta": meta, "rows": [], "evidence": evidence,
              "stderr_tail": err.strip().splitlines()[-6:] if status != "ok" else [],
              "why": why_not(err) if status != "ok" else ""}
    for row in rows:
        key = metric_key(bench, row)
        if key is None:
            continue
        (metric, op, size), value = key
        who = carried_label(cfg, meta, row, paths)
        result["rows"].append({"metric": metric, "op": op, "size": size, "value": value,
                               "valid": row.get("valid", "yes") == "yes" and crossed,
                               "carried_by": f"{who}; {proved}" if proved else who,
                               "ofi_ops": row.get("ofi_ops"), "rtt_ns": row_rtt(row)})
    return result


def run_all(args, configs, mode, paths, base_env, hosts, outdir):
    """Every configuration and benchmark in turn, args.reps times (interleaved; each
    repetition starts one configuration further on, so that none always runs first, just
    after another program's exit, or always after the same neighbour)."""
    runs, start, hung = [], time.monotonic(), set()
    for rep in range(args.reps):
        turn = rep % len(configs) if configs else 0
        for cfg in configs[turn:] + configs[:turn]:
            for bench in mode["benches"]:
                if (cfg.label, bench) in hung:
                    runs.append({"config": cfg.label, "bench": bench, "rep": rep, "rows": [],
                                 "status": "not repeated (timed out before)", "seconds": 0})
                    continue
                result = run_one(cfg, bench, mode, args, paths, base_env, hosts, outdir)
                if result is None:
                    continue
                result["rep"] = rep
                runs.append(result)
                if result["status"] == "timeout":
                    hung.add((cfg.label, bench))
                print(f"  rep {rep + 1}/{args.reps} {cfg.label:26s} {bench:12s} "
                      f"{result['status']:22s} {result['seconds']:6.1f}s "
                      f"({time.monotonic() - start:5.0f}s total)", flush=True)
    return runs, start
