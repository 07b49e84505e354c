/* The one-sided benchmarks' shared program (see bench_common.h). */
#define _GNU_SOURCE
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(const void *arg)
{
    const bench_prog_t *prog = ((const bench_ctx_t *)arg)->prog;

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
            "  -w FLAVOR    window flavor: create (default), dynamic or allocate\n"
            "  -s SYNC      flush (lock_all + flush, default), fence, or lock / lock_excl\n"
            "               (MPI_Win_lock shared / exclusive + operations + MPI_Win_unlock\n"
            "               each time, an epoch per synchronization)\n"
            "  -d DIR       uni (default) or bi\n"
            "  -j           JSON lines instead of a table\n"
            "  -r           exit 2 unless btl-ofi's counters moved for every row\n"
            "  -g USEC      latency: rank 0 waits USEC microseconds before each operation,\n"
            "               outside MPI and not timed (sporadic traffic: the target has gone\n"
            "               quiet in between; default 0)\n"
            "  -y           more than 2 ranks: ranks 2.. stay idle (bystanders: a job across\n"
            "               nodes where ranks 0 and 1 share one, or not)\n"
            "  -c           also time a cache line's round trip between the two ranks' cores\n"
            "               before and after each row (no MPI: the machine's own state;\n"
            "               columns rtt_before_ns, rtt_after_ns; -1 across machines)\n"
            "exit codes: 0 done, 1 failure, 2 not carried by btl-ofi (-r), 77 not supported\n",
            prog->name, prog->ops_help, BENCH_DEFAULT_MAX_ITERS, BENCH_DEFAULT_WINDOW);
}

/* Option values, in the order of their enums. */
static const char *const flavor_names[] = {"create", "dynamic", "allocate"};
static const char *const flavor_calls[] = {"Win_create", "dynamic", "Win_allocate"};
static const char *const sync_names[] = {"flush", "fence", "lock", "lock_excl"};
static const char *const sync_what[] = {"MPI_Win_flush (lock_all epoch)", "MPI_Win_fence",
                                        "MPI_Win_lock(SHARED) epoch",
                                        "MPI_Win_lock(EXCLUSIVE) epoch"};
static const char *const dir_names[] = {"uni", "bi"};

/* The message that lets the bystanders (-y) go. */
#define BENCH_BYSTANDER_TAG 7301

