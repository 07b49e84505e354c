/*
 * FI_MR_RAW on the initiator side: fi_mr_map_raw turns a peer's raw key into
 * a 64-bit key for data transfers, fi_mr_unmap_key releases it. Only keys
 * handed out here reach the target's table; any other is a violation.
 */
#include <stdlib.h>
#include <string.h>

#include "strictmr.h"

const struct strictmr_raw_map *strictmr_raw_map_find(struct strictmr_domain *dom, uint64_t key)
{
    for (size_t i = 0; i < dom->raw_map_count; i++) {
        if (dom->raw_maps[i].key == key) {
            return &dom->raw_maps[i];
        }
    }
    return NULL;
}

static int raw_map(struct strictmr_domain *dom, const struct fi_mr_map_raw *map)
{
    struct strictmr_raw_map *grown, *entry;

    if (!map->raw_key || !map->key || map->key_size == 0 || map->key_size > STRICTMR_MAX_KEY) {
        return -FI_EINVAL;
    }
    grown = realloc(dom->raw_maps, (dom->raw_map_count + 1) * sizeof(*grown));
    if (!grown) {
        return -FI_ENOMEM;
    }
    dom->raw_maps = grown;
    entry = &grown[dom->raw_map_count++];
    memset(entry, 0, sizeof(*entry));
    entry->key = dom->next_raw_key++;
    entry->base_addr = map->base_addr;
    entry->raw.size = map->key_size;
    memcpy(entry->raw.bytes, map->raw_key, map->key_size);
    *map->key = entry->key;
    return 0;
}

static int raw_unmap(struct strictmr_domain *dom, uint64_t key)
{
    struct strictmr_raw_map *entry = (struct strictmr_raw_map *)strictmr_raw_map_find(dom, key);

    if (!entry) {
        return -FI_ENOKEY;
    }
    *entry = dom->raw_maps[--dom->raw_map_count];
    return 0;
}

int strictmr_domain_raw_control(struct strictmr_domain *dom, int command, void *arg)
{
    int ret;

    if (!strictmr_mode(FI_MR_RAW)) {
        return -FI_ENOSYS;
    }
    pthread_mutex_lock(&dom->lock);
    ret = command == FI_MAP_RAW_MR ? raw_map(dom, arg) : raw_unmap(dom, *(uint64_t *)arg);
    pthread_mutex_unlock(&dom->lock);
    return ret;
}
