/*
 * stale_key's output: a row per configuration, as a table line of short cells or as one
 * JSON object with every probe's record (see the legend main prints under the table).
 */
#include "stale_key_output.h"

#include <string.h>

static const char *addressing(uint64_t mr_mode)
{
    return (mr_mode & FI_MR_VIRT_ADDR) ? "virt_addr" : "offset";
}

static const char *completion_mode(uint64_t op_flags)
{
    return (op_flags & FI_DELIVERY_COMPLETE) ? "delivery" : "transmit";
}

static const char *key_mode(const struct config *cfg, uint64_t mr_mode)
{
    if (mr_mode & FI_MR_PROV_KEY) {
        return "provider";
    }
    return CFG_BTL == cfg->kind ? "btl_counter" : "requested";
}

static const char *landed(const struct result *t)
{
    static const char *const names[] = {"nowhere", "A", "B", "A and B"};
    return names[(t->changed_a ? 1 : 0) | (t->changed_b ? 2 : 0)];
}

static void json_str(const char *text)
{
    putchar('"');
    for (const char *c = text; *c; c++) {
        if ('"' == *c || '\\' == *c) {
            printf("\\%c", *c);
        } else if ((unsigned char)*c < 0x20) {
            printf("\\u%04x", *c);
        } else {
            putchar(*c);
        }
    }
    putchar('"');
}

static void json_outcome(const struct outcome *out)
{
    printf("{\"completion\":\"%s\",\"posted_rc\":%d,\"posted\":", out->completion, out->post_rc);
    if (out->tried) {
        json_str(out->post_rc ? fi_strerror(-out->post_rc) : "ok");
    } else {
        printf("null");
    }
    printf(",\"waited_ms\":%ld,\"error\":", out->waited_ms);
    if ('e' == out->completion[0]) {
        json_str(out->error);
        printf(",\"errno\":%d,\"prov_errno\":%d", out->err, out->prov_errno);
    } else {
        printf("null");
    }
    printf(",\"late\":");
    if (out->late[0]) {
        json_str(out->late);
    } else {
        printf("null");
    }
    putchar('}');
}

static void json_probe(int probe, const struct probe_run *pr)
{
    const struct result *t = &pr->t, *o = &pr->o;
    const char *setup = t->setup[0] ? t->setup : o->setup;

    printf("\"%s\":{\"status\":", probe_names[probe]);
    if (!pr->got_t || !pr->got_o || setup[0]) {
        json_str(pr->killed ? "killed: the pair did not finish in time"
                 : setup[0] ? "setup failed"
                            : "a side died");
        printf(",\"setup_error\":");
        json_str(setup);
        printf("}");
        return;
    }
    printf("\"%s\",\"control\":", pr->killed ? "ran (teardown killed)" : "ran");
    json_outcome(&o->control);
    printf(",\"control_landed\":%s,\"key_a\":%llu", t->control_landed ? "true" : "false",
           (unsigned long long)t->key_a);
    if (t->reg_b[0]) {
        printf(",\"register_b\":");
        json_str(t->reg_b);
        printf(",\"key_b\":%llu", (unsigned long long)t->key_b);
    }
    printf(",\"probe\":");
    json_outcome(&o->probe);
    if (P_STALE_READ == probe) {
        printf(",\"read_returned_a_data\":%s",
               'o' == o->probe.completion[0] && all_bytes(o->probe.data, 0xaa) ? "true" : "false");
    }
    printf(",\"target_memory_changed\":%s", t->changed_a || t->changed_b ? "true" : "false");
    if (P_SAME_KEY == probe) {
        printf(",\"landed\":\"%s\"", landed(t));
    }
    printf(",\"target_cq_errors\":%d}", t->cq_errors);
}

