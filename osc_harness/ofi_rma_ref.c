/*
 * ofi_rma_ref: the raw libfabric reference for btl-ofi, no MPI.
 *
 * Forks into two processes joined by a socketpair (the out-of-band channel
 * for addresses and step barriers), pinned to CPUs 0 and 1 as mpirun binds
 * two ranks. Both open the provider on the BTL's terms (ofi_ref.h) and run:
 *   latency      one operation, then its remote completion (write: fi_write;
 *                read: fi_read; acc: fi_atomic SUM; fop: fi_fetch_atomic SUM;
 *                cas: fi_compare_atomic), like MPI op + MPI_Win_flush
 *   bw, bibw     -W fi_write / fi_read per completion wait, one or both ways
 *   msgrate      the same with small sizes, reporting time inside each post
 *   atomic_rate  -W 8-byte atomics per completion wait
 * Rows use the MPI operation names the raw calls stand for (put, get, acc,
 * fop, cas) so that a runner can set them side by side.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_output.h"
#include "bench_sizes.h"
#include "harness_core.h"
#include "ofi_ref.h"

#define REF_MSGRATE_DEFAULT_MAX 8192

typedef struct ref_opts {
    bench_sweep_t sweep; /* -o -S -m -M -i -x -B -W -j (bench_sizes.h) */
    const char *prov;
    harness_list_t tests;
    int bind, timeout;
    harness_list_t netns; /* -N: network namespace of each process, or none */
} ref_opts_t;

typedef struct ref_run {
    ref_fabric_t f;
    ref_opts_t o;
    uint64_t step;
    int64_t one, compare, desired;
    int64_t *results;
} ref_run_t;

typedef enum { OP_PUT, OP_GET, OP_ACC, OP_FOP, OP_CAS } ref_op_id_t;

typedef struct ref_op {
    const char *name; /* the MPI operation it stands for */
    const char *fi_call;
    ref_op_id_t id;
    int atomic; /* 8-byte integer; the size list does not apply */
} ref_op_t;

static const ref_op_t ref_ops[] = {
    {"put", "fi_write", OP_PUT, 0},          {"get", "fi_read", OP_GET, 0},
    {"acc", "fi_atomic", OP_ACC, 1},         {"fop", "fi_fetch_atomic", OP_FOP, 1},
    {"cas", "fi_compare_atomic", OP_CAS, 1},
};

typedef struct ref_times {
    double elapsed, post;
} ref_times_t;

