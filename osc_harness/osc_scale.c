/*
 * osc_scale: what a window costs as the job grows (issue 28).
 *
 * Times MPI_Init, then R rounds of: MPI_Win_create (8 KiB, MPI_COMM_WORLD),
 * MPI_Win_lock_all, one MPI_Put of B bytes to the next rank, MPI_Win_unlock_all,
 * MPI_Win_free. Each rank times each phase on its own clock; a barrier starts
 * every round (not timed). Rank 0 prints one row per phase: the mean over
 * rounds of the slowest rank's time, and the slowest round. Round 0's
 * Win_create is "Win_create first", the later ones "Win_create later"; every
 * other phase is averaged over all rounds. "round" is the whole round (create
 * to free), "loop" the wall time of all R rounds on rank 0 (what issue 28
 * quotes). The last columns are btl-ofi's counters per round, summed over
 * ranks, read through MPI_T: the proof that btl-ofi carried the puts (with
 * another BTL they are absent and the table says so). Last, each rank's peak resident
 * memory (getrusage) and btl-ofi's endpoints (MPI_T "peers", one per peer and domain).
 *
 * usage: mpirun -np 2+ osc_scale [-r ROUNDS] [-b BYTES] [-j] [-o]
 *   -r ROUNDS  window rounds (default 20)
 *   -b BYTES   bytes per put (default 8)
 *   -j         JSON lines (one per phase)
 *   -o         exit 2 unless btl-ofi carried the puts
 * Exit: 0 done, 1 wrong data, 2 not carried by btl-ofi (-o), 3 usage, 77 not runnable.
 */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_output.h"
#include "harness_core.h"
#include "ofi_pvars.h"

#define WIN_BYTES 8192

enum { PH_INIT, PH_CREATE_FIRST, PH_CREATE, PH_LOCK, PH_PUT, PH_UNLOCK, PH_FREE, PH_ROUND, PH_N };

static const char *const phase_names[PH_N] = {
    [PH_INIT] = "MPI_Init",       [PH_CREATE_FIRST] = "Win_create first",
    [PH_CREATE] = "Win_create later", [PH_LOCK] = "lock_all",
    [PH_PUT] = "put",             [PH_UNLOCK] = "unlock_all",
    [PH_FREE] = "Win_free",       [PH_ROUND] = "round",
};

/* btl-ofi counters shown per round (summed over ranks). */
static const enum ofi_pvar_id shown[] = {OFI_PVAR_PUTS, OFI_PVAR_FLUSHES, OFI_PVAR_REGISTRATIONS,
                                         OFI_PVAR_CQ_ENTRIES, OFI_PVAR_POST_EAGAIN};
#define NSHOWN ((int)(sizeof(shown) / sizeof(shown[0])))

typedef struct scale_opts {
    int rounds, bytes, json, require_ofi;
    double init_seconds;
} scale_opts_t;

static void usage(const void *opts)
{
    (void)opts;
    fprintf(stderr,
            "usage: mpirun -np 2+ osc_scale [-r ROUNDS] [-b BYTES] [-j] [-o]\n"
            "  Times MPI_Init and ROUNDS rounds (default 20) of MPI_Win_create, lock_all,\n"
            "  one put of BYTES (default 8) to the next rank, unlock_all, MPI_Win_free;\n"
            "  per phase the mean over rounds of the slowest rank, and btl-ofi's counters\n"
            "  per round (MPI_T). -j JSON lines; -o exit 2 unless btl-ofi carried the puts.\n");
}

static int parse(int argc, char **argv, void *opts)
{
    scale_opts_t *o = opts;
    const harness_opt_t table[] = {
        HARNESS_ARG('r', HARNESS_OPT_POS, &o->rounds),
        HARNESS_ARG('b', HARNESS_OPT_POS, &o->bytes),
        HARNESS_FLAG('j', &o->json, 1),
        HARNESS_FLAG('o', &o->require_ofi, 1),
        {0},
    };

    if (harness_getopt(argc, argv, table)) {
        return -1;
    }
    return o->bytes > WIN_BYTES ? -1 : 0;
}

