/*
 * pt2pt_latency: what an installed btl-ofi costs a program that does not use
 * one-sided communication (issue 27, item 4). No window is ever created.
 *
 * Times MPI_Init (each rank on its own monotonic clock, from just before the
 * call to just after it; the slowest rank is shown), then an MPI_Send/MPI_Recv
 * ping-pong between ranks 0 and 1 as the OSU latency test does: half the
 * round trip, averaged over ITERS iterations after WARMUP untimed ones, for
 * 8 B to 64 KiB. Whether btl-ofi's DSO is mapped into rank 0 (/proc/self/maps
 * names mca_btl_ofirma.so or mca_btl_ofi.so from a btl-ofi directory) is
 * printed too, so a comparison can tell "installed and loaded" from "absent".
 *
 * usage: mpirun -np 2 pt2pt_latency [-i ITERS] [-x WARMUP] [-m MAXBYTES] [-j]
 *   -i ITERS     timed iterations per size (default 10000; 1000 above 8 KiB)
 *   -x WARMUP    untimed iterations per size (default 100; 10 above 8 KiB)
 *   -m MAXBYTES  largest size (default 65536)
 *   -j           JSON lines: {"init_ms":...,"btl_ofi_mapped":...} then one per size
 * Exit: 0 done, 1 wrong data, 3 usage, 77 fewer than 2 ranks.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Is a btl-ofi component DSO mapped into this process? */
static int btl_ofi_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    if (!f)
        return -1;
    while (!found && fgets(line, sizeof line, f))
        if (strstr(line, "mca_btl_ofirma.so") ||
            (strstr(line, "btl-ofi") && strstr(line, "mca_btl_ofi.so")))
            found = 1;
    fclose(f);
    return found;
}

static void usage(void)
{
    fprintf(stderr, "usage: mpirun -np 2 pt2pt_latency [-i ITERS] [-x WARMUP] [-m MAXBYTES] [-j]\n"
                    "  MPI_Init time and MPI_Send/MPI_Recv ping-pong latency, 8 B to MAXBYTES\n"
                    "  (default 65536); no one-sided communication.\n");
}

int main(int argc, char **argv)
{
    int iters = 0, warmup = -1, maxbytes = 65536, json = 0, opt;
    while ((opt = getopt(argc, argv, "i:x:m:jh")) != -1) {
        switch (opt) {
        case 'i': iters = atoi(optarg); break;
        case 'x': warmup = atoi(optarg); break;
        case 'm': maxbytes = atoi(optarg); break;
        case 'j': json = 1; break;
        default: usage(); return 3; /* before MPI_Init: works outside mpirun too */
        }
    }
    if (iters < 0 || maxbytes < 8) {
        usage();
        return 3;
    }

    double t0 = mono_seconds();
    MPI_Init(&argc, &argv);
    double init_s = mono_seconds() - t0, init_max = 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(&init_s, &init_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "pt2pt_latency: needs 2 ranks\n");
        MPI_Finalize();
        return 77;
    }

    char *buf = malloc((size_t)maxbytes);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int mapped = btl_ofi_mapped(), bad = 0;
    if (rank == 0) {
        if (json)
            printf("{\"init_ms\": %.3f, \"btl_ofi_mapped\": %d, \"ranks\": %d}\n", init_max * 1e3,
                   mapped, size);
        else
            printf("# pt2pt_latency: MPI_Send/MPI_Recv ping-pong, ranks 0 and 1 of %d\n"
                   "# MPI_Init: %.3f ms (slowest rank)\n"
                   "# btl-ofi DSO mapped: %s\n"
                   "# %-10s %12s\n",
                   size, init_max * 1e3, mapped > 0 ? "yes" : mapped == 0 ? "no" : "unknown",
                   "Size", "Latency (us)");
        fflush(stdout);
    }

    for (int bytes = 8; bytes <= maxbytes; bytes *= 2) {
        int n = iters ? iters : (bytes > 8192 ? 1000 : 10000);
        int w = warmup >= 0 ? warmup : (bytes > 8192 ? 10 : 100);
        double start = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < n + w; i++) {
            if (i == w)
                start = MPI_Wtime();
            if (rank == 0) {
                memset(buf, (char)i, (size_t)bytes);
                MPI_Send(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (buf[0] != (char)(i + 1) || buf[bytes - 1] != (char)(i + 1))
                    bad = 1;
            } else if (rank == 1) {
                MPI_Recv(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (buf[0] != (char)i || buf[bytes - 1] != (char)i)
                    bad = 1;
                memset(buf, (char)(i + 1), (size_t)bytes);
                MPI_Send(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double us = n ? (MPI_Wtime() - start) * 1e6 / (2.0 * n) : 0;
        if (rank == 0) {
            if (json)
                printf("{\"bytes\": %d, \"latency_us\": %.3f, \"iters\": %d}\n", bytes, us, n);
            else
                printf("%-12d %12.2f\n", bytes, us);
            fflush(stdout);
        }
    }

    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anybad && rank == 0)
        fprintf(stderr, "pt2pt_latency: wrong data received\n");
    free(buf);
    MPI_Finalize();
    return anybad ? 1 : 0;
}
