/*
** fanout.c: a fan-out's life and its consumer list. The fan-out is shared by
** its owner, by every consumer's session (whose service-thread hooks call in)
** and by each call that waits, so it is reference counted: close() ends the
** consumers and drops the owner's reference, and the last one frees it.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fanout.h"

static gpures__op fanout_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

void gpures__fanout_ref(gpures_fanout *f) {
  atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void gpures__fanout_unref(gpures_fanout *f) {
  if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->room);
  gpures__free(f->consumers);
  gpures__free(f->notices);
  gpures__free(f);
}

void gpures__frames_add(frame_list *list, gpures_handle frame) {
  if (gpures__grow((void **)&list->items, &list->capacity, list->length, sizeof *list->items, 8,
                   1u << 20)) {
    list->items[list->length++] = frame;
    return;
  }
  (void)gpures_release(frame); /* no room to defer it: now, whatever lock is held */
}

void gpures__frames_release(frame_list *list) {
  for (uint32_t i = 0; i < list->length; i++) (void)gpures_release(list->items[i]);
  gpures__free(list->items);
  *list = (frame_list){NULL, 0, 0};
}

int gpures_fanout_create(const gpures_fanout_desc *desc, gpures_fanout **out_fanout) {
  gpures__op op = fanout_op("create a fan-out");
  if (!out_fanout) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFanout", "outFanout is null");
  *out_fanout = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_fanout_desc d;
  memset(&d, 0, sizeof d);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof d, &d);
  if (status != GPURES_OK) return status;
  if (!d.reserve) d.reserve = 1;
  if (!d.max_consumers) d.max_consumers = 64;
  if (d.slots == 0 || d.slots > GPURES_POOL_MAX_SLOTS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "slots", "slots is %u; a pool has 1 to %u",
                        d.slots, GPURES_POOL_MAX_SLOTS);
  if (d.reserve >= d.slots)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "reserve",
                        "reserve is %u of %u slots: no slot would be left for a consumer",
                        d.reserve, d.slots);
  if (d.max_consumers > GPURES_FANOUT_MAX_CONSUMERS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "maxConsumers",
                        "maxConsumers is %u; at most %u", d.max_consumers,
                        GPURES_FANOUT_MAX_CONSUMERS);
  if (d.device.kind > GPURES_DEVICE_OPENCL || d.device.reserved)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, d.device.reserved ? "device.reserved" : "device.kind",
                        "device names kind %u (reserved %u): a GPURES_DEVICE_* id, reserved 0",
                        d.device.kind, d.device.reserved);
  gpures_fanout *f = gpures__alloc(sizeof *f);
  if (!f) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a fan-out");
  memset(f, 0, sizeof *f);
  atomic_init(&f->refs, 1);
  pthread_mutex_init(&f->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
#if !defined(__APPLE__) /* macOS waits by CLOCK_REALTIME only: deliver.c's deadline says so */
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
#endif
  pthread_cond_init(&f->room, &attr);
  pthread_condattr_destroy(&attr);
  f->desc = d;
  f->stats.struct_size = sizeof f->stats;
  f->stats.slots = d.slots;
  *out_fanout = f;
  return GPURES_OK;
}

uint32_t gpures__fanout_bound(const gpures_fanout *f, const gpures_subscription *extra) {
  uint32_t deepest = extra ? extra->depth : 0, windows = extra ? extra->window : 0;
  for (uint32_t i = 0; i < f->num_consumers; i++) {
    const gpures_subscription *t = &f->consumers[i]->terms;
    if (t->depth > deepest) deepest = t->depth;
    windows += t->window;
  }
  return f->desc.reserve + deepest + windows;
}

consumer *gpures__fanout_find(const gpures_fanout *f, const gpures_session *s) {
  for (uint32_t i = 0; i < f->num_consumers; i++)
    if (f->consumers[i]->session == s) return f->consumers[i];
  return NULL;
}

