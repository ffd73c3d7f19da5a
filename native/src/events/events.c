/*
** events.c: event queues, the way hosts with their own event loop learn of
** last releases made on any thread without being called back on that thread.
**
** A queue id is generation << 16 | (index + 1). Generations never wrap: an
** index whose last generation (0xffff) is closed is retired, so no id is ever
** handed out twice and a stale id can never receive another host's events.
** Each index serves 65535 queues first; the table shrinks by what retires.
**
** One queue per JavaScript isolate, opened on the isolate's thread, which
** ends with the isolate: gpures_event_queue_close_on_thread_exit() closes it
** then, so isolates that come and go (Deno Workers) do not fill the table.
** A queue's close is also how the library learns that its isolate ended:
** every wait made on the queue's behalf (SyncPoint waits on the waiter
** thread, pool waits on a host's helper thread) ends then and lets go of
** what it holds, since nobody is left to hear of it.
*/
#include <string.h>

#include "../internal.h"

#define LAST_GENERATION UINT16_MAX

typedef struct queue {
  gpures__lock lock;
  uint32_t id;       /* current id, 0 while closed */
  uint32_t head;     /* oldest event */
  uint32_t length;   /* events waiting */
  uint32_t capacity;
  uint32_t reserved; /* RELEASED events promised to live handles */
  bool bound;        /* closed when the thread that bound it exits */
  gpures_event *ring;
} queue;

static queue queues[GPURES__MAX_QUEUES];
static gpures__lock table_lock;
static uint16_t generations[GPURES__MAX_QUEUES];
static _Atomic uint32_t retired; /* indexes whose last generation was closed */
#if !defined(_WIN32)
/* The table's lock before the queues': a queue's lock is taken under it (gpures_event_queue_open). */
__attribute__((constructor)) static void locks_across_fork(void) {
  gpures__locks_across_fork(&table_lock, 1, sizeof table_lock);
  gpures__locks_across_fork(&queues[0].lock, GPURES__MAX_QUEUES, sizeof queues[0]);
}
#endif

/* Ids carry a generation so a reopened index never receives an old queue's events. */
static queue *queue_of(uint32_t id) {
  uint32_t index = (id & 0xffffu) - 1u;
  if (id == 0 || index >= GPURES__MAX_QUEUES) return NULL;
  return &queues[index];
}

int gpures_event_queue_open(uint32_t *out_queue) {
  gpures__op op = {"open event queue", 0};
  if (!out_queue) return gpures__fail(op, GPURES_E_NULL_POINTER, "outQueue", "outQueue is null");
  gpures__lock_acquire(&table_lock);
  for (uint32_t i = 0; i < GPURES__MAX_QUEUES; i++) {
    queue *q = &queues[i];
    gpures__lock_acquire(&q->lock);
    if (q->id == 0 && q->ring == NULL && generations[i] != LAST_GENERATION) {
      generations[i]++;
      q->id = ((uint32_t)generations[i] << 16) | (i + 1u);
      q->head = q->length = q->reserved = 0;
      q->bound = false;
      *out_queue = q->id;
      gpures__lock_release(&q->lock);
      gpures__lock_release(&table_lock);
      return GPURES_OK;
    }
    gpures__lock_release(&q->lock);
  }
  gpures__lock_release(&table_lock);
  uint32_t gone = atomic_load_explicit(&retired, memory_order_relaxed);
  return gpures__fail_table_full(op, GPURES__MAX_QUEUES, gone, "event queues are open",
                                 "close queues that are done");
}

/* Closes a queue without touching the last error: thread exit may run this. */
static int close_queue(uint32_t id) {
  queue *q = queue_of(id);
  if (!q) return GPURES_E_INVALID_VALUE;
  gpures__lock_acquire(&q->lock);
  if (q->id != id) {
    gpures__lock_release(&q->lock);
    return GPURES_E_STALE;
  }
  gpures_event *ring = q->ring;
  q->id = 0;
  q->ring = NULL;
  q->head = q->length = q->capacity = q->reserved = 0;
  q->bound = false;
  gpures__lock_release(&q->lock);
  gpures__free(ring);
  if (id >> 16 == LAST_GENERATION) atomic_fetch_add_explicit(&retired, 1, memory_order_relaxed);
  gpures__watches_queue_ended(id);
  gpures__events_wake(id); /* a wait on it ends */
  gpures__sync_queue_ended(id);
  gpures__pool_queue_ended(id);
  return GPURES_OK;
}

int gpures_event_queue_close(uint32_t id) {
  gpures__op op = {"close event queue", 0};
  int status = close_queue(id);
  if (status == GPURES_E_INVALID_VALUE)
    return gpures__fail(op, status, "queue", "queue %u does not exist", id);
  if (status == GPURES_E_STALE) return gpures__fail(op, status, "queue", "queue %u was closed", id);
  return status;
}

/* ------------------------------------------------ closing at thread exit */

