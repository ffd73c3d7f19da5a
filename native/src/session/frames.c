/*
** frames.c: a session's traffic. The sender announces each buffer once (its
** descriptor and fds) and from then on sends only its id, a serial and the
** frame's metadata; it keeps a reference to every frame until the release
** for that serial comes back. The receiver keeps each announced buffer's
** handle and gives out frames that borrow its fds; a frame's last release
** sends the release back.
*/
#if !defined(_WIN32)
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "session.h"

#define RECEIVE_FLAGS (GPURES_CHANNEL_NONBLOCK | GPURES_CHANNEL_ALLOW_UNSEALED)

static void refused(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  s->stats.refused++;
  pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------------ sending */

static bool knows(const gpures_session *s, uint64_t buffer) {
  for (uint32_t i = 0; i < s->num_known; i++)
    if (s->known[i] == buffer) return true;
  return false;
}

/* Sends msg with the handle's fds (duplicates: a release elsewhere cannot close them mid-send). */
static int send_with_fds(gpures__op op, int fd, const gpures__wire_message *msg,
                         gpures_handle handle, uint32_t *out_sent) {
  int fds[GPURES__WIRE_MAX_FDS];
  uint32_t have = 0;
  int status = GPURES_OK;
  for (; have < msg->h.num_fds && have < GPURES__WIRE_MAX_FDS; have++)
    if ((status = gpures_dup_fd(handle, have, &fds[have])) != GPURES_OK) break;
  if (status != GPURES_OK) status = gpures__refail(op, status);
  else status = gpures__datagram_send(op, fd, GPURES_CHANNEL_NONBLOCK, msg,
                                      gpures__wire_length(msg), fds, have, out_sent);
  for (uint32_t i = 0; i < have; i++) gpures__fd_close(fds[i]);
  return status;
}

/* Makes msg a FRAME of `buffer`: without descriptor and fds when the peer knows the buffer. */
static void as_frame(gpures__wire_message *msg, uint64_t buffer, uint64_t serial, bool known) {
  msg->h.type = GPURES__MSG_FRAME;
  msg->h.buffer = buffer;
  msg->h.serial = serial;
  if (!known) return;
  memmove(msg->body, msg->body + msg->h.desc_size, msg->h.meta_size);
  msg->h.desc_size = 0;
  msg->h.num_fds = 0;
}

/* One try, without waiting: *out_sent 0 when the socket is full. Locked. */
static int try_send_frame(gpures__op op, gpures_session *s, gpures_handle handle, uint64_t buffer,
                          gpures__wire_message msg, uint32_t *out_sent) {
  bool known = knows(s, buffer);
  as_frame(&msg, buffer, s->next_serial + 1, known);
  if (!gpures__session_grow((void **)&s->flights, &s->cap_flights, s->num_flights,
                            sizeof *s->flights, SESSION_MAX_IN_FLIGHT) ||
      (!known && !gpures__session_grow((void **)&s->known, &s->cap_known, s->num_known,
                                       sizeof *s->known, SESSION_MAX_BUFFERS)))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "",
                        "the peer holds %u frames of %u buffers, the most a session tracks (or "
                        "memory ran out)", s->num_flights, s->num_known);
  int status = gpures_clone(handle); /* the peer's reference, until its release comes back */
  if (status != GPURES_OK) return gpures__refail(op, status);
  status = send_with_fds(op, s->fd, &msg, handle, out_sent);
  if (status != GPURES_OK || !*out_sent) {
    (void)gpures_release(handle);
    return status;
  }
  s->flights[s->num_flights++] = (in_flight){++s->next_serial, buffer, handle};
  if (!known) s->known[s->num_known++] = buffer, s->stats.announced++;
  s->stats.frames++;
  s->stats.in_flight++;
  return GPURES_OK;
}