/* ---- options ------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: ofi_rma_ref [options]\n"
            "  -p PROV    libfabric provider as fi_info names it (default shm)\n"
            "  -t TESTS   latency,bw,bibw,msgrate,atomic_rate (default all)\n"
            "  -o OPS     put,get,acc,fop,cas (default: those each test measures)\n"
            "  -S SIZES   comma-separated sizes (K, M suffixes); -m MIN / -M MAX of the default\n"
            "  -i ITERS   timed iterations for small messages (default %d)\n"
            "  -x WARMUP  untimed iterations (default: iterations/10, 2 to 100)\n"
            "  -B BYTES   bytes per size before iterations are lowered (default 256M)\n"
            "  -W N       operations per completion wait (default %d)\n"
            "  -j         JSON lines\n"
            "  -n         do not pin the two processes to CPUs 0 and 1\n"
            "  -T SECS    give up after this long (default 600)\n"
            "  -N NS0,NS1 run the two processes in these network namespaces (/run/netns/NAME,\n"
            "             as `ip netns add` makes them), each entered before libfabric opens\n"
            "exit codes: 0 done, 1 failure, 77 provider not available on the BTL's terms\n",
            BENCH_DEFAULT_MAX_ITERS, BENCH_DEFAULT_WINDOW);
}

static int parse_opts(int argc, char **argv, ref_opts_t *o)
{
    const harness_opt_t table[] = {
        BENCH_SWEEP_OPTS(&o->sweep),
        HARNESS_ARG('p', HARNESS_OPT_STR, &o->prov),
        HARNESS_CUSTOM('t', &o->tests, harness_list_parse),
        HARNESS_FLAG('n', &o->bind, 0),
        HARNESS_ARG('T', HARNESS_OPT_INT, &o->timeout),
        HARNESS_CUSTOM('N', &o->netns, harness_list_parse),
        {0},
    };

    *o = (ref_opts_t){.prov = "shm", .bind = 1, .timeout = 600};
    bench_sweep_init(&o->sweep);
    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    if (0 != o->netns.n && 2 != o->netns.n) {
        return -1;
    }
    return bench_sweep_done(&o->sweep);
}

static size_t slot_offset(const ref_run_t *r, size_t size, int j)
{
    size_t slots = r->f.data_len / size;

    return (slots ? (size_t)j % slots : 0) * size;
}

static void issue(ref_run_t *r, const ref_op_t *op, size_t size, int j)
{
    switch (op->id) {
    case OP_PUT:
        ref_write(&r->f, slot_offset(r, size, j), size, j);
        break;
    case OP_GET:
        ref_read(&r->f, slot_offset(r, size, j), size, j);
        break;
    case OP_ACC:
        ref_atomic_add(&r->f, &r->one, 0, j);
        break;
    case OP_FOP:
        ref_fetch_add(&r->f, &r->one, &r->results[j], 0, j);
        break;
    case OP_CAS:
        ref_cswap(&r->f, &r->desired, &r->compare, &r->results[j], 8, j);
        break;
    }
}

/* window operations, then what MPI_Win_flush would cost at the least; max over both sides. */
static ref_times_t windowed(ref_run_t *r, const ref_op_t *op, int active, size_t size, int window,
                            int iters, int warmup)
{
    ref_times_t t = {0, 0};
    double t0 = 0, theirs;

    ref_oob_barrier(&r->f);
    for (int i = 0; active && i < warmup + iters; ++i) {
        double p0;
        if (i == warmup) {
            t0 = harness_now();
        }
        p0 = harness_now();
        for (int j = 0; j < window; ++j) {
            issue(r, op, size, j);
        }
        t.post += (i >= warmup) ? harness_now() - p0 : 0;
        if (OP_PUT == op->id || OP_ACC == op->id) {
            ref_flush(&r->f, OP_ACC == op->id);
        } else {
            ref_wait_all(&r->f);
        }
    }
    t.elapsed = active ? harness_now() - t0 : 0;
    ref_step_done(&r->f, ++r->step);
    ref_oob_exchange(&r->f, t.elapsed, &theirs);
    t.elapsed = theirs > t.elapsed ? theirs : t.elapsed;
    ref_oob_exchange(&r->f, t.post, &theirs);
    t.post = theirs > t.post ? theirs : t.post;
    return t;
}

/* The target word of the adds ends at the number of operations; cas leaves 1. */
static int atomics_valid(ref_run_t *r, const ref_op_t *op, int64_t total)
{
    const int64_t *word = (const int64_t *)r->f.region;
    double mine = 1, theirs = 1;

    if (1 == r->f.role && op->atomic) {
        mine = (OP_CAS == op->id) ? (1 == word[1]) : (word[0] == total);
        if (mine <= 0) {
            fprintf(stderr,
                    "ofi_rma_ref: %s (%s, int64) left %" PRId64 " in the target word, "
                    "expected %" PRId64 "\n",
                    op->name, op->fi_call, OP_CAS == op->id ? word[1] : word[0],
                    OP_CAS == op->id ? 1 : total);
        }
    }
    ref_oob_exchange(&r->f, mine, &theirs);
    return mine > 0 && theirs > 0;
}

static void reset_atomics(ref_run_t *r)
{
    int64_t *word = (int64_t *)r->f.region;

    word[0] = word[1] = 0;
}

/* ---- tests -------------------------------------------------------------- */

typedef enum { T_LAT, T_BW, T_BIBW, T_MSGRATE, T_ARATE } ref_test_id_t;

typedef struct ref_test {
    const char *name;
    ref_test_id_t id;
    unsigned ops; /* bit per ref_op_id_t measured by default */
} ref_test_t;

#define OPBIT(id) (1u << (id))

