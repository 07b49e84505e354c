/*
 * btl-ofi: the component's messages to the user (see btl_ofi_report.h for
 * why they do not go through opal_show_help).
 */

#include "btl_ofi_report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btl_ofi.h"
#include "btl_ofi_compat.h"
#include "btl_ofi_help_text.h"

/* The frame Open MPI's show_help draws around a message. */
static const char mca_btl_ofi_dash_line[] =
    "--------------------------------------------------------------------------\n";

/* Hosts named in a "Processes:" field; the rest are counted. */
#define MCA_BTL_OFI_REPORT_HOSTS 4
/* Longest rank list in a "Processes:" field before it is cut short with "...". */
#define MCA_BTL_OFI_REPORT_RANKS_LEN 48

/** One message: a help-file topic and its arguments (sanitised copies). */
typedef struct mca_btl_ofi_message_t {
    const char *topic;
    char *args[MCA_BTL_OFI_REPORT_MAX_ARGS];
    int nargs;
} mca_btl_ofi_message_t;

/** This process's reason to decline, and the module that reports it. */
static struct {
    bool declined;
    bool shown;
    mca_btl_ofi_message_t reason;
    char *published; /**< "host\ncause" as put in the modex */
    mca_btl_base_module_t module;
} mca_btl_ofi_report;

const char *mca_btl_ofi_param_name(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "btl_%s_%s", MCA_BTL_OFI_COMPONENT_NAME, name);
    return buf;
}

/* Control characters in a value would garble the terminal and the modex record. */
static char *mca_btl_ofi_sanitized(const char *text)
{
    char *copy = strdup(text ? text : "");

    for (char *c = copy; c && *c; ++c) {
        if ((unsigned char)*c < 0x20 || 0x7f == (unsigned char)*c) {
            *c = '?';
        }
    }
    return copy;
}

static void mca_btl_ofi_message_fill(mca_btl_ofi_message_t *msg, const char *topic, va_list ap)
{
    const char *arg;

    msg->topic = topic;
    msg->nargs = 0;
    while (NULL != (arg = va_arg(ap, const char *)) && msg->nargs < MCA_BTL_OFI_REPORT_MAX_ARGS) {
        msg->args[msg->nargs++] = mca_btl_ofi_sanitized(arg);
    }
}

static void mca_btl_ofi_message_free(mca_btl_ofi_message_t *msg)
{
    for (int i = 0; i < msg->nargs; ++i) {
        free(msg->args[i]);
    }
    msg->nargs = 0;
}

/* One write() where possible: a pipe keeps writes up to PIPE_BUF whole. */
static void mca_btl_ofi_write_stderr(const char *text)
{
    size_t left = strlen(text);

    while (left > 0) {
        ssize_t n = write(STDERR_FILENO, text, left);
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        text += n;
        left -= (size_t)n;
    }
}

/* The text of a topic of help-mpi-btl-ofi.txt, or NULL. */
static const char *mca_btl_ofi_help_text(const char *topic)
{
    for (size_t i = 0; i < sizeof(mca_btl_ofi_help_topics) / sizeof(mca_btl_ofi_help_topics[0]);
         ++i) {
        if (0 == strcmp(topic, mca_btl_ofi_help_topics[i].topic)) {
            return mca_btl_ofi_help_topics[i].text;
        }
    }
    return NULL;
}

/*
 * The text between two dash lines, as Open MPI's show_help frames it, with
 * each %s replaced by the next of v[0..nv) and %% by %. The component renders
 * its messages itself: Open MPI 6 no longer reads the help files of
 * components built outside its tree (help_text.awk).
 */
static char *mca_btl_ofi_render(const char *text, const char *const *v, int nv)
{
    char *out = NULL;
    size_t len = 0;
    int next = 0;
    FILE *f = open_memstream(&out, &len);

    if (NULL == f) {
        return NULL;
    }
    fputs(mca_btl_ofi_dash_line, f);
    for (const char *c = text; *c; ++c) {
        if ('%' == c[0] && 's' == c[1]) {
            fputs(next < nv ? v[next] : "", f);
            ++next;
            ++c;
        } else if ('%' == c[0] && '%' == c[1]) {
            fputc('%', f);
            ++c;
        } else {
            fputc(*c, f);
        }
    }
    fputs(mca_btl_ofi_dash_line, f);
    if (0 != fclose(f)) {
        free(out);
        return NULL;
    }
    return out;
}

