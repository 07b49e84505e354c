/*
 * A stale_key probe's pair of processes. The parent forks a target and an origin joined by
 * pipes, reads each one's report (struct result) and kills a pair that has not finished
 * within the bound. Each child asks fi_getinfo for the row's configuration, opens its
 * fabric, domain, AV, CQ and endpoint, swaps addresses with its peer, runs its part of the
 * probe (stale_key_probe.c) and reports before it tears down.
 */
#include "stale_key_pair.h"
#include "stale_key_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int get_info(const struct config *cfg, struct fi_info **info)
{
    struct fi_info *hints = fi_allocinfo();
    int rc;

    if (NULL == hints) {
        return -FI_ENOMEM;
    }
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup(cfg->prov);
    if (CFG_BTL == cfg->kind) { /* btl_ofi_discovery.c, mca_btl_ofi_getinfo and _select */
        hints->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
        hints->mode = FI_CONTEXT | FI_CONTEXT2;
        hints->domain_attr->mr_mode =
            (offer_virt_addr ? FI_MR_VIRT_ADDR : 0) | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
        hints->domain_attr->threading = FI_THREAD_DOMAIN;
        hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
        hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
        rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, info);
        if (-FI_ENODATA == rc) {
            hints->tx_attr->op_flags = 0;
            hints->tx_attr->msg_order = FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW;
            rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, info);
        }
    } else {
        hints->caps = FI_RMA;
        hints->domain_attr->mr_mode = (offer_virt_addr ? FI_MR_VIRT_ADDR : 0) | FI_MR_ALLOCATED |
                                      (CFG_PROV == cfg->kind ? FI_MR_PROV_KEY : 0);
        /* delivery: a write completes once the data is visible at the target;
         * otherwise the provider's default (transmit) completion */
        hints->tx_attr->op_flags = cfg->delivery ? FI_DELIVERY_COMPLETE : 0;
        rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, info);
    }
    fi_freeinfo(hints);
    return rc;
}

static int run(const struct config *cfg, int probe, int is_target, struct side *s, int report)
{
    struct fi_info *info = NULL;
    struct fid_fabric *fabric = NULL;
    struct fid_av *av = NULL;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
    char addr[ADDR_LEN] = {0}, peer_addr[ADDR_LEN];
    size_t addrlen = sizeof(addr);
    char bye;

    CHECK(get_info(cfg, &info));
    s->res->mr_mode = info->domain_attr->mr_mode;
    s->res->op_flags = info->tx_attr->op_flags;
    s->res->msg_order = info->tx_attr->msg_order;
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &s->domain, NULL));
    CHECK(fi_av_open(s->domain, &av_attr, &av, NULL));
    CHECK(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
    CHECK(fi_endpoint(s->domain, info, &s->ep, NULL));
    CHECK(fi_ep_bind(s->ep, &av->fid, 0));
    CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(s->ep));
    CHECK(fi_getname(&s->ep->fid, addr, &addrlen));
    CHECK(write(s->to_peer, addr, sizeof(addr)) != sizeof(addr) ? -FI_EIO : 0);
    CHECK(recv_peer(s, peer_addr, sizeof(peer_addr), peer_ms()) ? -FI_ETIMEDOUT : 0);
    CHECK(fi_av_insert(av, peer_addr, 1, &s->peer, 0, NULL) == 1 ? 0 : -FI_EINVAL);
    int rc = is_target ? target(s, cfg, probe, info) : origin(s, probe, info);
    /* keep progressing until the peer is done too */
    if (0 == rc && (tell_peer(s, 'x') || wait_peer(s, &bye))) {
        snprintf(s->res->setup, TAG_LEN, "the peer did not finish");
    }
    /* report before tearing down: the parent bounds the teardown */
    if (write(report, s->res, sizeof(*s->res)) != sizeof(*s->res)) {
        _exit(1);
    }
    fi_close(&s->ep->fid);
    fi_close(&s->cq->fid);
    fi_close(&av->fid);
    fi_close(&s->domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    return 0;
}

static pid_t spawn(const struct config *cfg, int probe, int is_target, int to_peer, int from_peer,
                   int report, const int *others, int nothers)
{
    pid_t pid = fork();

    if (0 == pid) {
        struct result res;
        struct side s = {.to_peer = to_peer, .from_peer = from_peer, .res = &res};

        memset(&res, 0, sizeof(res));
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int i = 0; i < nothers; i++) { /* so that a dead peer reads as EOF */
            close(others[i]);
        }
        fcntl(from_peer, F_SETFL, O_NONBLOCK);
        if (run(cfg, probe, is_target, &s, report)) { /* setup failed: report it */
            _exit(write(report, &res, sizeof(res)) == sizeof(res) ? 0 : 1);
        }
        _exit(0);
    }
    return pid;
}

/* One probe in a fresh process pair. Returns 0, or 2 on a pipe/fork failure. */
int run_probe(const struct config *cfg, int probe, struct probe_run *pr)
{
    int t2o[2], o2t[2], rep_t[2], rep_o[2];
    long deadline = now_ms() + 3 * wait_ms + settle_ms + 30000;
    size_t got[2] = {0, 0};

    memset(pr, 0, sizeof(*pr));
    if (pipe(t2o) || pipe(o2t) || pipe(rep_t) || pipe(rep_o)) {
        return 2;
    }
    int not_t[] = {t2o[0], o2t[1], rep_t[0], rep_o[0], rep_o[1]};
    int not_o[] = {o2t[0], t2o[1], rep_o[0], rep_t[0], rep_t[1]};
    fflush(stdout);
    pid_t pids[2] = {spawn(cfg, probe, 1, t2o[1], o2t[0], rep_t[1], not_t, 5),
                     spawn(cfg, probe, 0, o2t[1], t2o[0], rep_o[1], not_o, 5)};
    close(t2o[0]), close(t2o[1]), close(o2t[0]), close(o2t[1]), close(rep_t[1]), close(rep_o[1]);
    if (pids[0] < 0 || pids[1] < 0) {
        return 2;
    }
    struct pollfd pfd[2] = {{.fd = rep_t[0], .events = POLLIN}, {.fd = rep_o[0], .events = POLLIN}};
    char *dst[2] = {(char *)&pr->t, (char *)&pr->o};
    int open_fds = 2, exited = 0, status;
    while ((open_fds || exited < 2) && now_ms() < deadline) {
        if (open_fds && poll(pfd, 2, 50) > 0) {
            for (int i = 0; i < 2; i++) {
                if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                    continue;
                }
                ssize_t n = read(pfd[i].fd, dst[i] + got[i], sizeof(struct result) - got[i]);
                got[i] += n > 0 ? (size_t)n : 0;
                if (n <= 0 || got[i] == sizeof(struct result)) {
                    close(pfd[i].fd);
                    pfd[i].fd = -1;
                    open_fds--;
                }
            }
        } else if (!open_fds) {
            poll(NULL, 0, 20);
        }
        for (int i = 0; i < 2; i++) {
            if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                pids[i] = 0;
                exited++;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (pfd[i].fd >= 0) {
            close(pfd[i].fd);
        }
        if (pids[i] > 0) {
            pr->killed = 1;
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status, 0);
        }
    }
    pr->got_t = got[0] == sizeof(struct result);
    pr->got_o = got[1] == sizeof(struct result);
    return 0;
}