static int send_frame(gpures__op op, gpures_session *s, gpures_handle handle, uint64_t buffer,
                      const gpures__wire_message *msg, uint32_t flags, uint32_t *out_sent) {
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int status = s->closed || s->ended
                     ? gpures__fail(op, GPURES_E_STALE, "channel", "the session has ended")
                     : try_send_frame(op, s, handle, buffer, *msg, out_sent);
    pthread_mutex_unlock(&s->mu);
    if (status != GPURES_OK || *out_sent || (flags & GPURES_CHANNEL_NONBLOCK)) return status;
    uint32_t ready = 0; /* full: wait for room outside the lock, so releases keep coming in */
    status = gpures_channel_wait(s->fd, GPURES_CHANNEL_WRITABLE, -1, &ready);
    if (status != GPURES_OK) return gpures__refail(op, status);
  }
}

int gpures_session_send(gpures_session *s, gpures_handle handle, uint32_t flags,
                        uint32_t *out_sent) {
  gpures__op op = {"send", 0};
  if (!out_sent) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSent", "outSent is null");
  *out_sent = 0;
  if (!s) return gpures__fail(op, GPURES_E_NULL_POINTER, "session", "session is null");
  if (s->role != GPURES_SESSION_SEND)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "session", "the session receives; it sends nothing");
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  uint64_t buffer = 0;
  int status = gpures_buffer_id(handle, &buffer);
  if (status != GPURES_OK) return gpures__refail(op, status);
  gpures__wire_message msg;
  if ((status = gpures__wire_encode(&op, handle, &msg)) != GPURES_OK) return status;
  if (buffer) return send_frame(op, s, handle, buffer, &msg, flags, out_sent);
  for (;;) { /* a handle without a buffer identity goes whole, as over a plain channel */
    if ((status = send_with_fds(op, s->fd, &msg, handle, out_sent)) != GPURES_OK || *out_sent ||
        (flags & GPURES_CHANNEL_NONBLOCK))
      return status;
    uint32_t ready = 0;
    if ((status = gpures_channel_wait(s->fd, GPURES_CHANNEL_WRITABLE, -1, &ready)) != GPURES_OK)
      return gpures__refail(op, status);
  }
}

/* --------------------------------------------------- releases coming back */

/*
** KEEP: the receiver closed while still holding frames of this buffer. They
** stay valid there for as long as it likes, so the buffer is never handed
** out again: its frames in flight are let go as retired.
*/
static void take_keep(gpures_session *s, uint64_t buffer) {
  for (;;) {
    gpures_handle frame = 0;
    pthread_mutex_lock(&s->mu);
    bool found = false;
    for (uint32_t i = 0; i < s->num_flights && !found; i++)
      if (s->flights[i].buffer == buffer)
        found = gpures__session_take_flight(s, buffer, s->flights[i].serial, &frame);
    pthread_mutex_unlock(&s->mu);
    if (!found) return;
    (void)gpures__frame_retire(frame);
    (void)gpures_release(frame);
  }
}

static void take_release(gpures_session *s, const gpures__wire_header *h) {
  if (h->type == GPURES__MSG_KEEP) return take_keep(s, h->buffer);
  gpures_handle frame = 0;
  pthread_mutex_lock(&s->mu);
  bool found = h->type == GPURES__MSG_RELEASE &&
               gpures__session_take_flight(s, h->buffer, h->serial, &frame);
  if (!found) s->stats.refused++; /* not ours to release, or not a release at all */
  pthread_mutex_unlock(&s->mu);
  if (found) (void)gpures_release(frame); /* outside the lock: the slot may go home now */
}

void gpures__session_read_releases(gpures_session *s) {
  gpures__op op = {"read releases of", 0};
  gpures__datagram d;
  for (;;) {
    int status = gpures__datagram_receive(op, s->fd, GPURES_CHANNEL_NONBLOCK, &d);
    if (status == GPURES_E_STALE) {
      pthread_mutex_lock(&s->mu);
      s->ended = true; /* the receiver closed or died: everything it held comes back */
      pthread_mutex_unlock(&s->mu);
      gpures__session_drop_flights(s, false);
      return;
    }
    if (status != GPURES_OK) {
      refused(s);
      continue;
    }
    if (d.none) return;
    gpures__wire_header h;
    unsigned char *body;
    if (gpures__wire_parse(&op, (unsigned char *)d.storage, d.n, d.nfds, &h, &body) == GPURES_OK)
      take_release(s, &h);
    else
      refused(s);
    gpures__datagram_close_fds(&d, 0);
  }
}