static consumer *find_id(const gpures_fanout *f, uint64_t id) {
  for (uint32_t i = 0; i < f->num_consumers; i++)
    if (f->consumers[i]->id == id) return f->consumers[i];
  return NULL;
}

void gpures__fanout_remove(gpures_fanout *f, consumer *c, frame_list *drop) {
  for (uint32_t i = 0; i < f->num_consumers; i++) {
    if (f->consumers[i] != c) continue;
    memmove(&f->consumers[i], &f->consumers[i + 1], (f->num_consumers - i - 1) * sizeof c);
    f->num_consumers--;
    break;
  }
  for (; c->queued; c->queued--, c->head = (c->head + 1) % GPURES_FANOUT_MAX_DEPTH)
    gpures__frames_add(drop, c->queue[c->head].frame);
  f->stats.left++;
  f->stats.consumers = f->num_consumers;
  f->stats.bound = gpures__fanout_bound(f, NULL);
  gpures__fanout_wake(f); /* a BLOCK consumer that left holds no publish up any more */
}

void gpures__consumer_end(consumer *c) {
  gpures__session_set_fanout(c->session, NULL);
  (void)gpures_session_close(c->session); /* what it holds comes back, retired */
  gpures__free(c);
}

int gpures_fanout_leave(gpures_fanout *f, uint64_t id) {
  gpures__op op = fanout_op("take a consumer off a fan-out");
  if (!f) return gpures__fail(op, GPURES_E_NULL_POINTER, "fanout", "fanout is null");
  frame_list drop = {NULL, 0, 0};
  pthread_mutex_lock(&f->mu);
  consumer *c = find_id(f, id);
  if (c) gpures__fanout_remove(f, c, &drop);
  pthread_mutex_unlock(&f->mu);
  gpures__frames_release(&drop);
  if (!c)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "consumer", "consumer %llu is not joined",
                        (unsigned long long)id);
  gpures__consumer_end(c);
  return GPURES_OK;
}

int gpures_fanout_consumers(gpures_fanout *f, uint64_t *ids, uint32_t capacity, uint32_t *out_count) {
  gpures__op op = fanout_op("list the consumers of a fan-out");
  if (!f || !out_count || (capacity && !ids))
    return gpures__fail(op, GPURES_E_NULL_POINTER, !f ? "fanout" : !out_count ? "outCount" : "ids",
                        "a pointer is null");
  pthread_mutex_lock(&f->mu);
  uint32_t n = f->num_consumers;
  for (uint32_t i = 0; i < n && i < capacity; i++) ids[i] = f->consumers[i]->id;
  pthread_mutex_unlock(&f->mu);
  *out_count = n;
  if (n > capacity)
    return gpures__fail(op, GPURES_E_BUFFER_TOO_SMALL, "capacity",
                        "%u consumers are joined; capacity is %u", n, capacity);
  return GPURES_OK;
}

/* Copies `size` bytes of a stats struct out, struct_size saying how many. */
static int copy_out(gpures__op op, void *out, const void *in, uint32_t own) {
  uint32_t size;
  memcpy(&size, out, 4);
  int status = gpures__check_struct_size(op, "structSize", size);
  if (status != GPURES_OK) return status;
  uint32_t n = size < own ? size : own;
  memcpy(out, in, n);
  memcpy(out, &n, 4);
  return GPURES_OK;
}

int gpures_fanout_consumer_stats(gpures_fanout *f, uint64_t id, gpures_consumer_stats *out) {
  gpures__op op = fanout_op("read the stats of a fan-out's consumer");
  if (!f || !out)
    return gpures__fail(op, GPURES_E_NULL_POINTER, f ? "out" : "fanout", "%s is null", f ? "out" : "fanout");
  pthread_mutex_lock(&f->mu);
  consumer *c = find_id(f, id);
  gpures_consumer_stats copy;
  if (c) {
    copy = c->stats;
    gpures_session_stats ss = {sizeof ss, 0, 0, 0, 0, 0, 0, 0};
    (void)gpures_session_stats_get(c->session, &ss);
    copy.refused = ss.refused;
    copy.queued = c->queued;
    copy.in_flight = c->in_flight;
  }
  pthread_mutex_unlock(&f->mu);
  if (!c)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "consumer", "consumer %llu is not joined",
                        (unsigned long long)id);
  return copy_out(op, out, &copy, sizeof copy);
}

