/*
 * Copyright (c) 2026      btl-ofi developers. All rights reserved.
 * $COPYRIGHT$
 *
 * Additional copyrights may follow
 *
 * $HEADER$
 */

/*
 * osc_rdma_acc_lock: exactness (and time) of concurrent single-element accumulate
 * operations on one word from every rank.
 *
 *     mpirun -np N ./osc_rdma_acc_lock [iterations]
 *
 * Every rank hammers the same word of one target rank with MPI_Fetch_and_op,
 * MPI_Accumulate, MPI_Get_accumulate and MPI_Compare_and_swap, each followed by
 * MPI_Win_flush, under MPI_Win_lock_all. Each check is repeated for
 *
 *  - MPI_Win_allocate and MPI_Win_create windows,
 *  - the info keys: none (accumulate_ops=same_op_no_op), accumulate_ops=same_op,
 *    acc_single_intrinsic=true (Open MPI osc/rdma; ignored elsewhere), and both,
 *  - target rank 0 and the last rank.
 *
 * The results must be exact: fetch-and-add tickets form a permutation of
 * 0 .. total-1, the counter holds the total, swaps form one chain, every successful
 * compare-and-swap saw a distinct old value, MPI_NO_OP reads never go backwards.
 * The program cannot see which network operations carried the updates; it prints the
 * time per operation, which drops when an implementation needs fewer round trips.
 * It returns 0 when every check passed, 1 otherwise.
 *
 * Checks that mix MPI_NO_OP with MPI_SUM on one word run only on windows where
 * accumulate_ops is same_op_no_op. The "neighbours" check adds a multi-element
 * MPI_Accumulate on the words next to (never over) the hammered word; with
 * acc_single_intrinsic that goes beyond what the info key promises, but no
 * implementation may let it change the word it does not cover.
 */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* window layout (bytes, disp_unit 1) */
#define OFF_WORD   0    /* int64_t (or double, or int32_t) hammered by every rank */
#define OFF_BLOCK  64   /* NEIGHBOURS int64_t for the multi-element accumulate */
#define NEIGHBOURS 64   /* more than osc/rdma's default network_max_amo (32) */
#define WIN_BYTES  (OFF_BLOCK + NEIGHBOURS * 8)

static int rank, nranks, iterations = 1000, failures;

/* report a failed check on this rank */
static void fail (const char *check, const char *fmt, long long a, long long b)
{
    char msg[256];

    snprintf (msg, sizeof (msg), fmt, a, b);
    fprintf (stderr, "rank %d: FAILED %s: %s\n", rank, check, msg);
    ++failures;
}