/* ---------------------------------------------------------------- receiving */

/* What a received frame's last release needs. */
typedef struct received_frame {
  gpures_session *session;
  cached_buffer *buffer;
  uint64_t serial;
} received_frame;

static void buffer_unref(cached_buffer *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  (void)gpures_release(b->owner);
  gpures__free(b);
}

/* A RELEASE (or KEEP) back to the sender, without waiting: false when the socket is full. */
static bool send_notice(gpures_session *s, uint32_t type, uint64_t buffer, uint64_t serial) {
  gpures__wire_message m;
  memset(&m.h, 0, sizeof m.h);
  m.h.magic = GPURES__WIRE_MAGIC;
  m.h.abi = gpures_abi_version();
  m.h.header_size = sizeof m.h;
  m.h.type = type;
  m.h.buffer = buffer;
  m.h.serial = serial;
#if defined(MSG_NOSIGNAL)
  return send(s->fd, &m.h, sizeof m.h, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof m.h;
#else
  return send(s->fd, &m.h, sizeof m.h, MSG_DONTWAIT) == (ssize_t)sizeof m.h;
#endif
}

void gpures__session_flush(gpures_session *s) {
  uint32_t sent = 0;
  while (sent < s->num_pending && !s->closed &&
         send_notice(s, GPURES__MSG_RELEASE, s->pending[sent].buffer, s->pending[sent].serial))
    sent++;
  if (!sent) return; /* also: pending may be NULL, which memmove must not get */
  memmove(s->pending, s->pending + sent, (s->num_pending - sent) * sizeof *s->pending);
  s->num_pending -= sent;
}

/* A received frame's last release: tell the sender, now or as soon as the socket has room. */
static void frame_released(void *ctx, bool retired) {
  (void)retired;
  received_frame *f = ctx;
  gpures_session *s = f->session;
  bool watch = false;
  pthread_mutex_lock(&s->mu);
  if (!s->closed && !s->ended) {
    gpures__session_flush(s);
    if (s->num_pending || !send_notice(s, GPURES__MSG_RELEASE, f->buffer->peer_id, f->serial)) {
      if (gpures__session_grow((void **)&s->pending, &s->cap_pending, s->num_pending,
                               sizeof *s->pending, SESSION_MAX_PENDING))
        s->pending[s->num_pending++] = (pending_release){f->buffer->peer_id, f->serial};
      watch = true;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (watch) {
    gpures__op op = {"release", GPURES_KIND_DMA_BUF_HANDLE};
    (void)gpures__service_watch(op, s);
  }
  buffer_unref(f->buffer);
  gpures__session_unref(s);
  gpures__free(f);
}

static cached_buffer *cached(const gpures_session *s, uint64_t peer_id, uint32_t *at) {
  for (uint32_t i = 0; i < s->num_cache; i++)
    if (s->cache[i]->peer_id == peer_id) return *at = i, s->cache[i];
  return NULL;
}

/* Keeps an announced buffer: its handle owns the fds that every later frame of it borrows. */
static int cache_buffer(gpures__op op, gpures_session *s, uint64_t peer_id, gpures_handle owner,
                        cached_buffer **out) {
  uint32_t at;
  cached_buffer *b = gpures__alloc(sizeof *b);
  pthread_mutex_lock(&s->mu);
  int status = GPURES_OK;
  if (cached(s, peer_id, &at))
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "buffer",
                          "buffer %llu was announced already", (unsigned long long)peer_id);
  else if (!b || !gpures__session_grow((void **)&s->cache, &s->cap_cache, s->num_cache,
                                       sizeof *s->cache, SESSION_MAX_BUFFERS))
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "buffer",
                          "the session keeps %u buffers, the most it may (or memory ran out)",
                          s->num_cache);
  if (status == GPURES_OK) {
    atomic_init(&b->refs, 1);
    b->peer_id = peer_id;
    b->local_id = gpures__next_buffer_id();
    b->owner = owner;
    s->cache[s->num_cache++] = b;
    s->stats.announced++;
    *out = b;
  }
  pthread_mutex_unlock(&s->mu);
  if (status != GPURES_OK) gpures__free(b);
  return status;
}

/* Takes a buffer out of the cache again (its announcement was refused after all). */
static void uncache(gpures_session *s, cached_buffer *b) {
  uint32_t at;
  pthread_mutex_lock(&s->mu);
  bool found = cached(s, b->peer_id, &at) == b;
  if (found) s->cache[at] = s->cache[--s->num_cache], s->stats.announced--;
  pthread_mutex_unlock(&s->mu);
  if (found) buffer_unref(b);
}

/* A frame over a cached buffer, carrying the message's metadata. */
static int frame_of(gpures__op op, gpures_session *s, cached_buffer *b, const gpures__wire_header *h,
                    const unsigned char *body, gpures_handle *out) {
  unsigned char desc[GPURES__DESC_MAX];
  uint32_t kind = 0;
  int status = gpures_kind(b->owner, &kind);
  if (status == GPURES_OK) status = gpures_describe(b->owner, desc, sizeof desc);
  if (status != GPURES_OK) return gpures__refail(op, status);
  const gpures_dma_buf_handle_desc *dma = (const void *)desc;
  gpures_frame_meta meta;
  op.kind = kind;
  status = gpures__wire_meta(&op, h, body, kind == GPURES_KIND_DMA_BUF_HANDLE ? dma->width : 0,
                             kind == GPURES_KIND_DMA_BUF_HANDLE ? dma->height : 0, &meta);
  received_frame *f = status == GPURES_OK ? gpures__alloc(sizeof *f) : NULL;
  if (status == GPURES_OK && !f)
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a frame");
  if (status != GPURES_OK) return status;
  *f = (received_frame){s, b, h->serial};
  gpures__borrow borrow = {frame_released, f, b->local_id};
  atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  gpures__session_ref(s);
  status = gpures__create_borrowing(op, kind, desc, NULL, &borrow, out);
  if (status != GPURES_OK) {
    buffer_unref(b);
    gpures__session_unref(s);
    gpures__free(f);
    return status;
  }
  if (meta.flags) (void)gpures_meta_set(*out, &meta); /* checked above against the same extent */
  return GPURES_OK;
}

/* A FRAME message: announcing (descriptor and fds) or naming a buffer announced before. */
static int take_frame(gpures__op op, gpures_session *s, const gpures__wire_header *h,
                      unsigned char *body, gpures__datagram *d, bool allow_unsealed,
                      gpures_handle *out) {
  cached_buffer *b = NULL;
  int status = GPURES_OK;
  if (h->desc_size) {
    gpures__wire_header bare = *h; /* the buffer's own handle carries no frame's metadata */
    bare.meta_size = 0;
    gpures_handle owner = 0;
    status = gpures__wire_decode(&op, &bare, body, d->fds, d->nfds, allow_unsealed, &owner);
    if (status != GPURES_OK) return status;
    d->nfds = 0; /* the owner has them */
    if ((status = cache_buffer(op, s, h->buffer, owner, &b)) != GPURES_OK) {
      (void)gpures_release(owner);
      return status;
    }
  } else {
    uint32_t at;
    pthread_mutex_lock(&s->mu);
    if ((b = cached(s, h->buffer, &at))) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
    if (!b)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "buffer",
                          "buffer %llu was never announced", (unsigned long long)h->buffer);
  }
  status = frame_of(op, s, b, h, body, out);
  if (!h->desc_size) buffer_unref(b); /* the lookup's reference */
  else if (status != GPURES_OK) uncache(s, b); /* a refused announcement leaves nothing behind */
  return status;
}

