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
    int bind, timeout, acc_native;
    harness_list_t netns; /* -N: network namespace of each process, or none */
} ref_opts_t;

typedef struct ref_run {
    ref_fabric_t f;
    ref_opts_t o;
    uint64_t step;
    int64_t *results; /* one per operation of a window */
    char carried[64]; /* "raw:<provider>" */
} ref_run_t;

typedef struct ref_op {
    const char *name; /* the MPI operation it stands for */
    const char *fi_call;
    ref_kind_t kind; /* from REF_ACC on, atomics: 8-byte integer; the size list does not apply */
} ref_op_t;

static const ref_op_t ref_ops[] = {
    {"put", "fi_write", REF_PUT},          {"get", "fi_read", REF_GET},
    {"acc", "fi_atomic", REF_ACC},         {"fop", "fi_fetch_atomic", REF_FOP},
    {"cas", "fi_compare_atomic", REF_CAS},
};

typedef enum { T_LAT, T_BW, T_BIBW, T_MSGRATE, T_ARATE } ref_test_id_t;

typedef struct ref_test {
    const char *name;
    ref_test_id_t id;
    unsigned ops; /* bit per ref_kind_t measured by default */
} ref_test_t;

#define OPBIT(id) (1u << (id))

static const ref_test_t ref_tests[] = {
    {"latency", T_LAT,
     OPBIT(REF_PUT) | OPBIT(REF_GET) | OPBIT(REF_ACC) | OPBIT(REF_FOP) | OPBIT(REF_CAS)},
    {"bw", T_BW, OPBIT(REF_PUT) | OPBIT(REF_GET)},
    {"bibw", T_BIBW, OPBIT(REF_PUT) | OPBIT(REF_GET)},
    {"msgrate", T_MSGRATE, OPBIT(REF_PUT) | OPBIT(REF_GET)},
    {"atomic_rate", T_ARATE, OPBIT(REF_FOP) | OPBIT(REF_CAS) | OPBIT(REF_ACC)},
};

/* One measured (test, op, size): what its row prints. */
typedef struct ref_row {
    const ref_test_t *test;
    const ref_op_t *op;
    size_t size;
    int window, iters, warmup;
    double elapsed, post; /* max over both sides */
    int valid;
} ref_row_t;

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
            "  -A         acc with fi_atomic even where the BTL uses fi_fetch_atomic (shm with\n"
            "             delivery-complete, whose fi_atomic corrupts later operations)\n"
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
        HARNESS_FLAG('A', &o->acc_native, 1),
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

/* The j-th operation of a window: put and get to distinct slots while they fit, atomics to word 0.
 */
static void issue(ref_run_t *r, const ref_op_t *op, size_t size, int j)
{
    const size_t slots = r->f.data_len / size;
    const size_t off = REF_ACC <= op->kind || 0 == slots ? 0 : (size_t)j % slots * size;

    ref_post(&r->f, op->fi_call, op->kind, off, size, &r->results[j], j);
}

/* window operations, then what MPI_Win_flush would cost at the least; max over both sides. */
static void windowed(ref_run_t *r, ref_row_t *row, int active)
{
    const ref_kind_t kind = row->op->kind;
    double t0 = 0, theirs;

    ref_oob_barrier(&r->f);
    for (int i = 0; active && i < row->warmup + row->iters; ++i) {
        double p0;
        if (i == row->warmup) {
            t0 = harness_now();
        }
        p0 = harness_now();
        for (int j = 0; j < row->window; ++j) {
            issue(r, row->op, row->size, j);
        }
        row->post += (i >= row->warmup) ? harness_now() - p0 : 0;
        if (REF_PUT == kind || REF_ACC == kind) {
            ref_flush(&r->f, REF_ACC == kind);
        } else {
            ref_wait_all(&r->f);
        }
    }
    row->elapsed = active ? harness_now() - t0 : 0;
    ref_step_done(&r->f, ++r->step);
    ref_oob_exchange(&r->f, row->elapsed, &theirs);
    row->elapsed = theirs > row->elapsed ? theirs : row->elapsed;
    ref_oob_exchange(&r->f, row->post, &theirs);
    row->post = theirs > row->post ? theirs : row->post;
}

/* The target word of the adds ends at the number of operations; cas leaves 1. */
static int atomics_valid(ref_run_t *r, const ref_op_t *op, int64_t total)
{
    const int64_t word = *(const int64_t *)r->f.region, expect = REF_CAS == op->kind ? 1 : total;
    double mine = 1, theirs = 1;

    if (1 == r->f.role && REF_ACC <= op->kind && word != expect) {
        mine = 0;
        fprintf(stderr,
                "ofi_rma_ref: %s (%s, int64) left %" PRId64 " in the target word, expected %" PRId64
                "\n",
                op->name, op->fi_call, word, expect);
    }
    ref_oob_exchange(&r->f, mine, &theirs);
    return mine > 0 && theirs > 0;
}

