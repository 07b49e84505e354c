/*
 * ofi_strictmr parameters: FI_OFI_STRICTMR_MR_MODE, _KEY_SIZE and _REPORT,
 * defined with fi_param_define so that fi_info -e lists them.
 */
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
    .nic = {.progress_us = -1, .reorder_window = 8},
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
    read_mode();
    read_key_size();
    if (fi_param_get_str(&strictmr_prov, "report", &strictmr_config.report_path)) {
        strictmr_config.report_path = NULL;
    }
    strictmr_engine_params();
}

bool strictmr_mode(uint64_t bit)
{
    return (strictmr_config.mr_mode & bit) != 0;
}