static int cmp_i64 (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

/* fill the whole window of the target with zeros, then let every rank start */
static void reset_window (MPI_Win win, int target)
{
    static char zero[WIN_BYTES];

    if (0 == rank) {
        MPI_Win_lock (MPI_LOCK_EXCLUSIVE, target, 0, win);
        MPI_Put (zero, WIN_BYTES, MPI_BYTE, target, 0, WIN_BYTES, MPI_BYTE, win);
        MPI_Win_unlock (target, win);
    }
    MPI_Barrier (MPI_COMM_WORLD);
}

/* read bytes of the target's window after every rank finished its epoch */
static void read_window (MPI_Win win, int target, MPI_Aint off, void *buf, int bytes)
{
    MPI_Barrier (MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Win_lock (MPI_LOCK_SHARED, target, 0, win);
        MPI_Get (buf, bytes, MPI_BYTE, target, off, bytes, MPI_BYTE, win);
        MPI_Win_unlock (target, win);
    }
    MPI_Bcast (buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* rank 0 checks that the gathered values are exactly first, first + 1, ... first + n - 1 */
static void check_permutation (const char *check, int64_t *mine, int count, int64_t first)
{
    int64_t *all = NULL;
    long long n = (long long) count * nranks;

    if (0 == rank) {
        all = malloc (n * sizeof (*all));
    }
    MPI_Gather (mine, count, MPI_INT64_T, all, count, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        qsort (all, n, sizeof (*all), cmp_i64);
        for (long long i = 0 ; i < n ; ++i) {
            if (all[i] != first + i) {
                fail (check, "sorted value %lld is %lld (lost or duplicated update)", i, (long long) all[i]);
                break;
            }
        }
        free (all);
    }
}

static double elapsed_max (double t)
{
    double max;

    MPI_Allreduce (&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

/* MPI_Fetch_and_op(MPI_SUM, 1) on an int64_t: tickets and the total */
static double check_fop_sum (MPI_Win win, int target)
{
    int64_t one = 1, final, *tickets = malloc (iterations * sizeof (*tickets));
    double t;

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        MPI_Fetch_and_op (&one, tickets + i, MPI_INT64_T, target, OFF_WORD, MPI_SUM, win);
        MPI_Win_flush (target, win);
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    check_permutation ("fetch_and_op sum tickets", tickets, iterations, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != (int64_t) iterations * nranks) {
        fail ("fetch_and_op sum total", "%lld, expected %lld", (long long) final, (long long) iterations * nranks);
    }
    free (tickets);
    return elapsed_max (t);
}

/* MPI_Accumulate(MPI_SUM, 1) on an int64_t */
static double check_acc_sum (MPI_Win win, int target)
{
    int64_t one = 1, final;
    double t;

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        MPI_Accumulate (&one, 1, MPI_INT64_T, target, OFF_WORD, 1, MPI_INT64_T, MPI_SUM, win);
        MPI_Win_flush (target, win);
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != (int64_t) iterations * nranks) {
        fail ("accumulate sum total", "%lld, expected %lld", (long long) final, (long long) iterations * nranks);
    }
    return elapsed_max (t);
}

/* MPI_Get_accumulate(MPI_SUM, 1) on an int32_t: the 32-bit path */
static double check_gacc_sum32 (MPI_Win win, int target)
{
    int32_t one = 1, result, final;
    int64_t *tickets = malloc (iterations * sizeof (*tickets));
    double t;

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        MPI_Get_accumulate (&one, 1, MPI_INT32_T, &result, 1, MPI_INT32_T, target, OFF_WORD, 1, MPI_INT32_T,
                            MPI_SUM, win);
        MPI_Win_flush (target, win);
        tickets[i] = result;
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    check_permutation ("get_accumulate int32 sum tickets", tickets, iterations, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != iterations * nranks) {
        fail ("get_accumulate int32 sum total", "%lld, expected %lld", final, (long long) iterations * nranks);
    }
    free (tickets);
    return elapsed_max (t);
}

/* MPI_Get_accumulate(MPI_SUM, 1.0) on a double: the floating-point path (exact below 2^53) */
static double check_gacc_sum_double (MPI_Win win, int target)
{
    double one = 1.0, result, final, t;
    int64_t *tickets = malloc (iterations * sizeof (*tickets));

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        MPI_Get_accumulate (&one, 1, MPI_DOUBLE, &result, 1, MPI_DOUBLE, target, OFF_WORD, 1, MPI_DOUBLE,
                            MPI_SUM, win);
        MPI_Win_flush (target, win);
        tickets[i] = (int64_t) result;
        if ((double) tickets[i] != result) {
            fail ("get_accumulate double sum", "result %lld is not an integer (iteration %lld)",
                  (long long) result, i);
        }
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    check_permutation ("get_accumulate double sum tickets", tickets, iterations, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != (double) iterations * nranks) {
        fail ("get_accumulate double sum total", "%lld, expected %lld", (long long) final,
              (long long) iterations * nranks);
    }
    free (tickets);
    return elapsed_max (t);
}

/* MPI_SUM from every rank, interleaved with MPI_NO_OP reads (MPI_Fetch_and_op and
 * MPI_Get_accumulate): legal only with accumulate_ops=same_op_no_op */
static double check_sum_and_no_op (MPI_Win win, int target)
{
    int sums = (iterations + 1) / 2;
    int64_t one = 1, value, last = 0, final, *tickets = malloc (sums * sizeof (*tickets));
    double t;

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0, s = 0 ; i < iterations ; ++i) {
        if (0 == i % 2) {
            MPI_Fetch_and_op (&one, &value, MPI_INT64_T, target, OFF_WORD, MPI_SUM, win);
            tickets[s++] = value;
            value += 1;   /* our own update is applied */
        } else if (0 == i % 4) {
            MPI_Fetch_and_op (&one, &value, MPI_INT64_T, target, OFF_WORD, MPI_NO_OP, win);
        } else {
            MPI_Get_accumulate (NULL, 0, MPI_INT64_T, &value, 1, MPI_INT64_T, target, OFF_WORD, 1, MPI_INT64_T,
                                MPI_NO_OP, win);
        }
        MPI_Win_flush (target, win);
        if (value < last || value > (int64_t) sums * nranks) {
            fail ("sum with no_op reads", "read %lld after %lld (value went back or out of range)",
                  (long long) value, (long long) last);
        }
        last = value;
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    check_permutation ("sum with no_op reads: tickets", tickets, sums, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != (int64_t) sums * nranks) {
        fail ("sum with no_op reads: total", "%lld, expected %lld", (long long) final, (long long) sums * nranks);
    }
    free (tickets);
    return elapsed_max (t);
}

/* MPI_Fetch_and_op(MPI_REPLACE) with distinct values: every value written is read back
 * exactly once (by the next swap or at the end), and the initial 0 once */
static double check_replace_chain (MPI_Win win, int target)
{
    int64_t value, final, *seen = malloc ((iterations + 1) * sizeof (*seen));
    double t;

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        value = (int64_t) rank * iterations + i + 1;
        MPI_Fetch_and_op (&value, seen + i, MPI_INT64_T, target, OFF_WORD, MPI_REPLACE, win);
        MPI_Win_flush (target, win);
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    /* the values read plus the final value must be 0 .. iterations * nranks. the final
     * value is counted once, on rank 0 */
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    {
        int64_t *all = NULL;
        long long n = (long long) iterations * nranks;

        if (0 == rank) {
            all = malloc ((n + 1) * sizeof (*all));
        }
        MPI_Gather (seen, iterations, MPI_INT64_T, all, iterations, MPI_INT64_T, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            all[n] = final;
            qsort (all, n + 1, sizeof (*all), cmp_i64);
            for (long long i = 0 ; i <= n ; ++i) {
                if (all[i] != i) {
                    fail ("replace chain", "sorted value %lld is %lld (a swap was lost or duplicated)",
                          i, (long long) all[i]);
                    break;
                }
            }
            free (all);
        }
    }
    free (seen);
    return elapsed_max (t);
}

/* increments by MPI_Compare_and_swap loops: every successful swap saw a distinct old value */
static double check_cas_increment (MPI_Win win, int target)
{
    int64_t guess = 0, next, result, final, *won = malloc (iterations * sizeof (*won));
    long long attempts = 0, all_attempts;
    double t;

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        do {
            next = guess + 1;
            MPI_Compare_and_swap (&next, &guess, &result, MPI_INT64_T, target, OFF_WORD, win);
            MPI_Win_flush (target, win);
            ++attempts;
            if (result == guess) {
                break;
            }
            guess = result;
        } while (1);
        won[i] = guess;
        guess = next;
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    check_permutation ("compare_and_swap increments", won, iterations, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != (int64_t) iterations * nranks) {
        fail ("compare_and_swap total", "%lld, expected %lld", (long long) final, (long long) iterations * nranks);
    }
    MPI_Reduce (&attempts, &all_attempts, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank && all_attempts < (long long) iterations * nranks) {
        fail ("compare_and_swap attempts", "%lld attempts for %lld increments", all_attempts,
              (long long) iterations * nranks);
    }
    free (won);
    return elapsed_max (t);
}

/* single-element MPI_Fetch_and_op on the word while a multi-element MPI_Accumulate
 * updates the words next to it */
static double check_neighbours (MPI_Win win, int target)
{
    int64_t one = 1, ticket, ones[NEIGHBOURS], block[NEIGHBOURS], final;
    int64_t *tickets = malloc (iterations * sizeof (*tickets));
    double t;

    for (int j = 0 ; j < NEIGHBOURS ; ++j) {
        ones[j] = 1;
    }

    reset_window (win, target);
    MPI_Win_lock_all (0, win);
    t = MPI_Wtime ();
    for (int i = 0 ; i < iterations ; ++i) {
        MPI_Fetch_and_op (&one, &ticket, MPI_INT64_T, target, OFF_WORD, MPI_SUM, win);
        MPI_Accumulate (ones, NEIGHBOURS, MPI_INT64_T, target, OFF_BLOCK, NEIGHBOURS, MPI_INT64_T, MPI_SUM, win);
        MPI_Win_flush (target, win);
        tickets[i] = ticket;
    }
    t = MPI_Wtime () - t;
    MPI_Win_unlock_all (win);

    check_permutation ("neighbours: word tickets", tickets, iterations, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    read_window (win, target, OFF_BLOCK, block, sizeof (block));
    if (0 == rank) {
        if (final != (int64_t) iterations * nranks) {
            fail ("neighbours: word total", "%lld, expected %lld", (long long) final, (long long) iterations * nranks);
        }
        for (int j = 0 ; j < NEIGHBOURS ; ++j) {
            if (block[j] != (int64_t) iterations * nranks) {
                fail ("neighbours: block", "element %lld is %lld", j, (long long) block[j]);
                break;
            }
        }
    }
    free (tickets);
    return elapsed_max (t);
}

/* MPI_Fetch_and_op under MPI_Win_lock(MPI_LOCK_EXCLUSIVE) */
static double check_exclusive (MPI_Win win, int target)
{
    int64_t one = 1, ticket, final;
    int count = iterations / 10 + 1;
    int64_t *tickets = malloc (count * sizeof (*tickets));
    double t;

    reset_window (win, target);
    t = MPI_Wtime ();
    for (int i = 0 ; i < count ; ++i) {
        MPI_Win_lock (MPI_LOCK_EXCLUSIVE, target, 0, win);
        MPI_Fetch_and_op (&one, &ticket, MPI_INT64_T, target, OFF_WORD, MPI_SUM, win);
        MPI_Win_unlock (target, win);
        tickets[i] = ticket;
    }
    t = MPI_Wtime () - t;

    check_permutation ("exclusive lock tickets", tickets, count, 0);
    read_window (win, target, OFF_WORD, &final, sizeof (final));
    if (0 == rank && final != (int64_t) count * nranks) {
        fail ("exclusive lock total", "%lld, expected %lld", (long long) final, (long long) count * nranks);
    }
    free (tickets);
    return elapsed_max (t) * iterations / count;
}

static void run_case (int flavor_allocate, int same_op, int single_intrinsic, int target)
{
    MPI_Info info;
    MPI_Win win;
    void *base = NULL;
    int case_failures, all_case_failures, failures_before = failures;
    double us = 1e6 / iterations;

    MPI_Info_create (&info);
    if (same_op) {
        MPI_Info_set (info, "accumulate_ops", "same_op");
    }
    if (single_intrinsic) {
        MPI_Info_set (info, "acc_single_intrinsic", "true");
    }

    if (flavor_allocate) {
        MPI_Win_allocate (WIN_BYTES, 1, info, MPI_COMM_WORLD, &base, &win);
    } else {
        MPI_Alloc_mem (WIN_BYTES, MPI_INFO_NULL, &base);
        MPI_Win_create (base, WIN_BYTES, 1, info, MPI_COMM_WORLD, &win);
    }
    MPI_Info_free (&info);

    if (0 == rank) {
        printf ("%-8s %-13s single_intrinsic=%d target=%d:", flavor_allocate ? "allocate" : "create",
                same_op ? "same_op" : "same_op_no_op", single_intrinsic, target);
        fflush (stdout);
    }

    /* time per operation (each followed by MPI_Win_flush), slowest rank */
    double fop = check_fop_sum (win, target) * us;
    double acc = check_acc_sum (win, target) * us;
    double gacc32 = check_gacc_sum32 (win, target) * us;
    double gaccd = check_gacc_sum_double (win, target) * us;
    double mixed = same_op ? 0.0 : check_sum_and_no_op (win, target) * us;
    double swap = check_replace_chain (win, target) * us;
    double cas = check_cas_increment (win, target) * us;
    double neigh = check_neighbours (win, target) * us;
    double excl = check_exclusive (win, target) * us;

    case_failures = failures - failures_before;
    MPI_Allreduce (&case_failures, &all_case_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf (" fop %.2f acc %.2f gacc32 %.2f gacc_double %.2f", fop, acc, gacc32, gaccd);
        if (!same_op) {
            printf (" sum+no_op %.2f", mixed);
        }
        printf (" replace %.2f cas_loop %.2f neighbours %.2f exclusive %.2f us/op: %s\n", swap, cas, neigh, excl,
                0 == all_case_failures ? "exact" : "FAILED");
        fflush (stdout);
    }

    MPI_Win_free (&win);
    if (!flavor_allocate) {
        MPI_Free_mem (base);
    }
}

int main (int argc, char *argv[])
{
    int all_failures;

    MPI_Init (&argc, &argv);
    MPI_Comm_rank (MPI_COMM_WORLD, &rank);
    MPI_Comm_size (MPI_COMM_WORLD, &nranks);

    if (argc > 1) {
        iterations = atoi (argv[1]);
    }
    if (iterations < 2 || (long long) iterations * nranks >= INT32_MAX) {
        if (0 == rank) {
            fprintf (stderr, "usage: %s [iterations >= 2, iterations * ranks < 2^31]\n", argv[0]);
        }
        MPI_Finalize ();
        return 2;
    }

    if (0 == rank) {
        printf ("osc_rdma_acc_lock: %d ranks, %d operations per rank and check\n", nranks, iterations);
    }

    for (int flavor_allocate = 1 ; flavor_allocate >= 0 ; --flavor_allocate) {
        for (int single_intrinsic = 0 ; single_intrinsic <= 1 ; ++single_intrinsic) {
            for (int same_op = 0 ; same_op <= 1 ; ++same_op) {
                run_case (flavor_allocate, same_op, single_intrinsic, 0);
                if (nranks > 1) {
                    run_case (flavor_allocate, same_op, single_intrinsic, nranks - 1);
                }
            }
        }
    }

    /* failures counts this rank's own failed checks; rank 0 does the gathered ones */
    MPI_Allreduce (&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf ("%s\n", 0 == all_failures ? "PASSED" : "FAILED");
    }

    MPI_Finalize ();
    return 0 == all_failures ? 0 : 1;
}
