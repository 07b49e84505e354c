/*
 * The rules ofi_strictmr enforces, as a table (mode bit, what it forbids,
 * the error a NIC would report), their counters and the JSON report.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "strictmr.h"

struct strictmr_rule_desc {
    const char *name;
    uint64_t mode; /* the FI_MR_* bit that brings the rule in; 0 = always */
    const char *forbids;
    int err;
};

static const struct strictmr_rule_desc rules[STRICTMR_RULE_COUNT] = {
    [STRICTMR_RULE_KEY_UNKNOWN] = {.name = "key_unknown",
                                   .forbids = "a remote key the target never issued",
                                   .err = FI_EKEYREJECTED},
    [STRICTMR_RULE_KEY_CLOSED] = {.name = "key_closed",
                                  .forbids = "a remote key whose MR is closed",
                                  .err = FI_EKEYREJECTED},
    [STRICTMR_RULE_KEY_WIDTH] = {.name = "key_width",
                                 .forbids = "a requested_key wider than mr_key_size",
                                 .err = FI_EKEYREJECTED},
    [STRICTMR_RULE_KEY_IN_USE] = {.name = "key_in_use",
                                  .forbids = "a requested_key that is already live",
                                  .err = FI_ENOKEY},
    [STRICTMR_RULE_RANGE] = {.name = "range",
                             .forbids = "a remote access outside the registered range",
                             .err = FI_EINVAL},
    [STRICTMR_RULE_REMOTE_ACCESS] = {.name = "remote_access",
                                     .forbids = "a remote access the MR's flags do not allow",
                                     .err = FI_EINVAL},
    [STRICTMR_RULE_TARGET_UNKNOWN] = {.name = "target_unknown",
                                      .forbids = "a target with no ofi_strictmr MR table",
                                      .err = FI_EKEYREJECTED},
    [STRICTMR_RULE_MR_UNBOUND] = {.name = "mr_unbound",
                                  .mode = FI_MR_ENDPOINT,
                                  .forbids = "an MR not bound to the endpoint it is used with",
                                  .err = FI_EKEYREJECTED},
    [STRICTMR_RULE_MR_DISABLED] = {.name = "mr_disabled",
                                   .mode = FI_MR_ENDPOINT,
                                   .forbids = "an MR used before fi_mr_enable",
                                   .err = FI_EKEYREJECTED},
    [STRICTMR_RULE_MR_BIND] = {.name = "mr_bind",
                               .mode = FI_MR_ENDPOINT,
                               .forbids = "fi_mr_bind to a non-endpoint or twice, fi_mr_enable "
                                          "before fi_mr_bind",
                               .err = FI_EINVAL},
    [STRICTMR_RULE_DESC_MISSING] = {.name = "desc_missing",
                                    .mode = FI_MR_LOCAL,
                                    .forbids = "a NULL desc for a local buffer",
                                    .err = FI_EINVAL},
    [STRICTMR_RULE_DESC_INVALID] = {.name = "desc_invalid",
                                    .mode = FI_MR_LOCAL,
                                    .forbids = "a desc that is not a live MR of this domain",
                                    .err = FI_EINVAL},
    [STRICTMR_RULE_DESC_RANGE] = {.name = "desc_range",
                                  .mode = FI_MR_LOCAL,
                                  .forbids = "a desc whose MR does not cover the local buffer",
                                  .err = FI_EINVAL},
    [STRICTMR_RULE_ALLOCATED] = {.name = "allocated",
                                 .mode = FI_MR_ALLOCATED,
                                 .forbids = "registering pages that are not mapped",
                                 .err = FI_EINVAL},
    [STRICTMR_RULE_RAW_UNMAPPED] = {.name = "raw_unmapped",
                                    .mode = FI_MR_RAW,
                                    .forbids = "a key that fi_mr_map_raw did not hand out",
                                    .err = FI_EKEYREJECTED},
};

static _Atomic uint64_t checked[STRICTMR_RULE_COUNT];
static _Atomic uint64_t violated[STRICTMR_RULE_COUNT];

static const char *const event_names[STRICTMR_EV_COUNT] = {
    [STRICTMR_EV_REORDERED] = "reordered",
    [STRICTMR_EV_COMPLETIONS_REORDERED] = "completions_reordered",
    [STRICTMR_EV_THREAD_OPS] = "thread_ops",
    [STRICTMR_EV_THREAD_COMPLETIONS] = "thread_completions",
    [STRICTMR_EV_TX_EAGAIN] = "tx_eagain",
    [STRICTMR_EV_RX_EAGAIN] = "rx_eagain",
    [STRICTMR_EV_CQ_FULL] = "cq_full",
    [STRICTMR_EV_OP_REFUSED] = "op_refused",
    [STRICTMR_EV_REG_CHARGED] = "reg_charged",
    [STRICTMR_EV_REG_CHARGED_US] = "reg_charged_us",
    [STRICTMR_EV_REG_REFUSED] = "reg_refused",
    [STRICTMR_EV_UNLOAD_STOPPED] = "unload_stopped",
};
static _Atomic uint64_t events[STRICTMR_EV_COUNT];

void strictmr_event(enum strictmr_event event, uint64_t n)
{
    atomic_fetch_add_explicit(&events[event], n, memory_order_relaxed);
}

static const char *strictmr_event_name(int event)
{
    return event >= 0 && event < STRICTMR_EV_COUNT ? event_names[event] : NULL;
}