/* A row (role 0 only), or (columns) the column names. */
static void emit(const ref_run_t *r, const ref_row_t *row, int columns)
{
    const double ops = (double)row->window * row->iters * (T_BIBW == row->test->id ? 2 : 1);
    const bench_field_t f[] = {
        BENCH_STR("test", 12, row->test->name),
        BENCH_STR("op", 5, row->op->name),
        BENCH_INT("size", 9, row->size),
        BENCH_INT("iters", 7, row->iters),
        BENCH_DBL("us_per_iter", 12, 3, 1e6 * row->elapsed / row->iters),
        BENCH_DBL("bw_MBps", 11, 2, ops * (double)row->size / row->elapsed / 1e6),
        BENCH_DBL("ops_per_s", 13, 0, ops / row->elapsed),
        BENCH_DBL("post_ns", 12, 1, 1e9 * row->post / ((double)row->window * row->iters)),
        BENCH_STR("valid", 6, row->valid ? "yes" : "WRONG"),
        BENCH_STR("fi_call", 18,
                  REF_ACC == row->op->kind && r->f.acc_as_fetch ? "fi_fetch_atomic"
                                                                 : row->op->fi_call),
        BENCH_STR("carried_by", 16, r->carried),
    };

    if (0 == r->f.role) {
        bench_print_row("ofi_rma_ref", r->o.sweep.json, columns, f, sizeof(f) / sizeof(f[0]));
    }
}

static int run_row(ref_run_t *r, const ref_test_t *test, const ref_op_t *op, size_t size)
{
    ref_row_t row = {.test = test, .op = op, .size = size};

    row.window = (T_LAT == test->id) ? 1 : r->o.sweep.window;
    bench_sweep_iterations(&r->o.sweep, size * (size_t)row.window, &row.iters, &row.warmup);
    *(int64_t *)r->f.region = 0;
    windowed(r, &row, 0 == r->f.role || T_BIBW == test->id);
    row.valid = atomics_valid(r, op, (int64_t)row.window * (row.warmup + row.iters));
    emit(r, &row, 0);
    return row.valid;
}

static int run_test(ref_run_t *r, const ref_test_t *test)
{
    int failures = 0;

    for (const ref_op_t *op = ref_ops; op < ref_ops + sizeof(ref_ops) / sizeof(ref_ops[0]); ++op) {
        const int atomic = REF_ACC <= op->kind;
        if (!harness_listed(&r->o.sweep.ops, op->name, !!(test->ops & OPBIT(op->kind))) ||
            (T_LAT != test->id && atomic != (T_ARATE == test->id))) {
            continue;
        }
        for (int s = 0; s < r->o.sweep.nsizes; ++s) {
            size_t size = atomic ? 8 : r->o.sweep.sizes[s];
            if (T_MSGRATE == test->id && r->o.sweep.default_sizes &&
                size > REF_MSGRATE_DEFAULT_MAX) {
                break;
            }
            failures += !run_row(r, test, op, size);
            if (atomic) {
                break; /* one 8-byte row */
            }
        }
    }
    return failures;
}

static void header(const ref_run_t *r)
{
    const ref_row_t none = {
        .test = ref_tests, .op = ref_ops, .window = 1, .iters = 1, .elapsed = 1};
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
        emit(r, &none, 1);
    }
    fflush(stdout);
}

static int run(ref_run_t *r)
{
    int failures = 0, rc;

    rc = ref_fabric_open(&r->f, r->o.prov, bench_sweep_window_bytes(&r->o.sweep, 64),
                         r->o.sweep.window);
    r->f.acc_as_fetch = r->f.acc_as_fetch && !r->o.acc_native;
    if (0 != rc) {
        if (0 == r->f.role) {
            fprintf(stderr,
                    "ofi_rma_ref: provider %s offers no RDM endpoint with RMA and atomics "
                    "on the BTL's terms: not supported here\n",
                    r->o.prov);
        }
        return HARNESS_EXIT_SKIP;
    }
    r->results = calloc((size_t)r->o.sweep.window, sizeof(int64_t));
    snprintf(r->carried, sizeof(r->carried), "raw:%s", r->o.prov);
    header(r);
    for (size_t t = 0; t < sizeof(ref_tests) / sizeof(ref_tests[0]); ++t) {
        if (harness_listed(&r->o.tests, ref_tests[t].name, 1)) {
            failures += run_test(r, &ref_tests[t]);
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
