/* Shared pieces of the one-sided benchmarks (see bench_common.h). */
#define _GNU_SOURCE
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(const void *arg)
{
    const bench_ctx_t *ctx = arg;

    fprintf(stderr,
            "usage: mpirun -np 2 %s [options]\n"
            "  -o OPS       comma-separated operations%s\n"
            "  -S SIZES     comma-separated message sizes in bytes (K, M suffixes allowed)\n"
            "  -m MIN       smallest size of the default list (default 1)\n"
            "  -M MAX       largest size of the default list (default 4M)\n"
            "  -i ITERS     timed iterations for small messages (default %d)\n"
            "  -x WARMUP    untimed warm-up iterations (default: iterations/10, at most 100)\n"
            "  -B BYTES     bytes per size before iterations are lowered (default 256M)\n"
            "  -W N         operations per synchronization (default %d)\n"
            "  -w FLAVOR    window flavor: create (default) or dynamic\n"
            "  -s SYNC      flush (lock_all + flush, default) or fence\n"
            "  -d DIR       uni (default) or bi\n"
            "  -j           JSON lines instead of a table\n"
            "  -r           exit 2 unless btl-ofi's counters moved for every row\n"
            "exit codes: 0 done, 1 failure, 2 not carried by btl-ofi (-r), 77 not supported\n",
            ctx->name, ctx->usage_extra ? ctx->usage_extra : "", BENCH_DEFAULT_MAX_ITERS,
            BENCH_DEFAULT_WINDOW);
}

/* Option values, in the order of their enums. */
static const char *const flavor_names[] = {"create", "dynamic"};
static const char *const sync_names[] = {"flush", "fence"};
static const char *const dir_names[] = {"uni", "bi"};

/* Returns 0, or -1 on a usage error. */
static int parse_opts(int argc, char **argv, void *arg)
{
    bench_opts_t *opt = &((bench_ctx_t *)arg)->opt;
    const harness_opt_t table[] = {
        BENCH_SWEEP_OPTS(&opt->sweep),
        HARNESS_NAMED('w', HARNESS_OPT_CHOICE, &opt->flavor, flavor_names, 2),
        HARNESS_NAMED('s', HARNESS_OPT_CHOICE, &opt->sync, sync_names, 2),
        HARNESS_NAMED('d', HARNESS_OPT_CHOICE, &opt->bidir, dir_names, 2),
        HARNESS_FLAG('r', &opt->require_ofi, 1),
        {0},
    };

    memset(opt, 0, sizeof(*opt));
    bench_sweep_init(&opt->sweep);
    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    return bench_sweep_done(&opt->sweep);
}

/* Which DSO of the btl-ofi component (mca_btl_<name>.so) this process mapped. */
static void find_btl_ofi_so(char *out, size_t len)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[1024], so[128];

    snprintf(so, sizeof(so), "/mca_btl_%s.so", ofi_component_name());
    out[0] = '\0';
    if (NULL == maps) {
        return;
    }
    while (fgets(line, sizeof(line), maps)) {
        char *path = strchr(line, '/');
        if (path && strstr(path, so)) {
            path[strcspn(path, "\n")] = '\0';
            snprintf(out, len, "%s", path);
            break;
        }
    }
    fclose(maps);
}

/* Between btl-ofi's counters opened and closed (harness_run). */
static int bench_run(void *arg)
{
    bench_ctx_t *ctx = arg;
    int rc;

    find_btl_ofi_so(ctx->btl_ofi_so, sizeof(ctx->btl_ofi_so));
    rc = ctx->run(ctx);
    bench_window_close(ctx);
    return rc;
}

int bench_main(int argc, char **argv, const char *name, const char *usage_extra, bench_ctx_t *ctx,
               int (*run)(bench_ctx_t *ctx))
{
    int size, rc;

    memset(ctx, 0, sizeof(*ctx));
    ctx->name = name;
    ctx->usage_extra = usage_extra;
    ctx->run = run;
    ctx->win = MPI_WIN_NULL;
    rc = harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx->rank, &size, parse_opts, ctx,
                      usage, HARNESS_EXIT_FAIL);
    if (rc) {
        return rc;
    }
    /* Window creation failures come back as codes, so they can be reported as "skipped". */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (2 != size) {
        return harness_skip(ctx->rank, "%s: needs exactly 2 ranks (got %d): not supported here\n",
                            name, size);
    }
    ctx->peer = 1 - ctx->rank;
    return harness_run(bench_run, ctx);
}

int bench_op_wanted(const bench_ctx_t *ctx, const char *op, int dflt)
{
    return harness_listed(&ctx->opt.sweep.ops, op, dflt);
}

void bench_iterations(const bench_ctx_t *ctx, size_t size, int *iters, int *warmup)
{
    bench_sweep_iterations(&ctx->opt.sweep, size, iters, warmup);
}

