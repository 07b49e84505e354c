/*
 * ofi_strictmr parameters: FI_OFI_STRICTMR_MR_MODE, _KEY_SIZE and _REPORT,
 * the NIC behaviours (completion levels, atomics, size limits, write-only,
 * registration cost and limit), those of the NIC data path (reordering,
 * progress, queue sizes) and the profiles that set several at once, all
 * defined with fi_param_define so that fi_info -e lists them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

/* Like a verbs NIC: local descs, virtual addresses, real pages, provider keys. */
#define STRICTMR_DEFAULT_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define STRICTMR_DEFAULT_KEY_SIZE 4

struct strictmr_config strictmr_config = {
    .mr_mode = STRICTMR_DEFAULT_MODE,
    .key_size = STRICTMR_DEFAULT_KEY_SIZE,
    .valid = true,
    .nic = {.progress_us = -1, .reorder_window = 8, .inject_size = -1},
};

static const struct {
    const char *name;
    uint64_t bit;
} mode_names[] = {
    {.name = "local", .bit = FI_MR_LOCAL},         {.name = "virt_addr", .bit = FI_MR_VIRT_ADDR},
    {.name = "allocated", .bit = FI_MR_ALLOCATED}, {.name = "prov_key", .bit = FI_MR_PROV_KEY},
    {.name = "endpoint", .bit = FI_MR_ENDPOINT},   {.name = "raw", .bit = FI_MR_RAW},
};
#define MODE_NAME_COUNT (sizeof(mode_names) / sizeof(mode_names[0]))

void strictmr_mode_str(uint64_t mode, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < MODE_NAME_COUNT && used < len; i++) {
        if (mode & mode_names[i].bit) {
            used += snprintf(buf + used, len - used, "%s%s", used ? "," : "", mode_names[i].name);
        }
    }
    if (!used) {
        snprintf(buf, len, "none");
    }
}

static int mode_bit(const char *word, uint64_t *bit)
{
    for (size_t i = 0; i < MODE_NAME_COUNT; i++) {
        if (!strcmp(word, mode_names[i].name)) {
            *bit = mode_names[i].bit;
            return 0;
        }
    }
    return -FI_EINVAL;
}

/* "none" or a comma list of mode names, without empty items. */
static int parse_mode(const char *text, uint64_t *mode)
{
    char *copy, *word, *save = NULL;
    uint64_t result = 0, bit;
    int ret = 0;

    if (!strcmp(text, "none")) {
        *mode = 0;
        return 0;
    }
    copy = strdup(text);
    if (!copy) {
        return -FI_ENOMEM;
    }
    for (word = strtok_r(copy, ",", &save); word && !ret; word = strtok_r(NULL, ",", &save)) {
        ret = mode_bit(word, &bit);
        result |= bit;
    }
    if (!ret && (strstr(text, ",,") || text[0] == ',' || text[strlen(text) - 1] == ',')) {
        ret = -FI_EINVAL;
    }
    free(copy);
    if (!ret) {
        *mode = result;
    }
    return ret;
}

static void read_mode(void)
{
    char *text = NULL;

    if (fi_param_get_str(&strictmr_prov, "mr_mode", &text) || !text) {
        return;
    }
    if (parse_mode(text, &strictmr_config.mr_mode)) {
        FI_WARN(&strictmr_prov, FI_LOG_CORE,
                "FI_OFI_STRICTMR_MR_MODE=\"%s\" is not \"none\" or a comma list of local, "
                "virt_addr, allocated, prov_key, endpoint, raw: the provider offers nothing\n",
                text);
        strictmr_config.valid = false;
    }
}