static const ref_test_t ref_tests[] = {
    {"latency", T_LAT,
     OPBIT(OP_PUT) | OPBIT(OP_GET) | OPBIT(OP_ACC) | OPBIT(OP_FOP) | OPBIT(OP_CAS)},
    {"bw", T_BW, OPBIT(OP_PUT) | OPBIT(OP_GET)},
    {"bibw", T_BIBW, OPBIT(OP_PUT) | OPBIT(OP_GET)},
    {"msgrate", T_MSGRATE, OPBIT(OP_PUT) | OPBIT(OP_GET)},
    {"atomic_rate", T_ARATE, OPBIT(OP_FOP) | OPBIT(OP_CAS) | OPBIT(OP_ACC)},
};

static void emit(const ref_run_t *r, const bench_field_t *f, int n)
{
    if (0 == r->f.role) {
        bench_print_row("ofi_rma_ref", r->o.sweep.json, 0, f, n);
    }
}

static int run_row(ref_run_t *r, const ref_test_t *test, const ref_op_t *op, size_t size,
                   char *carried)
{
    const int window = (T_LAT == test->id) ? 1 : r->o.sweep.window;
    const int active = 0 == r->f.role || T_BIBW == test->id;
    int iters, warmup, valid;
    double ops, bytes;
    ref_times_t t;

    bench_sweep_iterations(&r->o.sweep, size * (size_t)window, &iters, &warmup);
    reset_atomics(r);
    t = windowed(r, op, active, size, window, iters, warmup);
    valid = atomics_valid(r, op, (int64_t)window * (warmup + iters));
    ops = (double)window * iters * (T_BIBW == test->id ? 2 : 1);
    bytes = ops * (double)size;

    bench_field_t row[] = {
        BENCH_STR("test", 12, test->name),
        BENCH_STR("op", 5, op->name),
        BENCH_INT("size", 9, size),
        BENCH_INT("iters", 7, iters),
        BENCH_DBL("us_per_iter", 12, 3, 1e6 * t.elapsed / iters),
        BENCH_DBL("bw_MBps", 11, 2, bytes / t.elapsed / 1e6),
        BENCH_DBL("ops_per_s", 13, 0, ops / t.elapsed),
        BENCH_DBL("post_ns", 12, 1, 1e9 * t.post / ((double)window * iters)),
        BENCH_STR("valid", 6, valid ? "yes" : "WRONG"),
        BENCH_STR("fi_call", 18, op->fi_call),
        BENCH_STR("carried_by", 16, carried),
    };
    emit(r, row, (int)(sizeof(row) / sizeof(row[0])));
    return valid;
}

static int run_test(ref_run_t *r, const ref_test_t *test, char *carried)
{
    int failures = 0;

    for (size_t o = 0; o < sizeof(ref_ops) / sizeof(ref_ops[0]); ++o) {
        const ref_op_t *op = &ref_ops[o];
        if (!harness_listed(&r->o.sweep.ops, op->name, !!(test->ops & OPBIT(op->id))) ||
            (T_LAT != test->id && op->atomic != (T_ARATE == test->id))) {
            continue;
        }
        for (int s = 0; s < r->o.sweep.nsizes; ++s) {
            size_t size = op->atomic ? 8 : r->o.sweep.sizes[s];
            if (T_MSGRATE == test->id && r->o.sweep.default_sizes &&
                size > REF_MSGRATE_DEFAULT_MAX) {
                break;
            }
            failures += !run_row(r, test, op, size, carried);
            if (op->atomic) {
                break; /* one 8-byte row */
            }
        }
    }
    return failures;
}

static const bench_field_t columns[] = {
    BENCH_STR("test", 12, ""),      BENCH_STR("op", 5, ""),           BENCH_STR("size", 9, ""),
    BENCH_STR("iters", 7, ""),      BENCH_STR("us_per_iter", 12, ""), BENCH_STR("bw_MBps", 11, ""),
    BENCH_STR("ops_per_s", 13, ""), BENCH_STR("post_ns", 12, ""),     BENCH_STR("valid", 6, ""),
    BENCH_STR("fi_call", 18, ""),   BENCH_STR("carried_by", 16, ""),
};