/* Returns 0, or -1 on a usage error. */
static int parse_opts(int argc, char **argv, void *arg)
{
    bench_opts_t *opt = &((bench_ctx_t *)arg)->opt;
    const harness_opt_t table[] = {
        BENCH_SWEEP_OPTS(&opt->sweep),
        HARNESS_NAMED('w', HARNESS_OPT_CHOICE, &opt->flavor, flavor_names, 3),
        HARNESS_NAMED('s', HARNESS_OPT_CHOICE, &opt->sync, sync_names, 4),
        HARNESS_NAMED('d', HARNESS_OPT_CHOICE, &opt->bidir, dir_names, 2),
        HARNESS_FLAG('r', &opt->require_ofi, 1),
        HARNESS_FLAG('y', &opt->bystanders, 1),
        HARNESS_FLAG('c', &opt->core_rtt, 1),
        HARNESS_ARG('g', HARNESS_OPT_INT, &opt->gap_us),
        {0},
    };

    bench_sweep_init(&opt->sweep);
    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    if (opt->gap_us < 0) {
        fprintf(stderr, "-g %d: the pause must be 0 or more microseconds\n", opt->gap_us);
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

static void *page_alloc(size_t len)
{
    void *p = NULL;

    if (0 != posix_memalign(&p, 4096, len ? len : 1)) {
        return NULL;
    }
    memset(p, 0, len);
    return p;
}

/*
 * Win_create, or dynamic + attach, over a whole -W window of the largest size in distinct slots
 * (within 64 MiB); for latency over the largest size rounded up to 8-byte elements; for
 * one-element atomics over 64 bytes. @retval 0, or the exit code
 */
static int window_open(bench_ctx_t *ctx)
{
    const bench_sweep_t *s = &ctx->opt.sweep;
    const int latency = BENCH_LATENCY == ctx->prog->mode;
    const size_t max = s->sizes[s->nsizes - 1];
    const size_t len = latency                            ? (max < 64 ? 64 : (max + 7) & ~(size_t)7)
                       : BENCH_ATOMICS == ctx->prog->mode ? 64
                                                          : bench_sweep_window_bytes(s, 1);
    const size_t results = latency ? len / 8 : (size_t)s->window;
    int rc;
    MPI_Aint mine = 0;

    ctx->win_len = len;
    /* Win_allocate's memory comes from MPI below */
    ctx->win_buf = BENCH_WIN_ALLOCATE == ctx->opt.flavor ? NULL : page_alloc(len);
    ctx->origin = page_alloc(len);
    ctx->result = calloc(results, sizeof(int64_t));
    if (!harness_min_int((NULL != ctx->win_buf || BENCH_WIN_ALLOCATE == ctx->opt.flavor) &&
                         NULL != ctx->origin && NULL != ctx->result)) {
        if (0 == ctx->rank) {
            fprintf(stderr, "%s: cannot allocate 2 x %zu bytes\n", ctx->prog->name, len);
        }
        return HARNESS_EXIT_FAIL;
    }
    if (BENCH_WIN_CREATE == ctx->opt.flavor) {
        rc = MPI_Win_create(ctx->win_buf, (MPI_Aint)len, 1, MPI_INFO_NULL, ctx->comm,
                            &ctx->win);
    } else if (BENCH_WIN_ALLOCATE == ctx->opt.flavor) {
        rc = MPI_Win_allocate((MPI_Aint)len, 1, MPI_INFO_NULL, ctx->comm, &ctx->win_mem,
                              &ctx->win);
        ctx->win_buf = MPI_SUCCESS == rc ? ctx->win_mem : NULL;
    } else {
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, ctx->comm, &ctx->win);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Win_attach(ctx->win, ctx->win_buf, (MPI_Aint)len);
        }
        MPI_Get_address(ctx->win_buf, &mine);
        MPI_Sendrecv(&mine, 1, MPI_AINT, ctx->peer, 0, &ctx->peer_base, 1, MPI_AINT, ctx->peer, 0,
                     ctx->comm, MPI_STATUS_IGNORE);
    }
    if (!harness_min_int(MPI_SUCCESS == rc)) {
        if (0 == ctx->rank) {
            fprintf(stderr, "%s: the %s window could not be created: not supported here\n",
                    ctx->prog->name, flavor_calls[ctx->opt.flavor]);
        }
        return HARNESS_EXIT_SKIP;
    }
    return HARNESS_EXIT_PASS;
}

static void window_close(bench_ctx_t *ctx)
{
    if (MPI_WIN_NULL != ctx->win) {
        if (BENCH_WIN_DYNAMIC == ctx->opt.flavor) {
            MPI_Win_detach(ctx->win, ctx->win_buf);
        }
        MPI_Win_free(&ctx->win);
    }
    if (BENCH_WIN_ALLOCATE != ctx->opt.flavor) {
        free(ctx->win_buf);
    }
    free(ctx->origin);
    free(ctx->result);
}

const bench_op_t bench_rma_ops[3] = {{"put", BENCH_PUT, 0}, {"get", BENCH_GET, 0}, {0}};

/* The btl-ofi counters each kind of operation moves. */
static const unsigned kind_counters[] = {
    [BENCH_PUT] = BENCH_CNT(OFI_PVAR_PUTS), [BENCH_GET] = BENCH_CNT(OFI_PVAR_GETS),
    [BENCH_ACC] = BENCH_CNT_ATOMIC,         [BENCH_GET_ACC] = BENCH_CNT_ATOMIC,
    [BENCH_FOP] = BENCH_CNT_ATOMIC,         [BENCH_CAS] = BENCH_CNT_CAS,
};