static void *page_alloc(size_t len)
{
    void *p = NULL;

    if (0 != posix_memalign(&p, 4096, len ? len : 1)) {
        return NULL;
    }
    memset(p, 0, len);
    return p;
}

int bench_window_open(bench_ctx_t *ctx, size_t len)
{
    int rc;
    MPI_Aint mine = 0;

    ctx->win_len = len;
    ctx->win_buf = page_alloc(len);
    ctx->origin = page_alloc(len);
    if (!harness_min_int(NULL != ctx->win_buf && NULL != ctx->origin)) {
        if (0 == ctx->rank)
            fprintf(stderr, "%s: cannot allocate 2 x %zu bytes\n", ctx->name, len);
        return HARNESS_EXIT_FAIL;
    }
    if (BENCH_WIN_CREATE == ctx->opt.flavor) {
        rc = MPI_Win_create(ctx->win_buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                            &ctx->win);
    } else {
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &ctx->win);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Win_attach(ctx->win, ctx->win_buf, (MPI_Aint)len);
        }
        MPI_Get_address(ctx->win_buf, &mine);
        MPI_Sendrecv(&mine, 1, MPI_AINT, ctx->peer, 0, &ctx->peer_base, 1, MPI_AINT, ctx->peer, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (!harness_min_int(MPI_SUCCESS == rc)) {
        if (0 == ctx->rank) {
            fprintf(stderr, "%s: the %s window could not be created: not supported here\n",
                    ctx->name, BENCH_WIN_CREATE == ctx->opt.flavor ? "Win_create" : "dynamic");
        }
        return HARNESS_EXIT_SKIP;
    }
    return HARNESS_EXIT_PASS;
}

void bench_window_close(bench_ctx_t *ctx)
{
    if (MPI_WIN_NULL != ctx->win) {
        if (BENCH_WIN_DYNAMIC == ctx->opt.flavor) {
            MPI_Win_detach(ctx->win, ctx->win_buf);
        }
        MPI_Win_free(&ctx->win);
    }
    free(ctx->win_buf);
    free(ctx->origin);
    ctx->win_buf = ctx->origin = NULL;
}

void bench_probe_begin(bench_probe_t *probe)
{
    ofi_pvars_read(&probe->before);
}

bench_path_t bench_probe_end(const bench_ctx_t *ctx, const bench_probe_t *probe, unsigned mask)
{
    bench_path_t path = {0, 0, "not btl-ofi"};
    ofi_pvars_t after;

    (void)ctx;
    ofi_pvars_read(&after);
    if (after.present && probe->before.present) {
        for (int i = 0; i < OFI_PVAR_COUNT; ++i) {
            if (mask & BENCH_CNT(i)) {
                path.delta += after.value[i] - probe->before.value[i];
            }
        }
    }
    path.delta = harness_sum_ul(path.delta);
    path.ours = path.delta > 0;
    path.label = path.ours ? "btl_ofi" : "not btl-ofi";
    return path;
}

void bench_header(const bench_ctx_t *ctx, const char *what, const bench_field_t *cols, int n)
{
    ofi_pvars_t now;

    if (0 != ctx->rank) {
        return;
    }
    ofi_pvars_read(&now);
    if (ctx->opt.sweep.json) {
        printf("{\"bench\": \"%s\", \"meta\": true, \"what\": \"%s\", \"window\": \"%s\", "
               "\"sync\": \"%s\", \"direction\": \"%s\", \"ops_per_sync\": %d, "
               "\"btl_ofi_so\": \"%s\", \"btl_ofi_counters\": %s}\n",
               ctx->name, what, flavor_names[ctx->opt.flavor], sync_names[ctx->opt.sync],
               dir_names[ctx->opt.bidir], ctx->opt.sweep.window, ctx->btl_ofi_so,
               now.present ? "true" : "false");
    } else {
        printf("# %s: %s\n", ctx->name, what);
        printf("# 2 ranks, %s window; btl-ofi counters %s; btl-ofi DSO: %s\n",
               flavor_names[ctx->opt.flavor], now.present ? "present" : "absent",
               ctx->btl_ofi_so[0] ? ctx->btl_ofi_so : "(not loaded)");
        bench_print_columns(cols, n);
    }
    fflush(stdout);
}

void bench_row(const bench_ctx_t *ctx, const bench_field_t *f, int n)
{
    if (0 == ctx->rank) {
        bench_print_row(ctx->name, ctx->opt.sweep.json, f, n);
    }
}

size_t bench_slot(const bench_ctx_t *ctx, size_t size, int j)
{
    size_t slots = ctx->win_len / size;

    return (slots ? (size_t)j % slots : 0) * size;
}

