/*
** session.c: a session's life: open, the bookkeeping each side keeps, close.
** A session is shared by its owner, the service thread (while it watches a
** sending session) and every frame received through it (whose last release
** sends the release back), so it is reference counted; the fd closes with
** the last reference, never under a poll() or a send that still uses it.
*/
#if !defined(_WIN32)
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session.h"

void gpures__session_ref(gpures_session *s) {
  atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void gpures__session_unref(gpures_session *s) {
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  close(s->fd);
  if (s->bell >= 0) close(s->bell);
  (void)gpures_release(s->fence); /* a fence whose frame never came */
  if (s->fanout) gpures__fanout_unref(s->fanout);
  pthread_mutex_destroy(&s->mu);
  gpures__free(s->known);
  gpures__free(s->flights);
  gpures__free(s->cache);
  gpures__free(s->pending);
  gpures__free(s);
}

void gpures__session_set_fanout(gpures_session *s, struct gpures_fanout *f) {
  if (f) gpures__fanout_ref(f);
  pthread_mutex_lock(&s->mu);
  struct gpures_fanout *old = s->fanout;
  s->fanout = f;
  pthread_mutex_unlock(&s->mu);
  if (old) gpures__fanout_unref(old);
}

struct gpures_fanout *gpures__session_fanout(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  struct gpures_fanout *f = s->fanout;
  if (f) gpures__fanout_ref(f);
  pthread_mutex_unlock(&s->mu);
  return f;
}

static gpures__op session_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

void gpures__session_refused(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  s->stats.refused++;
  pthread_mutex_unlock(&s->mu);
}

gpures__wire_header gpures__session_header(uint32_t type, uint64_t buffer, uint64_t serial) {
  gpures__wire_header h;
  memset(&h, 0, sizeof h);
  h.magic = GPURES__WIRE_MAGIC;
  h.abi = gpures_abi_version();
  h.header_size = sizeof h;
  h.type = type;
  h.buffer = buffer;
  h.serial = serial;
  return h;
}

/* A notice to the peer (RELEASE, KEEP, FORGET), without waiting: false when the socket is full. */
bool gpures__session_notice(gpures_session *s, uint32_t type, uint64_t buffer, uint64_t serial) {
  gpures__wire_header h = gpures__session_header(type, buffer, serial);
#if defined(MSG_NOSIGNAL)
  bool sent = send(s->fd, &h, sizeof h, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof h;
#else
  bool sent = send(s->fd, &h, sizeof h, MSG_DONTWAIT) == (ssize_t)sizeof h;
#endif
  if (sent) gpures__session_ring(s); /* a FORGET: a receiver idle on the doorbell lets go now */
  return sent;
}

bool gpures__session_notify(gpures_session *s, uint32_t type, uint64_t buffer, uint64_t serial,
                            bool *queued) {
  gpures__session_flush(s); /* notices keep their order */
  if (!s->num_pending && gpures__session_notice(s, type, buffer, serial)) return true;
  if (!gpures__grow((void **)&s->pending, &s->cap_pending, s->num_pending, sizeof *s->pending,
                    SESSION_FIRST_ROOM, SESSION_MAX_PENDING))
    return false;
  s->pending[s->num_pending++] = (pending_notice){type, buffer, serial};
  *queued = true;
  return true;
}

void gpures__session_flush(gpures_session *s) {
  uint32_t sent = 0;
  while (sent < s->num_pending && !s->closed &&
         gpures__session_notice(s, s->pending[sent].type, s->pending[sent].buffer,
                                s->pending[sent].serial))
    sent++;
  if (!sent) return; /* also: pending may be NULL, which memmove must not get */
  memmove(s->pending, s->pending + sent, (s->num_pending - sent) * sizeof *s->pending);
  s->num_pending -= sent;
}

int gpures_session_open(int fd, uint32_t flags, gpures_session **out_session) {
  gpures__op op = session_op("open a session on");
  if (!out_session) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSession", "outSession is null");
  *out_session = NULL;
  if (flags != GPURES_SESSION_SEND && flags != GPURES_SESSION_RECEIVE)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags",
                        "flags is 0x%x; a session either sends (GPURES_SESSION_SEND) or receives "
                        "(GPURES_SESSION_RECEIVE)", flags);
  int type = 0;
  socklen_t size = sizeof type;
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_SEQPACKET)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  gpures_session *s = gpures__alloc(sizeof *s);
  if (!s) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a session");
  memset(s, 0, sizeof *s);
  atomic_init(&s->refs, 1);
  s->fd = fd;
  s->bell = -1;
  s->role = flags;
  s->stats.struct_size = sizeof s->stats;
  pthread_mutex_init(&s->mu, NULL);
  if (flags == GPURES_SESSION_SEND) {
    int status = gpures__service_watch(op, s);
    if (status != GPURES_OK) {
      s->fd = -1; /* the fd stays the caller's when open fails */
      gpures__session_unref(s);
      return status;
    }
  }
  *out_session = s;
  return GPURES_OK;
}