static void print_row(const scale_opts_t *o, int nranks, const char *phase, int n, double mean,
                      double worst, const double *per_round, int present, int columns)
{
    bench_field_t f[6 + NSHOWN] = {
        BENCH_STR("phase", 17, phase),
        BENCH_INT("ranks", 6, nranks),
        BENCH_INT("n", 4, n),
        BENCH_DBL("ms_mean", 10, 3, 1e3 * mean),
        BENCH_DBL("ms_max", 10, 3, 1e3 * worst),
        BENCH_STR("btl_ofi", 8, present ? "yes" : "absent"),
    };
    static char keys[NSHOWN][64];

    for (int i = 0; i < NSHOWN; ++i) {
        /* "btl_ofirma_put_count" -> "put_count" per round */
        const char *name = ofi_pvar_name(shown[i]);
        const char *tail = strchr(name + 4, '_');
        snprintf(keys[i], sizeof(keys[i]), "%s", tail ? tail + 1 : name);
        f[6 + i] = (bench_field_t)BENCH_DBL(keys[i], 19, 1, per_round ? per_round[i] : 0);
    }
    bench_print_row("osc_scale", o->json, columns, f, per_round ? 6 + NSHOWN : 6);
}

static int run(void *ctx)
{
    scale_opts_t *o = ctx;
    const int R = o->rounds;
    int rank, nranks, wrong = 0;
    double *t = calloc((size_t)R * PH_N, sizeof(double)); /* this rank's phase times */
    unsigned char *base = NULL, *src = calloc(1, WIN_BYTES);
    ofi_pvars_t before, after;
    unsigned long delta[OFI_PVAR_COUNT];
    double loop0, loop;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (NULL == t || NULL == src) {
        harness_out_of_memory("osc_scale");
    }
    base = calloc(1, WIN_BYTES);
    if (NULL == base) {
        harness_out_of_memory("osc_scale");
    }
    const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;

    MPI_Barrier(MPI_COMM_WORLD);
    ofi_pvars_read(&before);
    loop0 = harness_now();
    for (int r = 0; r < R; ++r) {
        double *p = t + (size_t)r * PH_N, a, b;
        MPI_Win win;

        memset(src, (unsigned char)(r + rank + 1), (size_t)o->bytes);
        memset(base, 0, (size_t)o->bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        a = harness_now();
        MPI_Win_create(base, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        b = harness_now();
        p[r ? PH_CREATE : PH_CREATE_FIRST] = b - a;
        MPI_Win_lock_all(0, win);
        a = harness_now();
        p[PH_LOCK] = a - b;
        MPI_Put(src, o->bytes, MPI_BYTE, right, 0, o->bytes, MPI_BYTE, win);
        b = harness_now();
        p[PH_PUT] = b - a;
        MPI_Win_unlock_all(win);
        a = harness_now();
        p[PH_UNLOCK] = a - b;
        MPI_Win_free(&win); /* collective: every put has landed once it returns */
        b = harness_now();
        p[PH_FREE] = b - a;
        p[PH_ROUND] = p[r ? PH_CREATE : PH_CREATE_FIRST] + p[PH_LOCK] + p[PH_PUT] + p[PH_UNLOCK] +
                      p[PH_FREE];
        for (int i = 0; i < o->bytes; ++i) {
            wrong += base[i] != (unsigned char)(r + left + 1);
        }
    }
    loop = harness_now() - loop0;
    ofi_pvars_read(&after);
    ofi_pvars_delta(&before, &after, delta);
    harness_sum_ul_n(delta, OFI_PVAR_COUNT);
    wrong = (int)harness_sum_long(wrong);
    /* the slowest rank of each phase of each round */
    MPI_Reduce(0 == rank ? MPI_IN_PLACE : t, t, R * PH_N, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(0 == rank ? MPI_IN_PLACE : &o->init_seconds, &o->init_seconds, 1, MPI_DOUBLE,
               MPI_MAX, 0, MPI_COMM_WORLD);
    const int present = harness_min_int(after.present);

    /* what a rank holds after the rounds: its peak resident memory, and btl-ofi's endpoints
     * (a level: one per peer and domain, kept to finalize) */
    struct rusage usage;
    double rss_mib[2] = {0, 0}; /* max, sum */
    unsigned long peers = present ? after.value[OFI_PVAR_PEERS] : 0;

    getrusage(RUSAGE_SELF, &usage);
    rss_mib[0] = rss_mib[1] = (double)usage.ru_maxrss / 1024.0;
    MPI_Reduce(0 == rank ? MPI_IN_PLACE : &rss_mib[0], &rss_mib[0], 1, MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(0 == rank ? MPI_IN_PLACE : &rss_mib[1], &rss_mib[1], 1, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(0 == rank ? MPI_IN_PLACE : &peers, &peers, 1, MPI_UNSIGNED_LONG, MPI_MAX, 0,
               MPI_COMM_WORLD);
    if (0 == rank) {
        double per_round[NSHOWN];

        for (int i = 0; i < NSHOWN; ++i) {
            per_round[i] = (double)delta[shown[i]] / R;
        }
        if (!o->json) {
            printf("# osc_scale: %d ranks, %d rounds, %d-byte put to the next rank; ms: mean over "
                   "rounds of the slowest rank\n",
                   nranks, R, o->bytes);
            print_row(o, nranks, "", 0, 0, 0, per_round, present, 1);
        }
        print_row(o, nranks, phase_names[PH_INIT], 1, o->init_seconds, o->init_seconds, NULL,
                  present, 0);
        for (int ph = PH_CREATE_FIRST; ph < PH_N; ++ph) {
            const int first = (PH_CREATE == ph) ? 1 : 0;
            const int last = (PH_CREATE_FIRST == ph) ? 1 : R;
            double sum = 0, worst = 0;

            for (int r = first; r < last; ++r) {
                const double v = t[(size_t)r * PH_N + ph];
                sum += v;
                worst = v > worst ? v : worst;
            }
            if (last > first) {
                print_row(o, nranks, phase_names[ph], last - first, sum / (last - first), worst,
                          PH_ROUND == ph ? per_round : NULL, present, 0);
            }
        }
        print_row(o, nranks, "loop", 1, loop, loop, NULL, present, 0);
        if (o->json) {
            printf("{\"bench\": \"osc_scale\", \"phase\": \"memory\", \"ranks\": %d, "
                   "\"rss_max_MiB\": %.1f, \"rss_mean_MiB\": %.1f, \"peers_max\": %lu}\n",
                   nranks, rss_mib[0], rss_mib[1] / nranks, present ? peers : 0UL);
        } else {
            printf("# memory: peak RSS per rank %.1f MiB at most, %.1f MiB on average; btl-ofi "
                   "endpoints per rank: %s%lu\n",
                   rss_mib[0], rss_mib[1] / nranks, present ? "" : "(absent) ", peers);
        }
        if (wrong) {
            printf("WRONG: %d bytes did not arrive\n", wrong);
        }
        if (!o->json && (!present || 0 == delta[OFI_PVAR_PUTS])) {
            printf("# not carried by btl-ofi: its counters %s\n",
                   present ? "did not move" : "are absent");
        }
    }
    free(t);
    free(src);
    free(base);
    if (wrong) {
        return HARNESS_EXIT_FAIL;
    }
    return o->require_ofi && (!present || 0 == delta[OFI_PVAR_PUTS]) ? HARNESS_EXIT_NOT_OURS
                                                                      : HARNESS_EXIT_PASS;
}

int main(int argc, char **argv)
{
    scale_opts_t o = {.rounds = 20, .bytes = 8};
    int rank, nranks, rc;
    double t0;

    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--help") || 0 == strcmp(argv[i], "-h")) {
            usage(&o); /* before MPI_Init: works outside mpirun too */
            return HARNESS_EXIT_PASS;
        }
    }
    t0 = harness_now();
    rc = harness_init(&argc, &argv, HARNESS_MPI_INIT, NULL, &rank, &nranks, parse, &o, usage,
                      HARNESS_EXIT_USAGE);
    o.init_seconds = harness_now() - t0;
    if (rc) {
        return rc;
    }
    if (nranks < 2) {
        return harness_skip(rank, "osc_scale: needs 2 or more ranks\n");
    }
    return harness_run(run, &o);
}
