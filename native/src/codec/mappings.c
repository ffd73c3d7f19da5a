/*
** mappings.c: the CPU mappings a codec reads and writes frames through, one
** per buffer (gpures_buffer_id), made at a buffer's first frame and kept: a
** pool hands the same few slots round and round, and a fresh mapping of a 4K
** frame costs thousands of page faults before the first byte is decoded.
** Mappings nobody uses are let go, oldest first, once more than `limit` are
** kept (a pool that renews its buffers, a peer's retired ones).
*/
#include "codec.h"

#if defined(__linux__)
#include <string.h>

void gpures__map_cache_init(gpures__map_cache *c, uint32_t limit, uint32_t map_flags) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  c->limit = limit;
  c->map_flags = map_flags;
}

/* Unmaps the oldest unused mapping once the cache is over its limit. Called locked. */
static void trim(gpures__map_cache *c) {
  if (c->count < c->limit) return;
  for (uint32_t i = 0; i < c->count; i++) {
    if (c->entries[i].refs) continue;
    (void)gpures_unmap(c->entries[i].ptr);
    memmove(&c->entries[i], &c->entries[i + 1], (c->count - i - 1) * sizeof c->entries[0]);
    c->count--;
    return;
  }
}

int gpures__map_cache_get(gpures__op op, gpures__map_cache *c, gpures_handle frame,
                          gpures__mapped *out) {
  uint64_t id = 0;
  int status = gpures_buffer_id(frame, &id);
  if (status != GPURES_OK) return gpures__refail(op, status);
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; id && i < c->count; i++) {
    if (c->entries[i].buffer_id != id) continue;
    c->entries[i].refs++;
    *out = c->entries[i];
    pthread_mutex_unlock(&c->mu);
    return GPURES_OK;
  }
  trim(c);
  void *ptr = NULL;
  uint64_t size = 0;
  status = gpures_map(frame, 0, c->map_flags, &ptr, &size);
  if (status != GPURES_OK) {
    pthread_mutex_unlock(&c->mu);
    return gpures__refail(op, status);
  }
  gpures__mapped m = {id, ptr, size, 1};
  /* A buffer with no id (a handle not from a pool or a session) is mapped for this use only. */
  if (id && !gpures__grow((void **)&c->entries, &c->capacity, c->count, sizeof m, 8, 1024)) {
    (void)gpures_unmap(ptr);
    pthread_mutex_unlock(&c->mu);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a mapping's entry");
  }
  if (id) c->entries[c->count++] = m;
  *out = m;
  pthread_mutex_unlock(&c->mu);
  return GPURES_OK;
}

void gpures__map_cache_put(gpures__map_cache *c, const gpures__mapped *m) {
  if (!m->buffer_id) {
    (void)gpures_unmap(m->ptr);
    return;
  }
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < c->count; i++)
    if (c->entries[i].buffer_id == m->buffer_id && c->entries[i].refs) {
      c->entries[i].refs--;
      break;
    }
  pthread_mutex_unlock(&c->mu);
}

void gpures__map_cache_free(gpures__map_cache *c) {
  for (uint32_t i = 0; i < c->count; i++) (void)gpures_unmap(c->entries[i].ptr);
  gpures__free(c->entries);
  pthread_mutex_destroy(&c->mu);
  memset(c, 0, sizeof *c);
}

#endif /* __linux__ */