static void read_key_size(void)
{
    int size;

    if (fi_param_get_int(&strictmr_prov, "key_size", &size)) {
        return;
    }
    if (size == 2 || size == 4 || size == 8 ||
        (size > 8 && size <= STRICTMR_MAX_KEY && (strictmr_config.mr_mode & FI_MR_RAW))) {
        strictmr_config.key_size = (size_t)size;
        return;
    }
    FI_WARN(&strictmr_prov, FI_LOG_CORE,
            "FI_OFI_STRICTMR_KEY_SIZE=%d: keys are 2, 4 or 8 bytes (up to %d with raw): the "
            "provider offers nothing\n",
            size, STRICTMR_MAX_KEY);
    strictmr_config.valid = false;
}

/* ---------------------------------------------------------------- NIC behaviours */
/*
 * A profile: the MR mode and key size of the strict test rows for that NIC, and
 * the behaviours its man page documents (strictmr/README.md has the table and
 * the sources). Explicit variables read afterwards override every field.
 */
struct strictmr_profile {
    const char *name;
    uint64_t mr_mode;
    size_t key_size;
    struct strictmr_behaviour nic;
};

static const struct strictmr_profile profiles[] = {
    {
        /* fi_verbs(7): RC is ordered, hardware progress, op flags up to FI_TRANSMIT_COMPLETE,
         * FI_VERBS_INLINE_SIZE 256, FI_VERBS_TX_SIZE / RX_SIZE 384; ibv_post_send(3): the only
         * atomics are 64-bit fetch-and-add and compare-and-swap. */
        .name = "verbs-like",
        .mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
        .key_size = 4,
        /* progress: the thread wakes every 20 us instead of spinning, so that ranks
         * sharing a core still get it */
        .nic = {.progress_us = 20,
                .reorder_window = 8,
                .tx_size = 384,
                .rx_size = 384,
                .no_delivery_complete = true,
                .inject_size = 256,
                .atomics = STRICTMR_ATOMICS_NIC,
                .reg_cost_us = 20,
                .reg_cost_page_ns = 250},
    },
    {
        /* fi_efa(7): SRD is unordered (only send-after-send is restored), manual progress,
         * FI_ATOMIC emulated by the provider, no maximum message size on RDM. */
        .name = "efa-like",
        .mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
        .key_size = 2,
        .nic = {.reorder = true,
                .reorder_window = 8,
                .progress_us = -1,
                .inject_size = -1,
                .atomics = STRICTMR_ATOMICS_ALL,
                .reg_cost_us = 20,
                .reg_cost_page_ns = 250},
    },
    {
        /* fi_cxi(7): FI_DELIVERY_COMPLETE supported, WAW/RAR/SAS ordered but not RAW/WAR
         * (adaptive routing; reordering here is all-or-nothing, so stricter), RMA and atomics
         * applied by the NIC at the target without its CPU (own progress; the provider's
         * FI_PROGRESS_MANUAL is about completions at the initiator), FI_CXI_DEFAULT_TX_SIZE /
         * RX_SIZE 1024, all atomics. */
        .name = "cxi-like",
        .mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
        .key_size = 8,
        .nic = {.reorder = true,
                .reorder_window = 8,
                .progress_us = 20,
                .tx_size = 1024,
                .rx_size = 1024,
                .inject_size = -1,
                .atomics = STRICTMR_ATOMICS_ALL,
                .reg_cost_us = 20,
                .reg_cost_page_ns = 250},
    },
    {
        /* fi_psm3(7): no MR requirements (64-bit user keys), manual progress performs best,
         * FI_PSM3_INJECT_SIZE 64, FI_ATOMIC offered. */
        .name = "psm3-like",
        .mr_mode = 0,
        .key_size = 8,
        .nic = {.reorder_window = 8,
                .progress_us = -1,
                .inject_size = 64,
                .atomics = STRICTMR_ATOMICS_ALL},
    },
};
#define PROFILE_COUNT (sizeof(profiles) / sizeof(profiles[0]))

static void invalid(const char *var, const char *text, const char *expected)
{
    FI_WARN(&strictmr_prov, FI_LOG_CORE,
            "FI_OFI_STRICTMR_%s=\"%s\": %s expected: the provider offers nothing\n", var, text,
            expected);
    strictmr_config.valid = false;
}

