/*
 * What an address-vector entry costs a process, per provider (issue 28 item 3).
 *
 *   cc -O2 -o av_cost tools/av_cost.c -lfabric
 *   ./av_cost [PROVIDER [COUNT]]      (default "tcp;ofi_rxm", 100000)
 *
 * Opens an RDM endpoint of the provider as btl-ofi asks for one (RMA), an AV of
 * type FI_AV_TABLE, and prints the endpoint's address length (what btl-ofi's
 * modex carries besides its fixed header), then inserts COUNT distinct
 * addresses of the provider's format (IPv4 or IPv6 socket addresses with other
 * ports and hosts: nothing is connected, as with btl-ofi's add_procs, where a
 * connection is made only by the first operation to a peer) and prints the
 * resident memory that grew, per entry. Providers whose addresses are not
 * socket addresses (shm: node-local names) are refused: their peers are the
 * processes of one node. Exit 0, or 1 with the failing call.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (0 == strncmp(line, "VmRSS:", 6)) {
            kib = strtol(line + 6, NULL, 10);
        }
    }
    if (f) {
        fclose(f);
    }
    return kib;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_) {                                                                                 \
            fprintf(stderr, "av_cost: %s: %s\n", #call, fi_strerror(-rc_));                        \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    const char *prov = argc > 1 ? argv[1] : "tcp;ofi_rxm";
    long count = argc > 2 ? strtol(argv[2], NULL, 10) : 100000;
    struct fi_info *hints = fi_allocinfo(), *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    char name[256];
    size_t addrlen = sizeof(name);
    long before, after;
    fi_addr_t *out;

    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL;
    hints->fabric_attr->prov_name = strdup(prov);
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    if (FI_SOCKADDR_IN != info->addr_format && FI_SOCKADDR_IN6 != info->addr_format &&
        FI_SOCKADDR != info->addr_format) {
        fprintf(stderr, "av_cost: %s addresses are not socket addresses (format %u)\n", prov,
                info->addr_format);
        return 1;
    }
    av_attr.count = (size_t)count;
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    {
        struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
        struct fid_cq *cq;
        CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
        CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    }
    CHECK(fi_enable(ep));
    CHECK(fi_getname(&ep->fid, name, &addrlen));
    out = calloc((size_t)count, sizeof(*out));
    before = rss_kib();
    for (long i = 0; i < count; ++i) {
        char addr[sizeof(struct sockaddr_in6)];
        memcpy(addr, name, addrlen < sizeof(addr) ? addrlen : sizeof(addr));
        if (((struct sockaddr *)addr)->sa_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)addr;
            in->sin_port = htons((uint16_t)(20000 + i % 40000));
            in->sin_addr.s_addr = htonl((10u << 24) | (uint32_t)(i / 40000 + 1));
        } else {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
            in6->sin6_port = htons((uint16_t)(20000 + i % 40000));
            in6->sin6_addr.s6_addr[15] = (uint8_t)(i / 40000 + 1);
        }
        if (1 != fi_av_insert(av, addr, 1, &out[i], 0, NULL)) {
            fprintf(stderr, "av_cost: fi_av_insert %ld failed\n", i);
            return 1;
        }
    }
    after = rss_kib();
    printf("provider %s (libfabric %u.%u): address %zu bytes; %ld entries: %ld KiB resident, "
           "%.0f bytes per entry\n",
           info->fabric_attr->prov_name, FI_MAJOR(fi_version()), FI_MINOR(fi_version()), addrlen,
           count, after - before, (after - before) * 1024.0 / (double)count);
    return 0;
}