/* Render the topic with its arguments, then `where` as its last field, and write it. */
static void mca_btl_ofi_show(const mca_btl_ofi_message_t *msg, const char *where)
{
    const char *v[MCA_BTL_OFI_REPORT_MAX_ARGS + 1];
    const char *text = mca_btl_ofi_help_text(msg->topic);
    char *out = NULL;

    for (int i = 0; i <= MCA_BTL_OFI_REPORT_MAX_ARGS; ++i) {
        v[i] = i < msg->nargs ? msg->args[i] : (i == msg->nargs ? where : "");
    }
    if (NULL != text) {
        out = mca_btl_ofi_render(text, v, MCA_BTL_OFI_REPORT_MAX_ARGS + 1);
    } else if (0 > asprintf(&out, "btl-ofi: %s (%s; no such message)\n", msg->topic, where)) {
        out = NULL;
    }
    if (NULL != out) {
        mca_btl_ofi_write_stderr(out);
        free(out);
    }
}

static char *mca_btl_ofi_cause_key(void)
{
    char *key = NULL;

    if (0 > asprintf(&key, "btl.%s.declined", MCA_BTL_OFI_COMPONENT_NAME)) {
        return NULL;
    }
    return key;
}

/* "host\ntopic\narg\narg...": everything after the host is the cause. */
static char *mca_btl_ofi_record(const mca_btl_ofi_message_t *msg)
{
    size_t len = strlen(opal_process_info.nodename) + strlen(msg->topic) + 2;
    char *record;

    for (int i = 0; i < msg->nargs; ++i) {
        len += strlen(msg->args[i]) + 1;
    }
    record = malloc(len + 1);
    if (NULL == record) {
        return NULL;
    }
    strcpy(record, opal_process_info.nodename);
    strcat(strcat(record, "\n"), msg->topic);
    for (int i = 0; i < msg->nargs; ++i) {
        strcat(strcat(record, "\n"), msg->args[i]);
    }
    return record;
}

static const char *mca_btl_ofi_record_cause(const char *record)
{
    const char *nl = strchr(record, '\n');
    return nl ? nl + 1 : record;
}

/* Show this process's reason for itself alone. */
static void mca_btl_ofi_show_own(void)
{
    char where[256];

    snprintf(where, sizeof(where), "rank %u on %s", (unsigned)OPAL_PROC_MY_NAME.vpid,
             opal_process_info.nodename);
    mca_btl_ofi_show(&mca_btl_ofi_report.reason, where);
}

static bool mca_btl_ofi_decline_held;

void mca_btl_ofi_decline_hold(bool hold)
{
    mca_btl_ofi_decline_held = hold;
}

void mca_btl_ofi_decline(const char *topic, ...)
{
    va_list ap;
    char *key;
    int rc = OPAL_ERROR;

    if (mca_btl_ofi_decline_held) {
        opal_output_verbose(10, mca_btl_ofi_output,
                            MCA_BTL_OFI_LOG "node-local provider not used: %s", topic);
        return;
    }
    if (mca_btl_ofi_report.declined) {
        opal_output_verbose(10, mca_btl_ofi_output, MCA_BTL_OFI_LOG "also declining for: %s",
                            topic);
        return;
    }
    mca_btl_ofi_report.declined = true;
    mca_btl_ofi_report.shown = false;
    va_start(ap, topic);
    mca_btl_ofi_message_fill(&mca_btl_ofi_report.reason, topic, ap);
    va_end(ap);

    mca_btl_ofi_report.published = mca_btl_ofi_record(&mca_btl_ofi_report.reason);
    key = mca_btl_ofi_cause_key();
    if (NULL != key && NULL != mca_btl_ofi_report.published) {
        rc = mca_btl_ofi_compat_modex_send_string(key, mca_btl_ofi_report.published);
    }
    free(key);
    if (OPAL_SUCCESS != rc) {
        /* Nobody can gather it: show it now, for this process alone. */
        mca_btl_ofi_show_own();
        mca_btl_ofi_report.shown = true;
        return;
    }
    opal_output_verbose(
        10, mca_btl_ofi_output,
        MCA_BTL_OFI_LOG "declining (%s); the reason is shown once per job after the modex", topic);
}