int gpures_fanout_stats_get(gpures_fanout *f, gpures_fanout_stats *out) {
  gpures__op op = fanout_op("read the stats of a fan-out");
  if (!f || !out)
    return gpures__fail(op, GPURES_E_NULL_POINTER, f ? "out" : "fanout", "%s is null", f ? "out" : "fanout");
  pthread_mutex_lock(&f->mu);
  gpures_fanout_stats copy = f->stats;
  pthread_mutex_unlock(&f->mu);
  return copy_out(op, out, &copy, sizeof copy);
}

/* The first consumer with format rows that takes none of producer row `row`'s (0: none). Locked. */
static uint64_t refuser(const gpures_fanout *f, const gpures_format_cap *row, uint32_t width,
                        uint32_t height) {
  for (uint32_t i = 0; i < f->num_consumers; i++) {
    const consumer *c = f->consumers[i];
    gpures_negotiated scratch = {sizeof scratch};
    if (c->terms.num_caps &&
        gpures_negotiate(row, 1, c->terms.caps, c->terms.num_caps, width, height, &scratch) != GPURES_OK)
      return c->id;
  }
  return 0;
}

int gpures_fanout_negotiate(gpures_fanout *f, const gpures_format_cap *producer, uint32_t num_producer,
                            uint32_t width, uint32_t height, gpures_negotiated *out) {
  gpures__op op = fanout_op("negotiate for a fan-out");
  if (!f || !producer || !out)
    return gpures__fail(op, GPURES_E_NULL_POINTER, !f ? "fanout" : !producer ? "producer" : "out",
                        "a pointer is null");
  uint64_t who = 0;
  for (uint32_t row = 0; row < num_producer; row++) {
    pthread_mutex_lock(&f->mu);
    who = refuser(f, &producer[row], width, height);
    pthread_mutex_unlock(&f->mu);
    if (who) continue;
    int status = gpures_negotiate(&producer[row], 1, &producer[row], 1, width, height, out);
    if (status != GPURES_OK) return gpures__refail(op, status);
    out->producer_index = row;
    out->consumer_index = 0;
    return GPURES_OK;
  }
  if (!num_producer) return gpures__fail(op, GPURES_E_INVALID_VALUE, "producer", "the producer offers no rows");
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "producer",
                      "no row of the producer's is taken by every consumer: consumer %llu takes "
                      "none of the last", (unsigned long long)who);
}

int gpures_fanout_close(gpures_fanout *f) {
  if (!f) return GPURES_OK;
  frame_list drop = {NULL, 0, 0};
  pthread_mutex_lock(&f->mu);
  bool first = !f->closed;
  f->closed = true;
  consumer **ended = f->consumers;
  uint32_t n = f->num_consumers;
  f->consumers = NULL;
  f->num_consumers = f->cap_consumers = 0;
  for (uint32_t i = 0; i < n; i++)
    for (consumer *c = ended[i]; c->queued; c->queued--, c->head = (c->head + 1) % GPURES_FANOUT_MAX_DEPTH)
      gpures__frames_add(&drop, c->queue[c->head].frame);
  f->stats.left += n;
  f->stats.consumers = 0;
  f->stats.bound = gpures__fanout_bound(f, NULL);
  gpures__fanout_wake(f);
  pthread_mutex_unlock(&f->mu);
  gpures__frames_release(&drop);
  for (uint32_t i = 0; i < n; i++) gpures__consumer_end(ended[i]);
  gpures__free(ended);
  if (first) gpures__fanout_unref(f); /* the owner's: waiting publishes hold their own */
  return GPURES_OK;
}
#endif
