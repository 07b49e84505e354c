/*
 * ofi_rma_ref across "hosts": each of its two processes enters a network
 * namespace made by `ip netns add` (/run/netns/NAME) after the fork and
 * before any libfabric call, so the provider sees only that namespace's
 * interfaces while the socketpair bootstrap, made before the fork, still
 * joins the two processes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ofi_ref.h"

int ref_enter_netns(const char *name)
{
    char path[PATH_MAX];
    int fd, rc;

    if (NULL == name || '\0' == name[0]) {
        return 0;
    }
    if (NULL != strchr(name, '/') || 0 == strcmp(name, ".") || 0 == strcmp(name, "..")) {
        fprintf(stderr, "ofi_rma_ref: -N: '%s' is not a network namespace name\n", name);
        return -1;
    }
    snprintf(path, sizeof(path), "/run/netns/%s", name);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "ofi_rma_ref: -N: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    rc = setns(fd, CLONE_NEWNET);
    if (0 != rc) {
        fprintf(stderr, "ofi_rma_ref: -N: cannot enter network namespace %s: %s%s\n", name,
                strerror(errno), EPERM == errno ? " (needs root / CAP_SYS_ADMIN)" : "");
    }
    close(fd);
    return rc ? -1 : 0;
}
