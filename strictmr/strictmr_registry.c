/*
 * The host-wide registry through which an initiator checks a target's MRs.
 *
 * Each domain keeps its MR table in a POSIX shm segment
 * "/strictmr.<pid>.<domain id>". Each enabled endpoint publishes a small
 * segment "/strictmr.ep.<hash of its core address>" naming its pid, its table
 * and its endpoint id. An initiator hashes the address it finds for a fi_addr
 * in its AV, opens that entry, checks that it names the same address and a
 * live process, and maps the table read-only. Single host only: a peer on
 * another host is never found (STRICTMR_RULE_TARGET_UNKNOWN).
 *
 * Slots are rewritten under a sequence counter (odd while writing); readers
 * retry until they copy a slot with an even, unchanged counter.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strictmr.h"

#define TABLE_MAGIC 0x5354524943544d52ULL /* "STRICTMR" */
#define ENTRY_MAGIC 0x5354524943544550ULL /* "STRICTEP" */
#define ENTRY_NAME_MAX 256

struct strictmr_ep_entry {
    uint64_t magic;
    int32_t pid;
    uint32_t ep_id;
    char table_name[64];
    uint32_t namelen;
    uint8_t name[ENTRY_NAME_MAX];
};

static uint64_t fnv1a(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;

    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

/*
 * The segments this process made and has not unlinked. A program that exits with its fabric
 * open (an MPI whose finalize kept its BTLs: MPI_T left initialized) never closes them, and
 * names hold their files in /dev/shm after it: the provider's cleanup at unload unlinks
 * them (strictmr_segments_unlink_all). Mappings outlive the names, so nothing else changes.
 */
static pthread_mutex_t owned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strictmr_segment *owned;

static void owned_add(struct strictmr_segment *seg)
{
    pthread_mutex_lock(&owned_lock);
    seg->next_owned = owned;
    owned = seg;
    pthread_mutex_unlock(&owned_lock);
}

/* Whether seg was still on the list (else the cleanup at unload unlinked it). */
static bool owned_remove(struct strictmr_segment *seg)
{
    struct strictmr_segment **at;
    bool found;

    pthread_mutex_lock(&owned_lock);
    for (at = &owned; *at && *at != seg; at = &(*at)->next_owned) {
    }
    found = NULL != *at;
    if (found) {
        *at = seg->next_owned;
    }
    pthread_mutex_unlock(&owned_lock);
    return found;
}

unsigned strictmr_segments_unlink_all(void)
{
    unsigned n = 0;

    pthread_mutex_lock(&owned_lock);
    for (; owned; owned = owned->next_owned, n++) {
        shm_unlink(owned->name);
    }
    pthread_mutex_unlock(&owned_lock);
    return n;
}

static int segment_create(struct strictmr_segment *seg, size_t len)
{
    int fd = shm_open(seg->name, O_CREAT | O_RDWR | O_TRUNC, 0600);
    int ret = 0;

    if (fd < 0) {
        return -errno;
    }
    if (ftruncate(fd, (off_t)len)) {
        ret = -errno;
        goto unlink;
    }
    seg->addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (seg->addr == MAP_FAILED) {
        ret = -errno;
        goto unlink;
    }
    seg->len = len;
    close(fd);
    owned_add(seg);
    return 0;

unlink:
    close(fd);
    shm_unlink(seg->name);
    seg->addr = NULL;
    return ret;
}

static int segment_map_ro(struct strictmr_segment *seg, const char *name)
{
    struct stat st;
    int fd = shm_open(name, O_RDONLY, 0);
    int ret = 0;

    if (fd < 0) {
        return -errno;
    }
    if (fstat(fd, &st) || st.st_size == 0) {
        ret = -FI_ENOENT;
        goto out;
    }
    seg->addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (seg->addr == MAP_FAILED) {
        seg->addr = NULL;
        ret = -errno;
        goto out;
    }
    seg->len = (size_t)st.st_size;
    snprintf(seg->name, sizeof(seg->name), "%s", name);
out:
    close(fd);
    return ret;
}

static void segment_unmap(struct strictmr_segment *seg)
{
    if (seg->addr) {
        munmap(seg->addr, seg->len);
        seg->addr = NULL;
    }
}

void strictmr_segment_unlink(struct strictmr_segment *seg)
{
    if (seg->addr) {
        if (owned_remove(seg)) {
            shm_unlink(seg->name);
        }
        segment_unmap(seg);
    }
}

/* ---------------------------------------------------------------- tables */
int strictmr_table_create(struct strictmr_segment *seg, unsigned domain_id)
{
    size_t len =
        sizeof(struct strictmr_table) + STRICTMR_TABLE_SLOTS * sizeof(struct strictmr_slot);
    struct strictmr_table *t;
    int ret;

    snprintf(seg->name, sizeof(seg->name), "/strictmr.%d.%u", (int)getpid(), domain_id);
    ret = segment_create(seg, len);
    if (ret) {
        FI_WARN(&strictmr_prov, FI_LOG_DOMAIN, "shm segment %s: %s\n", seg->name, strerror(-ret));
        return ret;
    }
    t = seg->addr;
    t->pid = (int32_t)getpid();
    t->slots = STRICTMR_TABLE_SLOTS;
    t->mr_mode = strictmr_config.mr_mode;
    t->key_size = (uint32_t)strictmr_config.key_size;
    atomic_store(&t->alive, 1);
    atomic_thread_fence(memory_order_release);
    t->magic = TABLE_MAGIC;
    return 0;
}

/* Peers that still map the table see every key closed. */
void strictmr_table_destroy(struct strictmr_segment *seg)
{
    struct strictmr_table *t = seg->addr;

    if (!t) {
        return;
    }
    atomic_store(&t->alive, 0);
    for (uint32_t i = 0; i < t->slots; i++) {
        if (t->slot[i].state == STRICTMR_SLOT_LIVE) {
            strictmr_slot_begin_write(&t->slot[i]);
            t->slot[i].state = STRICTMR_SLOT_CLOSED;
            strictmr_slot_end_write(&t->slot[i]);
        }
    }
    strictmr_segment_unlink(seg);
}

bool strictmr_key_equal(const struct strictmr_slot *s, const struct strictmr_key *key)
{
    return s->key_size == key->size && !memcmp(s->key, key->bytes, key->size);
}

int strictmr_table_probe(const struct strictmr_table *t, const struct strictmr_key *key,
                         bool for_insert)
{
    uint32_t mask = t->slots - 1;
    uint32_t start = (uint32_t)fnv1a(key->bytes, key->size) & mask;
    int reusable = -1;

    for (uint32_t n = 0; n < t->slots; n++) {
        uint32_t i = (start + n) & mask;
        struct strictmr_slot s;

        strictmr_slot_snapshot(&t->slot[i], &s);
        if (s.state == STRICTMR_SLOT_EMPTY) {
            return for_insert && reusable >= 0 ? reusable : (int)i;
        }
        if (strictmr_key_equal(&s, key)) {
            return (int)i;
        }
        if (for_insert && s.state == STRICTMR_SLOT_CLOSED && reusable < 0) {
            reusable = (int)i;
        }
    }
    return reusable;
}

void strictmr_slot_snapshot(const struct strictmr_slot *s, struct strictmr_slot *out)
{
    unsigned before, after;

    do {
        before = atomic_load_explicit(&s->seq, memory_order_acquire);
        memcpy((char *)out + sizeof(out->seq), (const char *)s + sizeof(s->seq),
               sizeof(*s) - sizeof(s->seq));
        atomic_thread_fence(memory_order_acquire);
        after = atomic_load_explicit(&s->seq, memory_order_relaxed);
    } while ((before & 1) || before != after);
}

void strictmr_slot_begin_write(struct strictmr_slot *s)
{
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

void strictmr_slot_end_write(struct strictmr_slot *s)
{
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_release);
}

/* ---------------------------------------------------------------- endpoints */
static void entry_name(char *buf, size_t len, const void *name, size_t namelen)
{
    snprintf(buf, len, "/strictmr.ep.%016llx", (unsigned long long)fnv1a(name, namelen));
}

int strictmr_ep_publish(struct strictmr_segment *seg, const void *name, size_t namelen,
                        const char *table_name, uint32_t ep_id)
{
    struct strictmr_ep_entry *e;
    int ret;

    if (namelen > ENTRY_NAME_MAX) {
        return -FI_ETOOSMALL;
    }
    entry_name(seg->name, sizeof(seg->name), name, namelen);
    ret = segment_create(seg, sizeof(*e));
    if (ret) {
        return ret;
    }
    e = seg->addr;
    e->pid = (int32_t)getpid();
    e->ep_id = ep_id;
    snprintf(e->table_name, sizeof(e->table_name), "%s", table_name);
    e->namelen = (uint32_t)namelen;
    memcpy(e->name, name, namelen);
    atomic_thread_fence(memory_order_release);
    e->magic = ENTRY_MAGIC;
    return 0;
}

static bool process_alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

static bool entry_matches(const struct strictmr_ep_entry *e, const void *name, size_t namelen)
{
    return e->magic == ENTRY_MAGIC && e->namelen == namelen && !memcmp(e->name, name, namelen) &&
           process_alive(e->pid);
}

int strictmr_peer_resolve(struct strictmr_peer *peer, const void *name, size_t namelen)
{
    struct strictmr_segment entry = {0};
    const struct strictmr_ep_entry *e;
    const struct strictmr_table *t;
    char entry_path[64];
    int ret;

    entry_name(entry_path, sizeof(entry_path), name, namelen);
    ret = segment_map_ro(&entry, entry_path);
    if (ret) {
        return ret;
    }
    e = entry.addr;
    ret = entry.len >= sizeof(*e) && entry_matches(e, name, namelen) ? 0 : -FI_ENOENT;
    if (!ret) {
        ret = segment_map_ro(&peer->table, e->table_name);
    }
    if (!ret) {
        t = peer->table.addr;
        ret = peer->table.len >= sizeof(*t) && t->magic == TABLE_MAGIC ? 0 : -FI_ENOENT;
        if (ret) {
            segment_unmap(&peer->table);
        }
    }
    if (!ret) {
        peer->ep_id = e->ep_id;
        peer->resolved = true;
    }
    segment_unmap(&entry);
    return ret;
}

void strictmr_peer_release(struct strictmr_peer *peer)
{
    segment_unmap(&peer->table);
    peer->resolved = false;
}