/* a short cell for the table */
static void cell(int probe, const struct probe_run *pr, int width)
{
    const struct result *t = &pr->t, *o = &pr->o;
    const struct outcome *out = &o->probe;
    char text[TAG_LEN * 2];

    if (!pr->got_t || !pr->got_o || t->setup[0] || o->setup[0]) {
        snprintf(text, sizeof(text), "%s", pr->killed ? "KILLED" : "did not run");
    } else if (!t->control_landed || 'o' != o->control.completion[0]) {
        snprintf(text, sizeof(text), "ctl %s%s", o->control.completion,
                 t->control_landed ? "" : ",LOST");
    } else if (t->reg_b[0] && 'o' != t->reg_b[0]) {
        snprintf(text, sizeof(text), "reg B %s", t->reg_b);
    } else {
        const char *how = out->completion;
        if ('e' == how[0]) {
            how = out->err == FI_EACCES      ? "err:EACCES"
                  : out->err == FI_ECANCELED ? "err:ECANCELED"
                  : out->err == FI_ENOTCONN  ? "err:ENOTCONN"
                                             : out->error;
        } else if (0 == strcmp(how, "not_posted")) {
            how = -FI_EAGAIN == out->post_rc ? "post:EAGAIN" : "post:error";
        }
        if (P_SAME_KEY == probe) {
            snprintf(text, sizeof(text), "%s -> %s", how, landed(t));
        } else {
            snprintf(
                text, sizeof(text), "%s%s%s", how, t->changed_a || t->changed_b ? " WROTE" : "",
                P_STALE_READ == probe && 'o' == out->completion[0] && all_bytes(out->data, 0xaa)
                    ? ",A data"
                    : "");
        }
        if (out->late[0]) { /* a completion after the wait ended */
            size_t used = strlen(text);
            snprintf(text + used, sizeof(text) - used, ",late %.20s", out->late);
        }
    }
    printf(" %-*.*s|", width, width, text);
}

void print_row(const struct config *cfg, int selected, const struct probe_run *runs)
{
    const struct result *first = NULL;
    int varied = 0;

    for (int p = 0; p < NPROBES; p++) {
        const struct result *t = &runs[p].t;
        if (!(selected & (1 << p)) || !runs[p].got_t || t->setup[0]) {
            continue;
        }
        if (first && (first->mr_mode != t->mr_mode || first->op_flags != t->op_flags)) {
            varied = 1;
        }
        first = first ? first : t;
    }
    if (json) {
        printf("{\"tool\":\"stale_key\",\"libfabric\":\"%u.%u\",\"provider\":",
               FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
        json_str(cfg->prov);
        printf(",\"config\":\"%s\",\"offered_virt_addr\":%s", cfg_names[cfg->kind],
               offer_virt_addr ? "true" : "false");
        if (CFG_BTL != cfg->kind) {
            printf(",\"asked_delivery\":%s", cfg->delivery ? "true" : "false");
        }
        if (first) {
            printf(",\"addressing\":\"%s\",\"completion_mode\":\"%s\",\"key_mode\":\"%s\","
                   "\"mr_mode\":%llu,\"op_flags\":%llu,\"msg_order\":%llu",
                   addressing(first->mr_mode), completion_mode(first->op_flags),
                   key_mode(cfg, first->mr_mode), (unsigned long long)first->mr_mode,
                   (unsigned long long)first->op_flags, (unsigned long long)first->msg_order);
        } else {
            printf(",\"addressing\":null,\"completion_mode\":null,\"key_mode\":null");
        }
        printf(",\"negotiation_varied\":%s,\"wait_ms\":%ld,\"settle_ms\":%ld,\"probes\":{",
               varied ? "true" : "false", wait_ms, settle_ms);
        for (int p = 0, n = 0; p < NPROBES; p++) {
            if (selected & (1 << p)) {
                printf("%s", n++ ? "," : "");
                json_probe(p, &runs[p]);
            }
        }
        printf("}}\n");
    } else {
        printf("%-12s %-4s %-9s %-8s %-11s|", cfg->prov, cfg_names[cfg->kind],
               first ? addressing(first->mr_mode) : "-",
               first ? completion_mode(first->op_flags) : "-",
               first ? key_mode(cfg, first->mr_mode) : "-");
        for (int p = 0; p < NPROBES; p++) {
            if (selected & (1 << p)) {
                cell(p, &runs[p], 19);
            }
        }
        printf("%s\n", varied ? " (negotiation varied between probes)" : "");
    }
    fflush(stdout);
}
