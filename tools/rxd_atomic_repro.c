/*
 * Raw libfabric reproducer, no MPI and no btl-ofi: two processes (fork) on
 * one provider write N bytes to each other and then issue one 8-byte
 * fetch-and-add. Used to show that udp;ofi_rxd (libfabric 1.17) faults in
 * its atomic path, which is why btl-ofi declines it (see NOTES.txt).
 *
 *   rxd_atomic_repro PROVIDER BYTES     exit 0: all completed, else failed
 */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                            \
    do {                                                                                       \
        int rc_ = (int) (call);                                                                \
        if (rc_ < 0) {                                                                         \
            fprintf(stderr, "%s: %s\n", #call, fi_strerror(-rc_));                             \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

/* Post, progressing the CQ while the provider says -FI_EAGAIN (connection setup). */
#define POST(cq, call)                                                                         \
    do {                                                                                       \
        ssize_t prc_;                                                                          \
        struct fi_cq_entry pe_;                                                                \
        while ((prc_ = (call)) == -FI_EAGAIN) {                                                \
            (void) fi_cq_read(cq, &pe_, 0);                                                    \
        }                                                                                      \
        CHECK(prc_);                                                                           \
    } while (0)

static int wait_one(struct fid_cq *cq)
{
    struct fi_cq_entry entry;
    time_t deadline = time(NULL) + 10;
    ssize_t rc;

    while ((rc = fi_cq_read(cq, &entry, 1)) == -FI_EAGAIN) {
        if (time(NULL) > deadline) {
            fprintf(stderr, "timed out waiting for a completion\n");
            return 1;
        }
    }
    return rc == 1 ? 0 : 1;
}

static int run(const char *prov, size_t bytes, int me, int to_peer, int from_peer)
{
    struct fi_info *hints = fi_allocinfo(), *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *mr;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
    char addr[256], peer_addr[256];
    size_t addrlen = sizeof(addr);
    uint64_t peer_key, one = 1, old = 0, *region = calloc(bytes / 8 + 2, 8);
    char *src = calloc(bytes + 1, 1);
    fi_addr_t peer;

    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA | FI_ATOMIC;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
    hints->fabric_attr->prov_name = strdup(prov);
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(ep));
    CHECK(fi_mr_reg(domain, region, bytes + 16, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1 + me, 0,
                    &mr, NULL));
    CHECK(fi_getname(&ep->fid, addr, &addrlen));
    uint64_t key = fi_mr_key(mr), my_base = (uintptr_t) region, peer_base;
    /* exchange address, key and region base over the pipes */
    if (write(to_peer, addr, sizeof(addr)) != sizeof(addr) ||
        write(to_peer, &key, sizeof(key)) != sizeof(key) ||
        write(to_peer, &my_base, sizeof(my_base)) != sizeof(my_base) ||
        read(from_peer, peer_addr, sizeof(peer_addr)) != sizeof(peer_addr) ||
        read(from_peer, &peer_key, sizeof(peer_key)) != sizeof(peer_key) ||
        read(from_peer, &peer_base, sizeof(peer_base)) != sizeof(peer_base)) {
        return 1;
    }
    CHECK(fi_av_insert(av, peer_addr, 1, &peer, 0, NULL) == 1 ? 0 : -FI_EINVAL);
    /* without FI_MR_VIRT_ADDR remote addresses are offsets into the region */
    uint64_t target = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? peer_base : 0;
    if (bytes) {
        POST(cq, fi_write(ep, src, bytes, NULL, peer, target, peer_key, NULL));
        if (wait_one(cq)) return 1;
    }
    fprintf(stderr, "[%d] write of %zu bytes done\n", me, bytes);
    POST(cq, fi_fetch_atomic(ep, &one, 1, NULL, &old, NULL, peer, target + bytes, peer_key, FI_UINT64, FI_SUM,
                          NULL));
    if (wait_one(cq)) return 1;
    fprintf(stderr, "[%d] fetch-add done (old %lu)\n", me, (unsigned long) old);
    /* keep progressing so the peer's operations complete too */
    time_t until = time(NULL) + 1;
    struct fi_cq_entry e;
    while (time(NULL) < until) (void) fi_cq_read(cq, &e, 1);
    return 0;
}

int main(int argc, char **argv)
{
    int p2c[2], c2p[2], status = 0, rc;
    pid_t child;

    if (argc != 3 || pipe(p2c) || pipe(c2p)) {
        fprintf(stderr, "usage: %s PROVIDER BYTES\n", argv[0]);
        return 2;
    }
    child = fork();
    if (0 == child) {
        return run(argv[1], strtoul(argv[2], NULL, 0), 1, c2p[1], p2c[0]);
    }
    rc = run(argv[1], strtoul(argv[2], NULL, 0), 0, p2c[1], c2p[0]);
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "peer died with signal %d\n", WTERMSIG(status));
    }
    return rc || !WIFEXITED(status) || WEXITSTATUS(status);
}