static void read_profile(void)
{
    char *text = NULL;

    if (fi_param_get_str(&strictmr_prov, "profile", &text) || !text) {
        return;
    }
    for (size_t i = 0; i < PROFILE_COUNT; i++) {
        if (!strcmp(text, profiles[i].name)) {
            strictmr_config.mr_mode = profiles[i].mr_mode;
            strictmr_config.key_size = profiles[i].key_size;
            strictmr_config.nic = profiles[i].nic;
            strictmr_config.nic.profile = profiles[i].name;
            return;
        }
    }
    invalid("PROFILE", text, "verbs-like, efa-like, cxi-like or psm3-like");
}

/* A variable (defined FI_PARAM_STRING) holding a decimal number in [min, max], nothing
 * before or after it: 1 read, 0 unset, -1 unreadable (warned; the provider then offers
 * nothing). Every numeric FI_OFI_STRICTMR_ variable is read here, so that "4x", "-1" or
 * "" is refused alike whichever file reads it. */
int strictmr_read_number(const char *name, const char *var, unsigned long long min,
                         unsigned long long max, unsigned long long *value)
{
    char *text = NULL, *end;
    unsigned long long v;

    if (fi_param_get_str(&strictmr_prov, name, &text) || !text) {
        return 0;
    }
    errno = 0;
    v = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-' || v < min || v > max) {
        char expected[96];

        snprintf(expected, sizeof(expected), "a number from %llu to %llu", min, max);
        invalid(var, text, expected);
        return -1;
    }
    *value = v;
    return 1;
}

static void read_atomics(void)
{
    static const char *const names[] = {[STRICTMR_ATOMICS_ALL] = "all",
                                        [STRICTMR_ATOMICS_NIC] = "nic",
                                        [STRICTMR_ATOMICS_NONE] = "none"};
    char *text = NULL;

    if (fi_param_get_str(&strictmr_prov, "atomics", &text) || !text) {
        return;
    }
    for (int i = STRICTMR_ATOMICS_ALL; i <= STRICTMR_ATOMICS_NONE; i++) {
        if (!strcmp(text, names[i])) {
            strictmr_config.nic.atomics = (enum strictmr_atomics)i;
            return;
        }
    }
    invalid("ATOMICS", text, "all, nic or none");
}

/* The behaviours of this file's variables, each overriding the profile's. */
static void read_behaviours(void)
{
    struct strictmr_behaviour *nic = &strictmr_config.nic;
    unsigned long long v;

    if (strictmr_read_number("delivery_complete", "DELIVERY_COMPLETE", 0, 1, &v) > 0) {
        nic->no_delivery_complete = !v;
    }
    if (strictmr_read_number("inject_size", "INJECT_SIZE", 0, LONG_MAX, &v) > 0) {
        nic->inject_size = (long)v;
    }
    nic->inject_zero = nic->inject_size == 0;
    read_atomics();
    if (strictmr_read_number("max_rma_size", "MAX_RMA_SIZE", 1, SIZE_MAX, &v) > 0) {
        nic->max_rma_size = (size_t)v;
    }
    if (strictmr_read_number("write_only", "WRITE_ONLY", 0, 1, &v) > 0) {
        nic->write_only = v;
    }
    if (strictmr_read_number("reg_cost_us", "REG_COST_US", 0, 10000000, &v) > 0) {
        nic->reg_cost_us = (unsigned)v;
    }
    if (strictmr_read_number("reg_cost_page_ns", "REG_COST_PAGE_NS", 0, 1000000, &v) > 0) {
        nic->reg_cost_page_ns = (unsigned)v;
    }
    if (strictmr_read_number("reg_limit", "REG_LIMIT", 0, SIZE_MAX, &v) > 0) {
        nic->reg_limit = (size_t)v;
    }
}