void gpures__session_forget_buffer(gpures_session *s, uint64_t buffer) {
  pthread_mutex_lock(&s->mu);
  for (uint32_t i = 0; i < s->num_known; i++) {
    if (s->known[i] != buffer) continue;
    s->known[i] = s->known[--s->num_known];
    /* A full socket keeps the peer's copy until the session ends: memory, never a wrong frame. */
    if (!s->closed && !s->ended) (void)send_notice(s, GPURES__MSG_FORGET, buffer, 0);
    break;
  }
  pthread_mutex_unlock(&s->mu);
}

void gpures__session_keep_held(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  for (uint32_t i = 0; i < s->num_cache; i++) /* the cache's own reference, and a frame's */
    if (atomic_load_explicit(&s->cache[i]->refs, memory_order_acquire) > 1)
      (void)send_notice(s, GPURES__MSG_KEEP, s->cache[i]->peer_id, 0);
  pthread_mutex_unlock(&s->mu);
}

/* A FORGET message: the sender dropped a buffer. Frames over it stay valid. */
static int take_forget(gpures__op op, gpures_session *s, uint64_t peer_id) {
  uint32_t at;
  pthread_mutex_lock(&s->mu);
  cached_buffer *b = cached(s, peer_id, &at);
  if (b) {
    s->cache[at] = s->cache[--s->num_cache];
    if (s->num_forgotten < SESSION_MAX_FORGOTTEN) s->forgotten[s->num_forgotten++] = b->local_id;
    s->stats.forgotten++;
  }
  pthread_mutex_unlock(&s->mu);
  if (!b)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "buffer", "buffer %llu was never announced",
                        (unsigned long long)peer_id);
  buffer_unref(b);
  return GPURES_OK;
}