void mca_btl_ofi_decline_fi_call(const char *provider, const char *call, int rc)
{
    char error[160];

    snprintf(error, sizeof(error), "%s (%d)", fi_strerror(rc < 0 ? -rc : rc), rc);
    mca_btl_ofi_decline("device-failed", provider, call, error, NULL);
}

void mca_btl_ofi_report_now(const char *topic, ...)
{
    mca_btl_ofi_message_t msg;
    char where[256];
    va_list ap;

    va_start(ap, topic);
    mca_btl_ofi_message_fill(&msg, topic, ap);
    va_end(ap);
    snprintf(where, sizeof(where), "rank %u on %s", (unsigned)OPAL_PROC_MY_NAME.vpid,
             opal_process_info.nodename);
    mca_btl_ofi_show(&msg, where);
    mca_btl_ofi_message_free(&msg);
}

/** Who else declined for the same cause: a rank list and a host list, growing. */
typedef struct mca_btl_ofi_tally_t {
    uint32_t count;
    char ranks[MCA_BTL_OFI_REPORT_RANKS_LEN + 8];
    bool ranks_cut;               /**< the list ended in "..." */
    uint32_t run_first, run_last; /**< the range of ranks not yet written */
    char *hosts[MCA_BTL_OFI_REPORT_HOSTS];
    int nhosts;
    uint32_t more_hosts;
} mca_btl_ofi_tally_t;

static void mca_btl_ofi_tally_flush_run(mca_btl_ofi_tally_t *t)
{
    size_t used = strlen(t->ranks);
    char run[32];

    if (t->ranks_cut) {
        return;
    }
    if (t->run_first == t->run_last) {
        snprintf(run, sizeof(run), "%s%u", used ? "," : "", (unsigned)t->run_first);
    } else {
        snprintf(run, sizeof(run), "%s%u-%u", used ? "," : "", (unsigned)t->run_first,
                 (unsigned)t->run_last);
    }
    if (used + strlen(run) > MCA_BTL_OFI_REPORT_RANKS_LEN) {
        strcat(t->ranks, ",...");
        t->ranks_cut = true;
    } else {
        strcat(t->ranks, run);
    }
}

static void mca_btl_ofi_tally_add(mca_btl_ofi_tally_t *t, uint32_t rank, const char *host,
                                  size_t host_len)
{
    bool known = false;

    if (0 < t->count && rank == t->run_last + 1) {
        t->run_last = rank;
    } else {
        if (0 < t->count) {
            mca_btl_ofi_tally_flush_run(t);
        }
        t->run_first = t->run_last = rank;
    }
    ++t->count;

    for (int i = 0; i < t->nhosts && !known; ++i) {
        known = strlen(t->hosts[i]) == host_len && 0 == strncmp(t->hosts[i], host, host_len);
    }
    if (known) {
        return;
    }
    if (t->nhosts < MCA_BTL_OFI_REPORT_HOSTS) {
        t->hosts[t->nhosts] = strndup(host, host_len);
        t->nhosts += NULL != t->hosts[t->nhosts];
    } else {
        ++t->more_hosts; /* approximate: hosts past the named ones are not deduplicated */
    }
}

/* "3 of 4 (ranks 0-2) on vm" */
static void mca_btl_ofi_tally_where(mca_btl_ofi_tally_t *t, uint32_t job_size, char *buf,
                                    size_t len)
{
    size_t used;

    mca_btl_ofi_tally_flush_run(t);
    used = (size_t)snprintf(buf, len, "%u of %u (%s %s) on ", (unsigned)t->count,
                            (unsigned)job_size, 1 == t->count ? "rank" : "ranks", t->ranks);
    for (int i = 0; i < t->nhosts && used < len; ++i) {
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", t->hosts[i]);
    }
    if (t->more_hosts && used < len) {
        snprintf(buf + used, len - used, " and other hosts");
    }
    for (int i = 0; i < t->nhosts; ++i) {
        free(t->hosts[i]);
    }
}

/* Whether process vpid declined for exactly our cause; then *record is its record
 * (its host first), which the caller frees. */
static bool mca_btl_ofi_same_cause(uint32_t vpid, const char *key, char **record)
{
    opal_process_name_t peer = OPAL_PROC_MY_NAME;

    peer.vpid = vpid;
    if (OPAL_SUCCESS != mca_btl_ofi_compat_modex_recv_string(&peer, key, record)) {
        return false;
    }
    if (0 == strcmp(mca_btl_ofi_record_cause(*record),
                    mca_btl_ofi_record_cause(mca_btl_ofi_report.published))) {
        return true;
    }
    free(*record);
    *record = NULL;
    return false;
}