void bench_row(const bench_ctx_t *ctx, const bench_run_t *r, const bench_field_t *fields, int n)
{
    const int *w = ctx->prog->widths;
    bench_field_t f[18] = {BENCH_STR("op", w[0], r->op->name), BENCH_INT("size", w[1], r->size),
                           BENCH_INT("iters", w[2], r->iters)};
    int k = 3;

    for (int i = 0; i < n && k < 13; ++i) {
        f[k++] = fields[i];
    }
    if (BENCH_DIRECTED != ctx->prog->mode) {
        f[k++] = (bench_field_t)BENCH_STR("valid", 7, r->valid ? "yes" : "WRONG");
    }
    f[k++] = (bench_field_t)BENCH_STR("carried_by", 13, r->carried);
    f[k++] = (bench_field_t)BENCH_INT("ofi_ops", 10, r->delta);
    if (ctx->opt.core_rtt) {
        f[k++] = (bench_field_t)BENCH_DBL("rtt_before_ns", 14, 0, r->rtt_ns[0]);
        f[k++] = (bench_field_t)BENCH_DBL("rtt_after_ns", 13, 0, r->rtt_ns[1]);
    }
    if (0 == ctx->rank) {
        bench_print_row(ctx->prog->name, ctx->opt.sweep.json, ctx->columns, f, k);
    }
}

/* Header comment lines and column names (rank 0 only; JSON mode prints a meta record). */
static void header(bench_ctx_t *ctx)
{
    const bench_opts_t *o = &ctx->opt;
    const bench_run_t none = {.op = ctx->prog->ops, .iters = 1, .elapsed = 1, .carried = ""};
    char what[160];
    ofi_pvars_t now;

    if (0 != ctx->rank) {
        return;
    }
    ofi_pvars_read(&now);
    if (BENCH_LATENCY == ctx->prog->mode && BENCH_SYNC_LOCK <= o->sync) {
        snprintf(what, sizeof(what), "latency of one operation in an %s of its own",
                 sync_what[o->sync]);
    } else if (BENCH_LATENCY == ctx->prog->mode) {
        snprintf(what, sizeof(what), "%s", ctx->prog->metric);
    } else {
        snprintf(what, sizeof(what), "%s%s, %d operations per %s",
                 BENCH_DIRECTED != ctx->prog->mode ? ""
                 : o->bidir                        ? "bidirectional "
                                                   : "unidirectional ",
                 ctx->prog->metric, o->sweep.window,
                 sync_what[o->sync]);
    }
    if (o->sweep.json) {
        printf("{\"bench\": \"%s\", \"meta\": true, \"what\": \"%s\", \"window\": \"%s\", "
               "\"sync\": \"%s\", \"direction\": \"%s\", \"ops_per_sync\": %d, "
               "\"btl_ofi_so\": \"%s\", \"btl_ofi_counters\": %s, \"pair_one_node\": %s}\n",
               ctx->prog->name, what, flavor_names[o->flavor], sync_names[o->sync],
               dir_names[o->bidir], o->sweep.window, ctx->btl_ofi_so,
               now.present ? "true" : "false", ctx->pair_one_node ? "true" : "false");
    } else {
        printf("# %s: %s\n", ctx->prog->name, what);
        printf("# 2 ranks (%s), %s window; btl-ofi counters %s; btl-ofi DSO: %s\n",
               ctx->pair_one_node ? "one node" : "two nodes", flavor_names[o->flavor],
               now.present ? "present" : "absent",
               ctx->btl_ofi_so[0] ? ctx->btl_ofi_so : "(not loaded)");
        ctx->columns = 1;
        ctx->prog->row(ctx, &none);
        ctx->columns = 0;
    }
    fflush(stdout);
}

/* The byte pattern a put or get of size bytes carries (checked values). */
static uint8_t pattern(size_t size)
{
    return (uint8_t)(size * 7 + 1);
}

/*
 * Before the timed loop: rank 0 sets its source (or clears its destination), rank 1 the
 * target; atomics add 1 to every element of a zeroed target (cas swaps 0 for 1 once).
 */
static void prepare(bench_ctx_t *ctx, const bench_run_t *r)
{
    const bench_kind_t kind = r->op->kind;
    int64_t *origin = (int64_t *)ctx->origin, *target = (int64_t *)ctx->win_buf;

    if (BENCH_PUT == kind || BENCH_GET == kind) {
        const int source = (BENCH_PUT == kind) == (0 == ctx->rank);
        memset(0 == ctx->rank ? ctx->origin : ctx->win_buf, source ? pattern(r->size) : 0, r->size);
        return;
    }
    for (size_t i = 0; i < r->size / 8; ++i) {
        if (0 == ctx->rank) {
            origin[i] = 1;
            ctx->result[i] = -1;
        } else {
            target[i] = 0;
        }
    }
    if (BENCH_CAS == kind && 0 == ctx->rank) {
        origin[1] = 0; /* compare */
    }
}