static void define_behaviours(void)
{
    fi_param_define(&strictmr_prov, "profile", FI_PARAM_STRING,
                    "behave like a NIC: verbs-like, efa-like, cxi-like or psm3-like (sets the MR "
                    "mode, key size and the behaviours below; explicit variables override it; "
                    "default: none)");
    fi_param_define(&strictmr_prov, "delivery_complete", FI_PARAM_STRING,
                    "0: transmit-complete only: no FI_DELIVERY_COMPLETE in infos, hints asking "
                    "it get none, posts carrying it fail with -FI_EOPNOTSUPP (default: 1)");
    fi_param_define(&strictmr_prov, "inject_size", FI_PARAM_STRING,
                    "tx inject_size at most this many bytes (0 allowed); larger injects fail "
                    "with -FI_EINVAL (default: the core's)");
    fi_param_define(&strictmr_prov, "atomics", FI_PARAM_STRING,
                    "atomics offered: all (the core's), nic (64-bit fetch-add and compare-swap "
                    "only, as verbs hardware) or none (no FI_ATOMIC) (default: all)");
    fi_param_define(&strictmr_prov, "max_rma_size", FI_PARAM_STRING,
                    "largest RMA in bytes; larger ones fail with -FI_EINVAL (libfabric >= 1.20: "
                    "fi_getopt FI_OPT_MAX_RMA_SIZE; older: ep_attr max_msg_size) (default: the "
                    "core's max_msg_size)");
    fi_param_define(&strictmr_prov, "write_only", FI_PARAM_STRING,
                    "1: FI_WRITE and FI_REMOTE_WRITE without FI_READ and FI_REMOTE_READ; reads "
                    "and fetching atomics fail with -FI_EOPNOTSUPP (default: 0)");
    fi_param_define(&strictmr_prov, "reg_cost_us", FI_PARAM_STRING,
                    "microseconds each fi_mr_reg waits, as a NIC pins and maps (default: 0)");
    fi_param_define(&strictmr_prov, "reg_cost_page_ns", FI_PARAM_STRING,
                    "and nanoseconds per 4 KiB page registered (default: 0)");
    fi_param_define(&strictmr_prov, "reg_limit", FI_PARAM_STRING,
                    "live registrations per domain; one more fails with -FI_ENOMEM (default: 0, "
                    "no limit)");
}

/* ---------------------------------------------------------------- NIC data path */
/* The variables of the engine's behaviours (strictmr_engine.c): reordering, own progress, tight
 * queues. Largest reorder window, progress delay and queue size a variable may ask for. */
#define WINDOW_MAX 1024
#define PROGRESS_US_MAX 10000000ULL
#define QUEUE_MAX (1ULL << 24)

/* FI_OFI_STRICTMR_PROGRESS_US: "none" (no thread, even if the profile has one) or a delay;
 * read apart from strictmr_read_number for its one word. true unless unreadable. */
static bool read_progress(long *out)
{
    char *text = NULL;
    unsigned long long v;

    if (!fi_param_get_str(&strictmr_prov, "progress_us", &text) && text && !strcmp(text, "none")) {
        *out = -1;
        return true;
    }
    switch (strictmr_read_number("progress_us", "PROGRESS_US", 0, PROGRESS_US_MAX, &v)) {
    case 1:
        *out = (long)v;
        return true;
    case 0:
        return true;
    default:
        return false;
    }
}

/* A size: 0 is the core's (or the caller's) own. true unless unreadable. */
static bool read_size(const char *name, const char *variable, size_t *out)
{
    unsigned long long v;
    int got = strictmr_read_number(name, variable, 0, QUEUE_MAX, &v);

    if (got > 0) {
        *out = (size_t)v;
    }
    return got >= 0;
}