/* The queues a thread closes when it exits; the os layer keeps one per thread. */
typedef struct bound_list {
  uint32_t length;
  uint32_t capacity;
  uint32_t ids[];
} bound_list;

/* The os layer's thread-exit hook runs this on the exiting thread. */
static void close_bound(void *value) {
  bound_list *list = value;
  /* Ids closed by hand meanwhile are stale, and generations never repeat: a no-op. */
  for (uint32_t i = 0; i < list->length; i++) (void)close_queue(list->ids[i]);
  gpures__free(list);
}

/* Forgets queues closed by hand, so a thread that binds many keeps a short list. */
static void forget_closed(bound_list *list) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < list->length; i++) {
    queue *q = queue_of(list->ids[i]);
    gpures__lock_acquire(&q->lock);
    bool open = q->id == list->ids[i];
    gpures__lock_release(&q->lock);
    if (open) list->ids[kept++] = list->ids[i];
  }
  list->length = kept;
}

/* The calling thread's list, with room for one more id. */
static int thread_list(gpures__op op, bound_list **out) {
  bound_list *list = gpures__thread_exit_value();
  if (list) forget_closed(list);
  if (list && list->length < list->capacity) {
    *out = list;
    return GPURES_OK;
  }
  /* A copy, not realloc: the old list must stay the thread's if the new one cannot be set. */
  uint32_t capacity = list ? list->capacity * 2u : 4u;
  bound_list *grown = gpures__alloc(sizeof *grown + (size_t)capacity * sizeof grown->ids[0]);
  if (!grown) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory to remember the queue");
  grown->length = list ? list->length : 0;
  grown->capacity = capacity;
  if (list) memcpy(grown->ids, list->ids, (size_t)list->length * sizeof list->ids[0]);
  int err = gpures__thread_exit_value_set(grown, close_bound);
  if (err != 0) {
    gpures__free(grown);
    return gpures__fail(op, GPURES_E_OS_ERROR, "", "the thread-exit hook could not be set: %s (%s)",
                        gpures__errno_name(err), gpures__errno_meaning(err));
  }
  gpures__free(list);
  *out = grown;
  return GPURES_OK;
}

int gpures_event_queue_close_on_thread_exit(uint32_t id) {
  gpures__op op = {"close event queue on thread exit", 0};
  queue *q = queue_of(id);
  if (!q) return gpures__fail(op, GPURES_E_INVALID_VALUE, "queue", "queue %u does not exist", id);
  bound_list *list = NULL;
  int status = thread_list(op, &list);
  if (status != GPURES_OK) return status;
  gpures__lock_acquire(&q->lock);
  status = q->id != id ? GPURES_E_STALE : q->bound ? GPURES_E_INVALID_VALUE : GPURES_OK;
  if (status == GPURES_OK) q->bound = true;
  gpures__lock_release(&q->lock);
  if (status == GPURES_E_STALE)
    return gpures__fail(op, status, "queue", "queue %u was closed", id);
  if (status != GPURES_OK)
    return gpures__fail(op, status, "queue",
                        "queue %u already closes when the thread that bound it exits", id);
  list->ids[list->length++] = id;
  return GPURES_OK;
}

/* Whether `id` names an open queue, and then its events waiting (*pending); under its lock. */
static bool open_with_pending(uint32_t id, uint32_t *pending) {
  queue *q = queue_of(id);
  *pending = 0;
  if (!q) return false;
  gpures__lock_acquire(&q->lock);
  bool open = q->id == id;
  if (open) *pending = q->length;
  gpures__lock_release(&q->lock);
  return open;
}

bool gpures__event_queue_open(uint32_t id) {
  uint32_t pending;
  return open_with_pending(id, &pending);
}

uint32_t gpures_event_queue_pending(uint32_t id) {
  uint32_t pending;
  (void)open_with_pending(id, &pending);
  return pending;
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
  return gpures__event_post_status(id, token, type, 0);
}

int gpures__event_post_status(uint32_t id, uint64_t token, uint32_t type, int event_status) {
  queue *q = queue_of(id);
  if (!q) return GPURES_OK;
  gpures__lock_acquire(&q->lock);
  int status = GPURES_OK;
  bool queued = false;
  if (q->id == id) { /* a closed queue's isolate is gone: drop the event */
    /* RELEASED, SYNC_DONE and FD_READY had their room set aside (create, wait_async, watch). */
    bool released = (type == GPURES_EVENT_RELEASED || type == GPURES_EVENT_SYNC_DONE ||
                     type == GPURES_EVENT_FD_READY) && q->reserved > 0;
    if (released) q->reserved--; /* the room was set aside at create */
    else status = grow(q, q->length + q->reserved + 1);
    if (status == GPURES_OK) {
      gpures_event *e = &q->ring[(q->head + q->length) % q->capacity];
      e->token = token;
      e->type = type;
      e->status = (uint32_t)event_status;
      q->length++;
      queued = true;
    }
  }
  gpures__lock_release(&q->lock);
  if (queued) gpures__events_wake(id);
  return status;
}
