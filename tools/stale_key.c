/*
 * Raw libfabric measurement, no MPI and no btl-ofi: what a provider does with
 * a remote access through a key whose registration is gone.
 *
 * Every probe runs in a fresh pair of processes (fork), so that what one probe
 * does to a connection (tcp;ofi_rxm tears it down on a bad key) cannot decide
 * the next one. In each pair the target registers region A, the origin writes
 * through A's key (control: it must complete and land), then:
 *   bogus_key    write to live A through a key never registered
 *   stale_write  the target closes A (fi_close); write through A's old key
 *   stale_read   likewise, a read through A's old key
 *   same_key     A closed, a new region B (another buffer) is registered with
 *                the SAME key A had (what an application reusing key values
 *                does; btl-ofi never does); write through the old key and A's
 *                address: does it land in A or B?
 *   fresh_key    A closed, the same memory is registered again as region B
 *                under a FRESH key (as btl-ofi's key counter does when a freed
 *                window's memory is registered again); write through the old
 *                key and address: does it change B?
 * A probe's wait for its completion is bounded (--wait-ms); after it the target
 * keeps progressing and watching its memory for --settle-ms. The parent kills a
 * pair that does not finish in time, so no run can hang.
 *
 * Configurations (one output row each):
 *   default  per provider: delivery-complete asked and not, FI_MR_PROV_KEY
 *            offered ("prov") and not ("app", key 0x5a1 requested)
 *   --btl    per provider: the configuration btl-ofi negotiates by default
 *            (its fi_getinfo hints; FI_MR_VIRT_ADDR|FI_MR_PROV_KEY|
 *            FI_MR_ALLOCATED offered; delivery-complete if granted, else
 *            read-after-write ordering; keys from a counter 1, 2, ... unless
 *            the provider grants FI_MR_PROV_KEY)
 *   -o       do not offer FI_MR_VIRT_ADDR (offsets, btl_ofi_mr_mode=none)
 *
 *   stale_key [-o] [--btl] [--json] [--wait-ms N] [--settle-ms N]
 *             [--probes LIST] [PROVIDER...]      default: shm sockets "tcp;ofi_rxm"
 *
 * Prints a table, or with --json one JSON object per row. Exit 0 when it ran
 * (it measures, it does not judge), 2 on usage or a pipe/fork failure.
 *
 * This file holds the options and main; stale_key_base.h says which of the other
 * stale_key_*.c files holds what. Build: cc tools/stale_key*.c -o stale_key -lfabric
 */
#include "stale_key_output.h"
#include "stale_key_pair.h"

#include <stdlib.h>
#include <string.h>

static int measure(const struct config *cfg, int selected)
{
    struct probe_run runs[NPROBES];

    memset(runs, 0, sizeof(runs));
    for (int p = 0; p < NPROBES; p++) {
        if ((selected & (1 << p)) && run_probe(cfg, p, &runs[p])) {
            return 2;
        }
    }
    print_row(cfg, selected, runs);
    return 0;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [-o] [--btl] [--json] [--wait-ms N] [--settle-ms N] [--probes LIST] "
            "[PROVIDER...]\n  LIST: comma list of bogus_key,stale_write,stale_read,same_key,"
            "fresh_key (default all)\n",
            argv0);
    return 2;
}

static int parse_probes(char *list, int *selected)
{
    *selected = 0;
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        int p = 0;
        while (p < NPROBES && strcmp(name, probe_names[p])) {
            p++;
        }
        if (NPROBES == p) {
            return 1;
        }
        *selected |= 1 << p;
    }
    return 0 == *selected;
}

static int parse_ms(const char *text, long *value)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (end == text || *end || v < 0 || v > 600000) {
        return 1;
    }
    *value = v;
    return 0;
}

/* The options before the providers: the index of the first provider, -1 on a bad option. */
static int parse_options(int argc, char **argv, int *btl, int *selected)
{
    int i = 1;

    for (; i < argc && '-' == argv[i][0]; i++) {
        if (0 == strcmp(argv[i], "-o")) {
            offer_virt_addr = 0;
        } else if (0 == strcmp(argv[i], "--btl")) {
            *btl = 1;
        } else if (0 == strcmp(argv[i], "--json")) {
            json = 1;
        } else if (0 == strcmp(argv[i], "--wait-ms") && i + 1 < argc) {
            if (parse_ms(argv[++i], &wait_ms)) {
                return -1;
            }
        } else if (0 == strcmp(argv[i], "--settle-ms") && i + 1 < argc) {
            if (parse_ms(argv[++i], &settle_ms)) {
                return -1;
            }
        } else if (0 == strcmp(argv[i], "--probes") && i + 1 < argc) {
            if (parse_probes(argv[++i], selected)) {
                return -1;
            }
        } else {
            return -1;
        }
    }
    return i;
}

static void print_header(int selected)
{
    printf("stale_key: libfabric %u.%u; 8-byte regions; every probe in a fresh process "
           "pair, completion waits bounded at %ld ms\n",
           FI_MAJOR(fi_version()), FI_MINOR(fi_version()), wait_ms);
    printf("%-12s %-4s %-9s %-8s %-11s|", "provider", "ask", "mr addr", "complete", "keys");
    for (int p = 0; p < NPROBES; p++) {
        if (selected & (1 << p)) {
            printf(" %-19s|", probe_names[p]);
        }
    }
    printf("\n");
}

static void print_legend(void)
{
    printf("ask: app = FI_MR_PROV_KEY not offered (key %#x requested), prov = offered, "
           "btl = btl-ofi's negotiation (keys 1, 2, ...)\n"
           "complete: delivery = FI_DELIVERY_COMPLETE granted, transmit = provider default\n"
           "cell: ok / err:X error completion / none: no completion within the wait /\n"
           "      post:X posting failed (post:EAGAIN: -FI_EAGAIN for the whole wait);\n"
           "      late X: a completion that came after the wait;\n"
           "      WROTE: the target's memory changed; -> where the same-key write landed;\n"
           "      ctl ...: the control write through the live key failed (probe void)\n",
           REQUESTED_KEY);
}

/* Every provider's rows: btl-ofi's configuration, or delivery asked and not by app and prov. */
static int measure_all(const char **provs, int n, int btl, int selected)
{
    for (int k = 0; k < n; k++) {
        if (btl) {
            struct config cfg = {provs[k], CFG_BTL, 1};
            if (measure(&cfg, selected)) {
                return 2;
            }
            continue;
        }
        for (int delivery = 1; delivery >= 0; delivery--) {
            for (int kind = CFG_APP; kind <= CFG_PROV; kind++) {
                struct config cfg = {provs[k], kind, delivery};
                if (measure(&cfg, selected)) {
                    return 2;
                }
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *defaults[] = {"shm", "sockets", "tcp;ofi_rxm"};
    int btl = 0, selected = (1 << NPROBES) - 1;
    int i = parse_options(argc, argv, &btl, &selected);

    if (i < 0) {
        return usage(argv[0]);
    }
    const char **provs = i < argc ? (const char **)argv + i : defaults;
    int n = i < argc ? argc - i : 3;

    if (!json) {
        print_header(selected);
    }
    if (measure_all(provs, n, btl, selected)) {
        return 2;
    }
    if (!json) {
        print_legend();
    }
    return 0;
}