static double post_window(bench_issue_fn fn, void *arg, size_t size, int window)
{
    double t0 = bench_now();

    for (int j = 0; j < window; ++j) {
        fn(arg, size, j);
    }
    return bench_now() - t0;
}

bench_times_t bench_windowed(bench_ctx_t *ctx, int active, bench_issue_fn fn, void *arg,
                             size_t size, int iters, int warmup)
{
    const int fence = BENCH_SYNC_FENCE == ctx->opt.sync;
    bench_times_t t = {0, 0};
    double t0 = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (fence) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, ctx->win);
    } else if (active) {
        MPI_Win_lock_all(0, ctx->win);
    }
    for (int i = 0; i < warmup + iters; ++i) {
        double post = 0;
        if (i == warmup) {
            t0 = bench_now();
        }
        if (active) {
            post = post_window(fn, arg, size, ctx->opt.sweep.window);
        }
        if (fence) {
            MPI_Win_fence(0, ctx->win);
        } else if (active) {
            MPI_Win_flush(ctx->peer, ctx->win);
        }
        t.post += (i >= warmup) ? post : 0;
    }
    t.elapsed = active ? bench_now() - t0 : 0;
    if (fence) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, ctx->win);
    } else if (active) {
        MPI_Win_unlock_all(ctx->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t.elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t.post, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

int bench_exit_code(const bench_ctx_t *ctx, int failures, int rows_not_ours)
{
    if (failures) {
        return HARNESS_EXIT_FAIL;
    }
    return (ctx->opt.require_ofi && rows_not_ours) ? HARNESS_EXIT_NOT_OURS : HARNESS_EXIT_PASS;
}

static void bench_put_issue(void *arg, size_t size, int j)
{
    bench_ctx_t *ctx = arg;
    size_t off = bench_slot(ctx, size, j);

    MPI_Put(ctx->origin + off, (int)size, MPI_BYTE, ctx->peer, bench_disp(ctx, off), (int)size,
            MPI_BYTE, ctx->win);
}

static void bench_get_issue(void *arg, size_t size, int j)
{
    bench_ctx_t *ctx = arg;
    size_t off = bench_slot(ctx, size, j);

    MPI_Get(ctx->origin + off, (int)size, MPI_BYTE, ctx->peer, bench_disp(ctx, off), (int)size,
            MPI_BYTE, ctx->win);
}

const bench_rma_op_t bench_rma_ops[2] = {
    {"put", BENCH_CNT(OFI_PVAR_PUTS), bench_put_issue},
    {"get", BENCH_CNT(OFI_PVAR_GETS), bench_get_issue},
};

void bench_measure(bench_ctx_t *ctx, int active, bench_issue_fn fn, void *arg, size_t size,
                   unsigned counters, bench_run_t *run)
{
    bench_probe_t probe;

    bench_iterations(ctx, size * (size_t)ctx->opt.sweep.window, &run->iters, &run->warmup);
    bench_probe_begin(&probe);
    run->t = bench_windowed(ctx, active, fn, arg, size, run->iters, run->warmup);
    run->path = bench_probe_end(ctx, &probe, counters);
}

int bench_rma_sweep(bench_ctx_t *ctx, const char *metric, size_t window_bytes, int fill,
                    const bench_field_t *columns, int ncols, bench_rma_row_fn row)
{
    char what[160];
    int not_ours = 0, rc = bench_window_open(ctx, window_bytes);

    if (HARNESS_EXIT_PASS != rc) {
        return rc;
    }
    memset(ctx->origin, fill, ctx->win_len);
    snprintf(what, sizeof(what), "%s %s, %d operations per %s",
             ctx->opt.bidir ? "bidirectional" : "unidirectional", metric, ctx->opt.sweep.window,
             BENCH_SYNC_FLUSH == ctx->opt.sync ? "MPI_Win_flush (lock_all epoch)"
                                               : "MPI_Win_fence");
    bench_header(ctx, what, columns, ncols);
    for (size_t o = 0; o < sizeof(bench_rma_ops) / sizeof(bench_rma_ops[0]); ++o) {
        if (!bench_op_wanted(ctx, bench_rma_ops[o].name, 1)) {
            continue;
        }
        for (int s = 0; s < ctx->opt.sweep.nsizes; ++s) {
            const bench_rma_op_t *op = &bench_rma_ops[o];
            bench_run_t run;

            bench_measure(ctx, 0 == ctx->rank || ctx->opt.bidir, op->issue, ctx,
                          ctx->opt.sweep.sizes[s], op->counters, &run);
            not_ours += !run.path.ours;
            row(ctx, op, ctx->opt.sweep.sizes[s], &run);
        }
    }
    return bench_exit_code(ctx, 0, not_ours);
}