static void header(const ref_run_t *r)
{
    char what[256];

    if (0 != r->f.role) {
        return;
    }
    ref_fabric_describe(&r->f, what, sizeof(what));
    if (r->o.sweep.json) {
        printf("{\"bench\": \"ofi_rma_ref\", \"meta\": true, \"what\": \"%s\", "
               "\"provider\": \"%s\", \"delivery_complete\": %s, \"ops_per_sync\": %d, "
               "\"pinned\": %s, \"fabric\": \"%s\", \"domain\": \"%s\", "
               "\"netns\": \"%s%s%s\"}\n",
               what, r->f.info->fabric_attr->prov_name, r->f.delivery_complete ? "true" : "false",
               r->o.sweep.window, r->o.bind ? "true" : "false", r->f.info->fabric_attr->name,
               r->f.info->domain_attr->name, r->o.netns.n ? r->o.netns.item[0] : "",
               r->o.netns.n ? "," : "", r->o.netns.n ? r->o.netns.item[1] : "");
    } else {
        printf("# ofi_rma_ref: raw libfabric, 2 processes%s\n# %s\n",
               r->o.bind ? " pinned to CPUs 0 and 1" : "", what);
        bench_print_row("ofi_rma_ref", 0, 1, columns, (int)(sizeof(columns) / sizeof(columns[0])));
    }
    fflush(stdout);
}

static int run(ref_run_t *r)
{
    char carried[64];
    int failures = 0, rc;

    rc = ref_fabric_open(&r->f, r->o.prov, bench_sweep_window_bytes(&r->o.sweep, 64),
                         r->o.sweep.window);
    if (0 != rc) {
        if (0 == r->f.role) {
            fprintf(stderr,
                    "ofi_rma_ref: provider %s offers no RDM endpoint with RMA and atomics "
                    "on the BTL's terms: not supported here\n",
                    r->o.prov);
        }
        return HARNESS_EXIT_SKIP;
    }
    r->one = 1;
    r->compare = 0;
    r->desired = 1;
    r->results = calloc((size_t)r->o.sweep.window, sizeof(int64_t));
    snprintf(carried, sizeof(carried), "raw:%s", r->o.prov);
    header(r);
    for (size_t t = 0; t < sizeof(ref_tests) / sizeof(ref_tests[0]); ++t) {
        if (harness_listed(&r->o.tests, ref_tests[t].name, 1)) {
            failures += run_test(r, &ref_tests[t], carried);
        }
    }
    ref_oob_barrier(&r->f);
    ref_fabric_close(&r->f);
    free(r->results);
    return failures ? 1 : 0;
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (0 != sched_setaffinity(0, sizeof(set), &set)) {
        perror("ofi_rma_ref: sched_setaffinity");
    }
}

int main(int argc, char **argv)
{
    ref_run_t r;
    int sv[2], status = 0, rc;
    pid_t child;

    memset(&r, 0, sizeof(r));
    if (parse_opts(argc, argv, &r.o)) {
        usage();
        return 1;
    }
    /* Fork before any libfabric call: providers are not fork-safe. */
    if (0 != socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror("ofi_rma_ref: socketpair");
        return 1;
    }
    fflush(stdout);
    child = fork();
    if (child < 0) {
        perror("ofi_rma_ref: fork");
        return 1;
    }
    r.f.role = (0 == child) ? 1 : 0;
    r.f.sock = sv[r.f.role];
    close(sv[1 - r.f.role]);
    alarm((unsigned)r.o.timeout);
    if (0 != ref_enter_netns(r.o.netns.n ? r.o.netns.item[r.f.role] : NULL)) {
        if (0 == child) {
            _exit(1);
        }
        close(r.f.sock); /* the target sees end of file and stops */
        waitpid(child, &status, 0);
        return 1;
    }
    if (r.o.bind && sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
        pin(r.f.role);
    }
    rc = run(&r);
    if (0 == child) {
        _exit(rc);
    }
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status)) {
        fprintf(stderr, "ofi_rma_ref: the target process did not exit cleanly\n");
        return rc ? rc : 1;
    }
    return rc ? rc : WEXITSTATUS(status);
}