/*
 * After it, each rank checks its side: the pattern arrived (first and last byte), every
 * element holds the number of operations, and with one operation per synchronization the
 * last fetch saw the value before the last addition (cas: the first one swapped).
 */
static int check(const bench_ctx_t *ctx, const bench_run_t *r, int window)
{
    const bench_kind_t kind = r->op->kind;
    const int64_t total = (int64_t)window * (r->warmup + r->iters), *res = ctx->result;
    const int64_t *word = (const int64_t *)ctx->win_buf;
    const uint8_t *bytes = (const uint8_t *)(0 == ctx->rank ? ctx->origin : ctx->win_buf);
    const size_t n = r->size / 8;

    if (BENCH_PUT == kind || BENCH_GET == kind) {
        return (BENCH_PUT == kind) != (1 == ctx->rank) ||
               (bytes[0] == pattern(r->size) && bytes[r->size - 1] == pattern(r->size));
    }
    if (BENCH_CAS == kind) {
        return 1 == ctx->rank ? 1 == word[0] : window > 1 || (total > 1 ? 1 : 0) == res[0];
    }
    if (1 == ctx->rank) {
        return word[0] == total && word[n - 1] == total;
    }
    return window > 1 || BENCH_ACC == kind || (res[0] == total - 1 && res[n - 1] == total - 1);
}

/* Byte offset of the j-th operation of a window: distinct slots while they fit. */
static size_t slot(const bench_ctx_t *ctx, size_t size, int j)
{
    size_t slots = ctx->win_len / size;

    return (slots ? (size_t)j % slots : 0) * size;
}

/* Posts the j-th operation of a window: put and get to its slot, atomics to the first word. */
static void post(bench_ctx_t *ctx, const bench_run_t *r, int j)
{
    const int bytes = (int)r->size, n = (int)(r->size / 8), peer = ctx->peer;
    const size_t off = slot(ctx, r->size, j);
    const MPI_Aint at = ctx->peer_base + (MPI_Aint)off, word = ctx->peer_base;
    int64_t *res = ctx->result + (size_t)j * n;
    char *origin = ctx->origin;

    switch (r->op->kind) {
    case BENCH_PUT:
        MPI_Put(origin + off, bytes, MPI_BYTE, peer, at, bytes, MPI_BYTE, ctx->win);
        break;
    case BENCH_GET:
        MPI_Get(origin + off, bytes, MPI_BYTE, peer, at, bytes, MPI_BYTE, ctx->win);
        break;
    case BENCH_ACC:
        MPI_Accumulate(origin, n, MPI_INT64_T, peer, word, n, MPI_INT64_T, MPI_SUM, ctx->win);
        break;
    case BENCH_GET_ACC:
        MPI_Get_accumulate(origin, n, MPI_INT64_T, res, n, MPI_INT64_T, peer, word, n, MPI_INT64_T,
                           MPI_SUM, ctx->win);
        break;
    case BENCH_FOP:
        MPI_Fetch_and_op(origin, res, MPI_INT64_T, peer, word, MPI_SUM, ctx->win);
        break;
    case BENCH_CAS:
        MPI_Compare_and_swap(origin, origin + 8, res, MPI_INT64_T, peer, word, ctx->win);
        break;
    }
}

/*
 * One (op, size), collective: per iteration each active rank posts a window of operations,
 * then synchronizes (MPI_Win_flush to the peer inside one lock_all epoch, or MPI_Win_fence on
 * both ranks); warm-up excluded from the time; btl-ofi's counters read before and after.
 */