bool gpures__session_take_flight(gpures_session *s, uint64_t buffer, uint64_t serial,
                                 gpures_handle *out_frame) {
  for (uint32_t i = 0; i < s->num_flights; i++) {
    in_flight *f = &s->flights[i];
    if (f->serial != serial || f->buffer != buffer) continue;
    *out_frame = f->frame;
    s->flights[i] = s->flights[--s->num_flights];
    s->stats.in_flight--;
    s->stats.returned++;
    return true;
  }
  return false;
}

void gpures__session_drop_flights(gpures_session *s, bool retire) {
  pthread_mutex_lock(&s->mu);
  in_flight *flights = s->flights;
  uint32_t n = s->num_flights;
  s->flights = NULL, s->num_flights = s->cap_flights = 0;
  s->num_known = 0; /* a new peer would know none of them */
  s->stats.in_flight = 0;
  pthread_mutex_unlock(&s->mu);
  for (uint32_t i = 0; i < n; i++) { /* outside the lock: a release may bring a slot home */
    if (retire) (void)gpures__frame_retire(flights[i].frame);
    (void)gpures_release(flights[i].frame);
  }
  gpures__free(flights);
}

static void drop_cache(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  cached_buffer **cache = s->cache;
  uint32_t n = s->num_cache;
  s->cache = NULL, s->num_cache = s->cap_cache = 0;
  s->stats.buffers = 0;
  pthread_mutex_unlock(&s->mu);
  for (uint32_t i = 0; i < n; i++) {
    if (atomic_fetch_sub_explicit(&cache[i]->refs, 1, memory_order_acq_rel) != 1) continue;
    (void)gpures_release(cache[i]->owner);
    gpures__free(cache[i]);
  }
  gpures__free(cache);
}

int gpures_session_shutdown(gpures_session *s) {
  if (!s) return GPURES_OK;
  pthread_mutex_lock(&s->mu);
  bool first = !s->closed;
  s->closed = true;
  int bell = gpures__session_take_bell(s); /* closed now: a receive waiting on it hears the end */
  pthread_mutex_unlock(&s->mu);
  if (bell >= 0) gpures__fd_close(bell);
  if (!first) return GPURES_OK;
  /*
  ** Out of the service thread's hands before the shutdown: it would read the
  ** end the shutdown makes as the peer's, and let the flights go unretired. A
  ** receiving session is watched too while its releases wait for room.
  */
  gpures__service_forget(s);
  if (s->role == GPURES_SESSION_RECEIVE) gpures__session_keep_held(s);
  (void)shutdown(s->fd, SHUT_RDWR); /* the peer sees the end now, not when the last frame goes */
  if (s->role == GPURES_SESSION_SEND) {
    /* The peer may still hold these buffers: their slots must never be handed out again. */
    gpures__session_drop_flights(s, true);
  } else {
    drop_cache(s);
  }
  return GPURES_OK;
}

int gpures_session_close(gpures_session *s) {
  if (!s) return GPURES_OK;
  (void)gpures_session_shutdown(s);
  gpures__session_unref(s);
  return GPURES_OK;
}

int gpures_session_fd(gpures_session *s) { return s ? s->fd : -1; }

int gpures_session_stats_get(gpures_session *s, gpures_session_stats *out) {
  gpures__op op = session_op("read the stats of");
  if (!s || !out)
    return gpures__fail(op, GPURES_E_NULL_POINTER, s ? "out" : "session", "%s is null", s ? "out" : "session");
  uint32_t size = out->struct_size;
  int status = gpures__check_struct_size(op, "structSize", size);
  if (status != GPURES_OK) return status;
  pthread_mutex_lock(&s->mu);
  gpures_session_stats copy = s->stats;
  copy.buffers = s->role == GPURES_SESSION_SEND ? s->num_known : s->num_cache;
  pthread_mutex_unlock(&s->mu);
  uint32_t n = size < sizeof copy ? size : (uint32_t)sizeof copy;
  copy.struct_size = n;
  memcpy(out, &copy, n);
  return GPURES_OK;
}

int gpures_session_forgotten(gpures_session *s, uint64_t *ids, uint32_t capacity,
                             uint32_t *out_count) {
  gpures__op op = session_op("read the forgotten buffers of");
  if (!s || !out_count || (capacity && !ids))
    return gpures__fail(op, GPURES_E_NULL_POINTER, !s ? "session" : !out_count ? "outCount" : "ids", "a pointer is null");
  pthread_mutex_lock(&s->mu);
  uint32_t n = s->num_forgotten < capacity ? s->num_forgotten : capacity;
  memcpy(ids, s->forgotten, n * sizeof *ids);
  memmove(s->forgotten, s->forgotten + n, (s->num_forgotten - n) * sizeof *ids);
  s->num_forgotten -= n;
  pthread_mutex_unlock(&s->mu);
  *out_count = n;
  return GPURES_OK;
}
#endif