static int take_message(gpures__op op, gpures_session *s, gpures__datagram *d, uint32_t flags,
                        bool *again, gpures_handle *out) {
  gpures__wire_header h;
  unsigned char *body;
  bool allow_unsealed = (flags & GPURES_CHANNEL_ALLOW_UNSEALED) != 0;
  int status = gpures__wire_parse(&op, (unsigned char *)d->storage, d->n, d->nfds, &h, &body);
  if (status != GPURES_OK) return status;
  switch (h.type) {
    case GPURES__MSG_HANDLE:
      status = gpures__wire_decode(&op, &h, body, d->fds, d->nfds, allow_unsealed, out);
      if (status == GPURES_OK) d->nfds = 0;
      return status;
    case GPURES__MSG_FRAME:
      return take_frame(op, s, &h, body, d, allow_unsealed, out);
    case GPURES__MSG_FORGET:
      *again = true;
      return take_forget(op, s, h.buffer);
    default:
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "type",
                          "a release came to the receiving side of a session");
  }
}

int gpures_session_receive(gpures_session *s, uint32_t flags, gpures_handle *out_handle) {
  gpures__op op = {"receive", 0};
  if (!out_handle) return gpures__fail(op, GPURES_E_NULL_POINTER, "outHandle", "outHandle is null");
  *out_handle = 0;
  if (!s) return gpures__fail(op, GPURES_E_NULL_POINTER, "session", "session is null");
  if (s->role != GPURES_SESSION_RECEIVE)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "session",
                        "the session sends; the service thread reads what comes back");
  if (flags & ~RECEIVE_FLAGS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  gpures__datagram d;
  for (;;) {
    int status = gpures__datagram_receive(op, s->fd, flags, &d);
    if (status == GPURES_E_STALE) {
      pthread_mutex_lock(&s->mu);
      s->ended = true;
      pthread_mutex_unlock(&s->mu);
    }
    if (status != GPURES_OK || d.none) return status;
    bool again = false;
    status = take_message(op, s, &d, flags, &again, out_handle);
    gpures__datagram_close_fds(&d, 0);
    if (status != GPURES_OK) {
      refused(s);
      return status;
    }
    if (!again) {
      pthread_mutex_lock(&s->mu);
      s->stats.frames++;
      pthread_mutex_unlock(&s->mu);
      return GPURES_OK;
    }
  }
}
#endif