/*
 * After the modex: if no lower rank declined for the same cause, show it,
 * counting every process that did. Otherwise that rank shows it.
 */
static void mca_btl_ofi_report_declines(void)
{
    const uint32_t me = OPAL_PROC_MY_NAME.vpid, job_size = mca_btl_ofi_compat_job_size();
    mca_btl_ofi_tally_t tally = {.count = 0};
    char *key = mca_btl_ofi_cause_key(), *record = NULL;
    char where[512];

    if (NULL == key || job_size <= me) {
        free(key);
        mca_btl_ofi_show_own();
        return;
    }
    for (uint32_t vpid = 0; vpid < me; ++vpid) {
        if (mca_btl_ofi_same_cause(vpid, key, &record)) {
            opal_output_verbose(10, mca_btl_ofi_output,
                                MCA_BTL_OFI_LOG "rank %u shows the reason this process declined",
                                (unsigned)vpid);
            free(record);
            free(key);
            return;
        }
    }
    mca_btl_ofi_tally_add(&tally, me, opal_process_info.nodename,
                          strlen(opal_process_info.nodename));
    for (uint32_t vpid = me + 1; vpid < job_size; ++vpid) {
        if (mca_btl_ofi_same_cause(vpid, key, &record)) {
            mca_btl_ofi_tally_add(&tally, vpid, record, strcspn(record, "\n"));
            free(record);
        }
    }
    free(key);
    mca_btl_ofi_tally_where(&tally, job_size, where, sizeof(where));
    mca_btl_ofi_show(&mca_btl_ofi_report.reason, where);
}

static int mca_btl_ofi_reporter_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                                          struct opal_proc_t **procs,
                                          struct mca_btl_base_endpoint_t **peers,
                                          struct opal_bitmap_t *reachable)
{
    (void)btl;
    (void)procs;
    (void)reachable; /* reaches nobody */
    for (size_t i = 0; i < nprocs; ++i) {
        peers[i] = NULL;
    }
    if (!mca_btl_ofi_report.shown) {
        mca_btl_ofi_report.shown = true;
        mca_btl_ofi_report_declines();
    }
    return OPAL_SUCCESS;
}

static int mca_btl_ofi_reporter_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                                          struct opal_proc_t **procs,
                                          struct mca_btl_base_endpoint_t **peers)
{
    (void)btl;
    (void)nprocs;
    (void)procs;
    (void)peers;
    return OPAL_SUCCESS;
}

static int mca_btl_ofi_reporter_finalize(struct mca_btl_base_module_t *btl)
{
    (void)btl;
    if (mca_btl_ofi_report.declined && !mca_btl_ofi_report.shown) {
        mca_btl_ofi_show_own(); /* add_procs never ran: nothing to gather */
    }
    mca_btl_ofi_message_free(&mca_btl_ofi_report.reason);
    free(mca_btl_ofi_report.published);
    memset(&mca_btl_ofi_report, 0, sizeof(mca_btl_ofi_report));
    return OPAL_SUCCESS;
}

mca_btl_base_module_t **mca_btl_ofi_reporter(mca_btl_base_component_t *component, int *num_btls)
{
    mca_btl_base_module_t **modules;

    *num_btls = 0;
    if (!mca_btl_ofi_report.declined) {
        return NULL;
    }
    modules = malloc(sizeof(*modules));
    if (NULL == modules) {
        mca_btl_ofi_reporter_finalize(&mca_btl_ofi_report.module);
        return NULL;
    }
    /* No flags, no latency claim, reaches nobody: nothing will send through it. */
    mca_btl_ofi_report.module = (mca_btl_base_module_t){
        .btl_component = component,
        .btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW,
        .btl_latency = UINT32_MAX,
        .btl_add_procs = mca_btl_ofi_reporter_add_procs,
        .btl_del_procs = mca_btl_ofi_reporter_del_procs,
        .btl_finalize = mca_btl_ofi_reporter_finalize,
    };
    modules[0] = &mca_btl_ofi_report.module;
    *num_btls = 1;
    return modules;
}
