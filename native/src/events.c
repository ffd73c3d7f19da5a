/*
** events.c: event queues, the way hosts with their own event loop learn of
** last releases made on any thread without being called back on that thread.
*/
#include <string.h>

#include "internal.h"

#define MAX_QUEUES 4096u

typedef struct queue {
  gpures__lock lock;
  uint32_t id;       /* current id, 0 while closed */
  uint32_t head;     /* oldest event */
  uint32_t length;   /* events waiting */
  uint32_t capacity;
  uint32_t reserved; /* RELEASED events promised to live handles */
  gpures_event *ring;
} queue;

static queue queues[MAX_QUEUES];
static gpures__lock table_lock;
static uint16_t generations[MAX_QUEUES];

/* Ids carry a generation so a reopened index never receives an old queue's events. */
static queue *queue_of(uint32_t id) {
  uint32_t index = (id & 0xffffu) - 1u;
  if (id == 0 || index >= MAX_QUEUES) return NULL;
  return &queues[index];
}

int gpures_event_queue_open(uint32_t *out_queue) {
  gpures__op op = {"open event queue", 0};
  if (!out_queue) return gpures__fail(op, GPURES_E_NULL_POINTER, "outQueue", "outQueue is null");
  gpures__lock_acquire(&table_lock);
  for (uint32_t i = 0; i < MAX_QUEUES; i++) {
    queue *q = &queues[i];
    gpures__lock_acquire(&q->lock);
    if (q->id == 0 && q->ring == NULL) {
      generations[i] = (uint16_t)(generations[i] + 1u);
      if (generations[i] == 0) generations[i] = 1;
      q->id = ((uint32_t)generations[i] << 16) | (i + 1u);
      q->head = q->length = q->reserved = 0;
      *out_queue = q->id;
      gpures__lock_release(&q->lock);
      gpures__lock_release(&table_lock);
      return GPURES_OK;
    }
    gpures__lock_release(&q->lock);
  }
  gpures__lock_release(&table_lock);
  return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "all %u event queues are open", MAX_QUEUES);
}

int gpures_event_queue_close(uint32_t id) {
  queue *q = queue_of(id);
  gpures__op op = {"close event queue", 0};
  if (!q) return gpures__fail(op, GPURES_E_INVALID_VALUE, "queue", "queue %u does not exist", id);
  gpures__lock_acquire(&q->lock);
  if (q->id != id) {
    gpures__lock_release(&q->lock);
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u was closed", id);
  }
  gpures_event *ring = q->ring;
  q->id = 0;
  q->ring = NULL;
  q->head = q->length = q->capacity = q->reserved = 0;
  gpures__lock_release(&q->lock);
  gpures__free(ring);
  return GPURES_OK;
}

uint32_t gpures_event_queue_pending(uint32_t id) {
  queue *q = queue_of(id);
  if (!q) return 0;
  gpures__lock_acquire(&q->lock);
  uint32_t n = q->id == id ? q->length : 0;
  gpures__lock_release(&q->lock);
  return n;
}

int gpures_event_queue_poll(uint32_t id, gpures_event *events, uint32_t capacity,
                            uint32_t *out_count) {
  queue *q = queue_of(id);
  gpures__op op = {"poll event queue", 0};
  if (!out_count) return gpures__fail(op, GPURES_E_NULL_POINTER, "outCount", "outCount is null");
  *out_count = 0;
  if (!events && capacity) return gpures__fail(op, GPURES_E_NULL_POINTER, "events", "events is null");
  if (!q) return gpures__fail(op, GPURES_E_INVALID_VALUE, "queue", "queue %u does not exist", id);
  gpures__lock_acquire(&q->lock);
  if (q->id != id) {
    gpures__lock_release(&q->lock);
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u was closed", id);
  }
  uint32_t n = q->length < capacity ? q->length : capacity;
  for (uint32_t i = 0; i < n; i++) events[i] = q->ring[(q->head + i) % q->capacity];
  if (n) q->head = (q->head + n) % q->capacity;
  q->length -= n;
  gpures__lock_release(&q->lock);
  *out_count = n;
  return GPURES_OK;
}

/* Makes room for `need` events in total; called with the queue locked. */
static int grow(queue *q, uint32_t need) {
  if (need <= q->capacity) return GPURES_OK;
  uint32_t capacity = q->capacity ? q->capacity : 16;
  while (capacity < need) {
    if (capacity > UINT32_MAX / 2) return GPURES_E_OUT_OF_MEMORY;
    capacity *= 2;
  }
  gpures_event *ring = gpures__alloc((size_t)capacity * sizeof *ring);
  if (!ring) return GPURES_E_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < q->length; i++) ring[i] = q->ring[(q->head + i) % q->capacity];
  gpures__free(q->ring);
  q->ring = ring;
  q->head = 0;
  q->capacity = capacity;
  return GPURES_OK;
}

int gpures__event_reserve(uint32_t id) {
  queue *q = queue_of(id);
  if (!q) return GPURES_E_INVALID_VALUE;
  gpures__lock_acquire(&q->lock);
  int status = q->id != id ? GPURES_E_STALE : grow(q, q->length + q->reserved + 1);
  if (status == GPURES_OK) q->reserved++;
  gpures__lock_release(&q->lock);
  return status;
}

void gpures__event_unreserve(uint32_t id) {
  queue *q = queue_of(id);
  if (!q) return;
  gpures__lock_acquire(&q->lock);
  if (q->id == id && q->reserved) q->reserved--;
  gpures__lock_release(&q->lock);
}

int gpures__event_post(uint32_t id, uint64_t token, uint32_t type) {
  queue *q = queue_of(id);
  if (!q) return GPURES_OK;
  gpures__lock_acquire(&q->lock);
  int status = GPURES_OK;
  if (q->id == id) { /* a closed queue's isolate is gone: drop the event */
    bool released = type == GPURES_EVENT_RELEASED && q->reserved > 0;
    if (released) q->reserved--; /* the room was set aside at create */
    else status = grow(q, q->length + q->reserved + 1);
    if (status == GPURES_OK) {
      gpures_event *e = &q->ring[(q->head + q->length) % q->capacity];
      e->token = token;
      e->type = type;
      e->reserved = 0;
      q->length++;
    }
  }
  gpures__lock_release(&q->lock);
  return status;
}