int strictmr_rule_errno(enum strictmr_rule rule)
{
    return rules[rule].err;
}

const char *strictmr_rule_name(int rule)
{
    return rule >= 0 && rule < STRICTMR_RULE_COUNT ? rules[rule].name : NULL;
}

int strictmr_rule(enum strictmr_rule rule, bool violation, const char *fmt, ...)
{
    char detail[256];
    va_list ap;

    atomic_fetch_add_explicit(&checked[rule], 1, memory_order_relaxed);
    if (!violation) {
        return 0;
    }
    atomic_fetch_add_explicit(&violated[rule], 1, memory_order_relaxed);
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    FI_WARN(&strictmr_prov, FI_LOG_MR, "violation %s (%s): %s -> %s\n", rules[rule].name,
            rules[rule].forbids, detail, fi_strerror(rules[rule].err));
    return rules[rule].err;
}

void strictmr_stats_read(struct strictmr_stats *stats)
{
    for (int i = 0; i < STRICTMR_RULE_COUNT; i++) {
        stats->checked[i] = atomic_load_explicit(&checked[i], memory_order_relaxed);
        stats->violated[i] = atomic_load_explicit(&violated[i], memory_order_relaxed);
    }
    for (int i = 0; i < STRICTMR_EV_COUNT; i++) {
        stats->events[i] = atomic_load_explicit(&events[i], memory_order_relaxed);
    }
}

struct strictmr_stats_ops strictmr_stats_ops = {
    .size = sizeof(struct strictmr_stats_ops),
    .read = strictmr_stats_read,
    .rule_name = strictmr_rule_name,
    .event_name = strictmr_event_name,
};

static size_t json_counters(char *buf, size_t len, const char *label, const uint64_t *values,
                            int count, const char *(*name)(int))
{
    size_t used = (size_t)snprintf(buf, len, "\"%s\":{", label);

    for (int i = 0; i < count && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s\"%s\":%llu", i ? "," : "",
                                 name(i), (unsigned long long)values[i]);
    }
    if (used < len) {
        used += (size_t)snprintf(buf + used, len - used, "}");
    }
    return used < len ? used : len;
}

/* The profile and the NIC behaviours in effect, as "profile":...,"nic":{...}, */
static size_t json_behaviour(char *buf, size_t len)
{
    static const char *const atomics[] = {[STRICTMR_ATOMICS_ALL] = "all",
                                          [STRICTMR_ATOMICS_NIC] = "nic",
                                          [STRICTMR_ATOMICS_NONE] = "none"};
    const struct strictmr_behaviour *n = &strictmr_config.nic;
    char profile[64] = "null";
    int used;

    if (n->profile) {
        snprintf(profile, sizeof(profile), "\"%s\"", n->profile);
    }
    used = snprintf(
        buf, len,
        "\"profile\":%s,\"nic\":{\"reorder\":%d,\"reorder_window\":%u,\"progress_us\":%ld,"
        "\"tx_size\":%zu,\"rx_size\":%zu,\"cq_size\":%zu,\"delivery_complete\":%d,"
        "\"inject_size\":%ld,\"atomics\":\"%s\",\"max_rma_size\":%zu,\"write_only\":%d,"
        "\"reg_cost_us\":%u,\"reg_cost_page_ns\":%u,\"reg_limit\":%zu},",
        profile, n->reorder, n->reorder_window, n->progress_us, n->tx_size, n->rx_size, n->cq_size,
        !n->no_delivery_complete, n->inject_size, atomics[n->atomics], n->max_rma_size,
        n->write_only, n->reg_cost_us, n->reg_cost_page_ns, n->reg_limit);
    return used < 0 ? 0 : (size_t)used < len ? (size_t)used : len;
}

/* One line per call, appended with a single write so processes do not interleave. */
void strictmr_report_write(void)
{
    struct strictmr_stats s;
    char line[4096], mode[96];
    size_t used;
    int fd;

    if (!strictmr_config.report_path) {
        return;
    }
    strictmr_stats_read(&s);
    strictmr_mode_str(strictmr_config.mr_mode, mode, sizeof(mode));
    used = (size_t)snprintf(line, sizeof(line), "{\"pid\":%d,\"mode\":\"%s\",\"key_size\":%zu,",
                            (int)getpid(), mode, strictmr_config.key_size);
    used += json_behaviour(line + used, sizeof(line) - used);
    used += json_counters(line + used, sizeof(line) - used, "checked", s.checked,
                          STRICTMR_RULE_COUNT, strictmr_rule_name);
    used += (size_t)snprintf(line + used, sizeof(line) - used, ",");
    used += json_counters(line + used, sizeof(line) - used, "violations", s.violated,
                          STRICTMR_RULE_COUNT, strictmr_rule_name);
    used += (size_t)snprintf(line + used, sizeof(line) - used, ",");
    used += json_counters(line + used, sizeof(line) - used, "events", s.events,
                          STRICTMR_EV_COUNT, strictmr_event_name);
    used += (size_t)snprintf(line + used, sizeof(line) - used, "}\n");
    fd = open(strictmr_config.report_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || write(fd, line, used) != (ssize_t)used) {
        FI_WARN(&strictmr_prov, FI_LOG_CORE, "cannot append the report to %s\n",
                strictmr_config.report_path);
    }
    if (fd >= 0) {
        close(fd);
    }
}