static void measure(bench_ctx_t *ctx, bench_run_t *r)
{
    const int latency = BENCH_LATENCY == ctx->prog->mode;
    const int window = latency ? 1 : (size_t)ctx->opt.sweep.window;
    const int fence = !latency && BENCH_SYNC_FENCE == ctx->opt.sync;
    /* -s lock / lock_excl: an epoch of its own for every synchronization (some one-sided
     * libraries lock, access and unlock for each operation) */
    const int epoch = BENCH_SYNC_LOCK == ctx->opt.sync || BENCH_SYNC_LOCK_EXCL == ctx->opt.sync;
    const int lock_type = BENCH_SYNC_LOCK_EXCL == ctx->opt.sync ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
    const int directed = BENCH_DIRECTED == ctx->prog->mode; /* bulk data, not checked */
    const int active = 0 == ctx->rank || (directed && ctx->opt.bidir);
    const double gap = latency ? 1e-6 * ctx->opt.gap_us : 0;
    ofi_pvars_t before, after;
    double t0 = 0;

    bench_sweep_iterations(&ctx->opt.sweep, r->size * (size_t)window, &r->iters, &r->warmup);
    if (!directed) {
        prepare(ctx, r);
    }
    ofi_pvars_read(&before);
    MPI_Barrier(ctx->comm);
    if (fence) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, ctx->win);
    } else if (active && !epoch) {
        MPI_Win_lock_all(0, ctx->win);
    }
    for (int i = 0; i < r->warmup + r->iters; ++i) {
        if (i == r->warmup) {
            t0 = MPI_Wtime();
        }
        if (gap > 0 && active) {
            /* -g: the pause before the operation is not timed (nothing of MPI runs in it) */
            const double g0 = MPI_Wtime();

            while (MPI_Wtime() - g0 < gap) {
            }
            t0 += i >= r->warmup ? MPI_Wtime() - g0 : 0;
        }
        if (active) {
            const double p0 = latency ? 0 : MPI_Wtime();
            if (epoch) {
                MPI_Win_lock(lock_type, ctx->peer, 0, ctx->win);
            }
            for (int j = 0; j < window; ++j) {
                post(ctx, r, j);
            }
            r->post += (!latency && i >= r->warmup) ? MPI_Wtime() - p0 : 0;
        }
        if (fence) {
            MPI_Win_fence(0, ctx->win);
        } else if (active && epoch) {
            MPI_Win_unlock(ctx->peer, ctx->win);
        } else if (active) {
            MPI_Win_flush(ctx->peer, ctx->win);
        }
    }
    r->elapsed = active ? MPI_Wtime() - t0 : 0;
    if (fence) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, ctx->win);
    } else if (active && !epoch) {
        MPI_Win_unlock_all(ctx->win);
    }
    MPI_Barrier(ctx->comm);
    MPI_Allreduce(MPI_IN_PLACE, &r->elapsed, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    MPI_Allreduce(MPI_IN_PLACE, &r->post, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    r->valid = directed ? 1 : harness_min_int(check(ctx, r, window));
    ofi_pvars_read(&after);
    for (int i = 0; i < OFI_PVAR_COUNT && after.present && before.present; ++i) {
        const unsigned proof = kind_counters[r->op->kind] | r->op->also;
        r->delta += (proof & BENCH_CNT(i)) ? after.value[i] - before.value[i] : 0;
    }
    r->delta = harness_sum_ul(r->delta);
    r->carried = r->delta > 0 ? "btl_ofi" : "not btl-ofi";
}

/* Every wanted op at every size, one row each; the exit code. */
static int sweep(bench_ctx_t *ctx)
{
    const bench_prog_t *prog = ctx->prog;
    bench_sweep_t *s = &ctx->opt.sweep;
    int failures = 0, not_ours = 0, rc;

    while (prog->default_max && s->default_sizes && s->nsizes > 1 &&
           s->sizes[s->nsizes - 1] > prog->default_max) {
        --s->nsizes;
    }
    if (HARNESS_EXIT_PASS != (rc = window_open(ctx))) {
        return rc;
    }
    header(ctx);
    for (const bench_op_t *op = prog->ops; op->name; ++op) {
        const size_t elem = BENCH_GET < op->kind ? 8 : 1;
        const int one =
            BENCH_ATOMICS == prog->mode || BENCH_FOP == op->kind || BENCH_CAS == op->kind;
        size_t last = 0;

        if (!harness_listed(&s->ops, op->name, 1)) {
            continue;
        }
        for (int i = 0; i < s->nsizes; ++i) {
            bench_run_t run = {.op = op, .size = one ? 8 : s->sizes[i] / elem * elem};
            if (0 == run.size || run.size == last) {
                continue; /* e.g. 3 B has no 8-byte element; 100 B and 96 B would repeat */
            }
            last = run.size;
            run.rtt_ns[0] = core_rtt_measure(&ctx->rtt, ctx->comm); /* -1 without -c */
            measure(ctx, &run);
            run.rtt_ns[1] = core_rtt_measure(&ctx->rtt, ctx->comm);
            failures += !run.valid;
            not_ours += 0 == run.delta;
            prog->row(ctx, &run);
        }
    }
    if (failures) {
        return HARNESS_EXIT_FAIL;
    }
    return (ctx->opt.require_ofi && not_ours) ? HARNESS_EXIT_NOT_OURS : HARNESS_EXIT_PASS;
}

/* Between btl-ofi's counters opened and closed (harness_run). */
static int bench_run(void *arg)
{
    bench_ctx_t *ctx = arg;
    int rc;

    find_btl_ofi_so(ctx->btl_ofi_so, sizeof(ctx->btl_ofi_so));
    if (ctx->opt.core_rtt) {
        core_rtt_open(&ctx->rtt, ctx->comm, ctx->rank);
    }
    rc = sweep(ctx);
    core_rtt_close(&ctx->rtt);
    window_close(ctx);
    return rc;
}

/* Ranks 2.. (-y): idle until rank 0 says the measurement is over, asleep between looks, so
 * that they take no core from the two that measure (MPI_Finalize would spin). */
static void bystand(void)
{
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    MPI_Request req;
    int done = 0, word;

    MPI_Irecv(&word, 1, MPI_INT, 0, BENCH_BYSTANDER_TAG, MPI_COMM_WORLD, &req);
    for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
         MPI_Test(&req, &done, MPI_STATUS_IGNORE)) {
        nanosleep(&pause, NULL);
    }
}