/* Read after this file's behaviours, so that each overrides the profile's too. */
static void engine_params(void)
{
    struct strictmr_behaviour *nic = &strictmr_config.nic;
    unsigned long long v;
    bool ok = true;

    /* All strings, read by strictmr_read_number: "4x" is refused, never read as 4. */
    fi_param_define(&strictmr_prov, "reorder", FI_PARAM_STRING,
                    "1: hand RMA and atomics to the core, and their completions to the caller, "
                    "in a permuted order; 0: in order (default: 0)");
    fi_param_define(&strictmr_prov, "reorder_window", FI_PARAM_STRING,
                    "operations held per endpoint before they are released, 1..%d (default: 8)",
                    WINDOW_MAX);
    fi_param_define(&strictmr_prov, "progress_us", FI_PARAM_STRING,
                    "0..%llu: a progress thread per domain runs every so many microseconds; "
                    "none: no thread (default: none)",
                    PROGRESS_US_MAX);
    fi_param_define(&strictmr_prov, "tx_size", FI_PARAM_STRING,
                    "transmit operations outstanding per endpoint, 0..%llu (default 0: the "
                    "core's)",
                    QUEUE_MAX);
    fi_param_define(&strictmr_prov, "rx_size", FI_PARAM_STRING,
                    "receives posted per endpoint, 0..%llu (default 0: the core's)", QUEUE_MAX);
    fi_param_define(&strictmr_prov, "cq_size", FI_PARAM_STRING,
                    "entries a CQ holds, 0..%llu (default 0: the caller's size, or %d)", QUEUE_MAX,
                    STRICTMR_CQ_DEFAULT_ENTRIES);
    switch (strictmr_read_number("reorder", "REORDER", 0, 1, &v)) {
    case 1:
        nic->reorder = v != 0;
        break;
    case -1:
        ok = false;
        break;
    }
    switch (strictmr_read_number("reorder_window", "REORDER_WINDOW", 1, WINDOW_MAX, &v)) {
    case 1:
        nic->reorder_window = (unsigned)v;
        break;
    case -1:
        ok = false;
        break;
    }
    ok = read_progress(&nic->progress_us) && ok;
    ok = read_size("tx_size", "TX_SIZE", &nic->tx_size) && ok;
    ok = read_size("rx_size", "RX_SIZE", &nic->rx_size) && ok;
    ok = read_size("cq_size", "CQ_SIZE", &nic->cq_size) && ok;
    if (!ok) {
        strictmr_config.valid = false;
    }
}

bool strictmr_nic_has_atomics(void)
{
    /* under nic every atomic offered fetches, which a write-only NIC cannot */
    return strictmr_config.nic.atomics == STRICTMR_ATOMICS_ALL ||
           (strictmr_config.nic.atomics == STRICTMR_ATOMICS_NIC && !strictmr_config.nic.write_only);
}

void strictmr_params_init(void)
{
    fi_param_define(&strictmr_prov, "mr_mode", FI_PARAM_STRING,
                    "MR mode bits demanded of callers: \"none\" or a comma list of local, "
                    "virt_addr, allocated, prov_key, endpoint, raw "
                    "(default: local,virt_addr,allocated,prov_key)");
    fi_param_define(&strictmr_prov, "key_size", FI_PARAM_INT,
                    "MR key size in bytes: 2, 4 or 8; up to %d with raw (default: %d)",
                    STRICTMR_MAX_KEY, STRICTMR_DEFAULT_KEY_SIZE);
    fi_param_define(&strictmr_prov, "report", FI_PARAM_STRING,
                    "file to which each process appends one JSON line of check and violation "
                    "counters when it closes a fabric (default: none)");
    define_behaviours();
    read_profile(); /* first: every explicit variable below overrides it */
    read_mode();
    read_key_size();
    read_behaviours();
    if (fi_param_get_str(&strictmr_prov, "report", &strictmr_config.report_path)) {
        strictmr_config.report_path = NULL;
    }
    engine_params();
    strictmr_device_params();
}

bool strictmr_mode(uint64_t bit)
{
    return (strictmr_config.mr_mode & bit) != 0;
}