/* bench_run, then (rank 0) the bystanders are let go. */
static int bench_run_released(void *arg)
{
    bench_ctx_t *ctx = arg;
    int rc = bench_run(arg), size, word = 1;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int r = 2; 0 == ctx->rank && r < size; ++r) {
        MPI_Send(&word, 1, MPI_INT, r, BENCH_BYSTANDER_TAG, MPI_COMM_WORLD);
    }
    return rc;
}

int bench_main(int argc, char **argv, const bench_prog_t *prog)
{
    bench_ctx_t ctx = {.prog = prog, .win = MPI_WIN_NULL};
    int size;
    int rc = harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &ctx.rank, &size, parse_opts, &ctx,
                          usage, HARNESS_EXIT_FAIL);

    if (rc) {
        return rc;
    }
    /* Window creation failures come back as codes, so they can be reported as "skipped". */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (2 != size && !(size > 2 && ctx.opt.bystanders)) {
        return harness_skip(ctx.rank, "%s: needs exactly 2 ranks (got %d): not supported here\n",
                            prog->name, size);
    }
    ctx.comm = MPI_COMM_WORLD;
    if (size > 2) {
        /* ranks 0 and 1 measure; the others only make the job what it is (wait in Finalize) */
        MPI_Comm_split(MPI_COMM_WORLD, ctx.rank < 2 ? 0 : MPI_UNDEFINED, ctx.rank, &ctx.comm);
        if (ctx.rank >= 2) {
            bystand();
            MPI_Finalize();
            return 0;
        }
        MPI_Comm_set_errhandler(ctx.comm, MPI_ERRORS_RETURN);
        harness_set_comm(ctx.comm);
    }
    ctx.peer = 1 - ctx.rank;
    {
        MPI_Comm node;
        int node_size = 0;

        /* said in the meta record: a run across hosts shows where the pair it measured was */
        MPI_Comm_split_type(ctx.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &node_size);
        MPI_Comm_free(&node);
        ctx.pair_one_node = 2 == node_size;
    }
    return harness_run(size > 2 ? bench_run_released : bench_run, &ctx);
}
