/*
** receive.c: the receiving side of a session. It keeps each announced
** buffer's handle (which owns the fds) and gives out frames that borrow
** them; a frame's last release sends the release back, now or, when the
** socket is full, as soon as it has room (the service thread flushes).
** Every message is checked before anything is kept: a peer's lie is refused
** and counted, and leaves the cache as it was.
*/
#if !defined(_WIN32)
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "session.h"

#define RECEIVE_FLAGS (GPURES_CHANNEL_NONBLOCK | GPURES_CHANNEL_ALLOW_UNSEALED)

/* ---------------------------------------------------------------- receiving */

/* What a received frame's last release needs. */
typedef struct received_frame {
  gpures_session *session;
  cached_buffer *buffer;
  uint64_t serial;
  gpures_handle fence; /* the frame's release fence at its last release (0: none) */
} received_frame;

/* The last reference lets the buffer go; a session that sent its frames on (a relay) forgets it. */
static void buffer_unref(cached_buffer *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  uint64_t id = b->local_id;
  (void)gpures_release(b->owner);
  gpures__free(b);
  gpures__buffer_gone(id);
}

/*
** A received frame's release, told to the sender now or as soon as the
** socket has room. A release that can be neither sent nor kept would leave
** the sender holding the slot for good, so the session ends instead: the
** sender then takes back (and retires) everything still in flight.
*/
static void send_release(void *ctx, int status) {
  (void)status; /* a fence that failed (a lost device) has nothing more to wait for */
  received_frame *f = ctx;
  gpures_session *s = f->session;
  bool queued = false, lost = false;
  pthread_mutex_lock(&s->mu);
  if (!s->closed && !s->ended) {
    lost = !gpures__session_notify(s, GPURES__MSG_RELEASE, f->buffer->peer_id, f->serial, &queued);
    if (lost) s->ended = true;
  }
  pthread_mutex_unlock(&s->mu);
  if (lost) (void)shutdown(s->fd, SHUT_RDWR);
  if (queued) {
    gpures__op op = {"release", GPURES_KIND_DMA_BUF_HANDLE};
    (void)gpures__service_watch(op, s);
  }
  buffer_unref(f->buffer);
  gpures__session_unref(s);
  gpures__free(f);
}

/* The frame's release fence, handed over just before its last release. */
static void keep_fence(void *ctx, gpures_handle release_fence) {
  received_frame *f = ctx;
  (void)gpures_release(f->fence);
  f->fence = release_fence;
}

/*
** A received frame's last release. With a release fence (the consumer's GPU
** still reads the memory) the sender hears of it only once the fence is
** reached, from the waiter thread: its pool must not hand the slot to a
** producer before then. A fence the host cannot wait on (a GL sync, a binary
** Vulkan semaphore) cannot be honoured across processes; the release goes at once.
*/
static void frame_released(void *ctx, bool retired) {
  (void)retired;
  received_frame *f = ctx;
  gpures_handle fence = f->fence;
  f->fence = 0;
  gpures__op op = {"release", GPURES_KIND_DMA_BUF_HANDLE};
  bool later = fence && gpures__sync_then(op, fence, send_release, f) == GPURES_OK;
  (void)gpures_release(fence); /* the wait holds its own */
  if (!later) send_release(f, GPURES_OK);
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
  int status = GPURES_OK;
  if (b) { /* the owner's descriptor, read once for all its frames */
    memset(b->desc, 0, sizeof b->desc);
    status = gpures_kind(owner, &b->kind);
    if (status == GPURES_OK) status = gpures_describe(owner, b->desc, sizeof b->desc);
    if (status != GPURES_OK) {
      gpures__free(b);
      return gpures__refail(op, status);
    }
    gpures__desc_extent(gpures__variant_of(b->kind), b->desc, &b->width, &b->height);
  }
  pthread_mutex_lock(&s->mu);
  if (cached(s, peer_id, &at))
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "buffer",
                          "buffer %llu was announced already", (unsigned long long)peer_id);
  else if (!b || !gpures__grow((void **)&s->cache, &s->cap_cache, s->num_cache, sizeof *s->cache,
                               SESSION_FIRST_ROOM, SESSION_MAX_BUFFERS))
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
  gpures_frame_meta meta;
  op.kind = b->kind;
  int status = gpures__wire_meta(&op, h, body, b->width, b->height, &meta);
  received_frame *f = status == GPURES_OK ? gpures__alloc(sizeof *f) : NULL;
  if (status == GPURES_OK && !f)
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a frame");
  if (status != GPURES_OK) return status;
  *f = (received_frame){s, b, h->serial, 0};
  gpures__borrow borrow = {frame_released, f, b->local_id, keep_fence};
  atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  gpures__session_ref(s);
  status = gpures__create_borrowing(op, b->kind, b->desc, NULL, &borrow, out);
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

void gpures__session_keep_held(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  for (uint32_t i = 0; i < s->num_cache; i++) /* the cache's own reference, and a frame's */
    if (atomic_load_explicit(&s->cache[i]->refs, memory_order_acquire) > 1)
      (void)gpures__session_notice(s, GPURES__MSG_KEEP, s->cache[i]->peer_id, 0);
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

/*
** A FENCE message: a SyncPoint for the frame it names (buffer, serial; 0, 0
** for a plain handle), held until that frame arrives. A later FENCE replaces
** it (a sender that found the socket full sends both again).
*/
static int take_fence(gpures__op op, gpures_session *s, const gpures__wire_header *h,
                      unsigned char *body, gpures__datagram *d) {
  const gpures_kind_info *info = gpures_kind_info_of(h->kind);
  if (!info || info->family != GPURES_FAMILY_SYNC)
    return gpures__fail(op, GPURES_E_WRONG_KIND, "kind", "a fence must be a SyncPoint, not a %s",
                        gpures__kind_name(h->kind));
  gpures_handle fence = 0;
  int status = gpures__wire_decode(&op, h, body, d->fds, d->nfds, false, &fence);
  if (status != GPURES_OK) return status;
  d->nfds = 0; /* the fence has them */
  pthread_mutex_lock(&s->mu);
  gpures_handle old = s->fence;
  s->fence = fence;
  s->fence_buffer = h->buffer;
  s->fence_serial = h->serial;
  pthread_mutex_unlock(&s->mu);
  (void)gpures_release(old);
  return GPURES_OK;
}

/*
** A FENCE that did not arrive whole (refused for any reason, or dropped with
** its fds): the message it names must not be handed out without it, or its
** consumer would read what the producer is still writing. Nothing in such a
** datagram can be trusted but its raw bytes, so they decide: the magic, then
** the type at its fixed offset, whatever header_size, desc_size or kind say
** (a newer sender's kind, a lying size, a cut body). Buffer and serial are
** read from their fixed offsets too; a datagram cut before them names no
** message, and the next frame or handle is refused instead.
*/
#define FENCE_TYPE_END (offsetof(gpures__wire_header, type) + sizeof(uint32_t))

static void maybe_fence_lost(gpures_session *s, const gpures__datagram *d) {
  gpures__wire_header h;
  if (d->n < FENCE_TYPE_END) return;
  memset(&h, 0, sizeof h);
  memcpy(&h, d->storage, d->n < sizeof h ? d->n : sizeof h);
  if (h.magic != GPURES__WIRE_MAGIC || h.type != GPURES__MSG_FENCE) return;
  pthread_mutex_lock(&s->mu);
  s->fence_lost = true;
  s->lost_unnamed = d->n < sizeof h;
  s->lost_buffer = h.buffer;
  s->lost_serial = h.serial;
  pthread_mutex_unlock(&s->mu);
}

/* Refuses the frame or handle whose FENCE was lost. */
static int check_fence_arrived(gpures__op op, gpures_session *s, const gpures__wire_header *h) {
  pthread_mutex_lock(&s->mu);
  bool lost = s->fence_lost && (s->lost_unnamed ||
                                (s->lost_buffer == h->buffer && s->lost_serial == h->serial));
  if (lost) s->fence_lost = s->lost_unnamed = false;
  pthread_mutex_unlock(&s->mu);
  if (!lost) return GPURES_OK;
  return gpures__fail(op, GPURES_E_INVALID_VALUE, "acquire",
                      "the frame's acquire fence did not arrive whole (refused or dropped), so "
                      "the frame is refused rather than handed out unsynchronised");
}

/* The held fence becomes the received handle's acquire fence, if it names this one. */
static void attach_fence(gpures_session *s, gpures_handle handle, uint64_t buffer, uint64_t serial) {
  pthread_mutex_lock(&s->mu);
  gpures_handle fence = s->fence;
  bool mine = s->fence_buffer == buffer && s->fence_serial == serial;
  s->fence = 0; /* one that names another frame is stale: that frame was never sent */
  pthread_mutex_unlock(&s->mu);
  if (fence && mine) (void)gpures_fences_set(handle, fence, 0);
  (void)gpures_release(fence);
}

static int take_message(gpures__op op, gpures_session *s, gpures__datagram *d, uint32_t flags,
                        bool *again, gpures_handle *out) {
  gpures__wire_header h;
  unsigned char *body;
  bool allow_unsealed = (flags & GPURES_CHANNEL_ALLOW_UNSEALED) != 0;
  int status = gpures__wire_parse(&op, (unsigned char *)d->storage, d->n, d->nfds, &h, &body);
  if (status != GPURES_OK) return status;
  if ((h.type == GPURES__MSG_HANDLE || h.type == GPURES__MSG_FRAME) &&
      (status = check_fence_arrived(op, s, &h)) != GPURES_OK)
    return status;
  switch (h.type) {
    case GPURES__MSG_HANDLE:
      status = gpures__wire_decode(&op, &h, body, d->fds, d->nfds, allow_unsealed, out);
      if (status == GPURES_OK) d->nfds = 0;
      if (status == GPURES_OK) attach_fence(s, *out, h.buffer, h.serial);
      return status;
    case GPURES__MSG_FRAME:
      status = take_frame(op, s, &h, body, d, allow_unsealed, out);
      if (status == GPURES_OK) attach_fence(s, *out, h.buffer, h.serial);
      return status;
    case GPURES__MSG_FORGET:
      *again = true;
      return take_forget(op, s, h.buffer);
    case GPURES__MSG_FENCE:
      *again = true;
      return take_fence(op, s, &h, body, d); /* refused: the caller marks its frame */
    case GPURES__MSG_WELCOME: /* a subscribe that stopped waiting: the terms are as asked or less */
    case GPURES__MSG_REFUSE:
      if (!gpures__session_subscribed(s)) /* only a fan-out this session joined answers it */
        return gpures__fail(op, GPURES_E_INVALID_VALUE, "type",
                            "a fan-out's answer (type %u) came to a session that never subscribed",
                            h.type);
      if (h.type == GPURES__MSG_REFUSE) return gpures__session_refusal(op, s, &h, body);
      *again = true;
      return GPURES_OK;
    case GPURES__MSG_BELL:
      /* The peer receives on this channel too and gave its doorbell to a sender that is not
      ** here; the fd closes with the datagram. */
      *again = true;
      return GPURES_OK;
    default:
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "type",
                          "a message only a sender reads (type %u) came to the receiving side",
                          h.type);
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
    d.n = 0;
    int status = gpures__datagram_receive(op, s->fd, flags, &d);
    if (status != GPURES_OK && status != GPURES_E_STALE) maybe_fence_lost(s, &d);
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
      maybe_fence_lost(s, &d); /* the header bytes are as they came */
      gpures__session_refused(s);
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

/* -------------------------------------------------------------- the doorbell */

/* The BELL that hands the sender its end of the doorbell, once. Locked. */
static int send_bell(gpures__op op, gpures_session *s, int theirs) {
  if (s->bell_given)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "session",
                        "the session gave its sender a doorbell already");
  if (s->closed || s->ended) return gpures__fail(op, GPURES_E_STALE, "channel", "the session has ended");
  gpures__wire_header h = gpures__session_header(GPURES__MSG_BELL, 0, 0);
  h.num_fds = 1;
  uint32_t sent = 0;
  int status =
      gpures__datagram_send(op, s->fd, GPURES_CHANNEL_NONBLOCK, &h, sizeof h, &theirs, 1, &sent);
  if (status == GPURES_OK && !sent)
    status = gpures__fail(op, GPURES_E_OS_ERROR, "channel",
                          "%s: the channel is full; ask again once the peer has read",
                          gpures__errno_name(EAGAIN));
  if (status == GPURES_OK) s->bell_given = true;
  return status;
}

int gpures_session_bell(gpures_session *s, int *out_fd) {
  gpures__op op = {"make a doorbell for", 0};
  if (!out_fd) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  if (!s) return gpures__fail(op, GPURES_E_NULL_POINTER, "session", "session is null");
  if (s->role != GPURES_SESSION_RECEIVE)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "session",
                        "the session sends; only a receiving session has a doorbell");
  int pair[2];
  int status = gpures__doorbell_pair(op, pair);
  if (status != GPURES_OK) return status;
  pthread_mutex_lock(&s->mu);
  status = send_bell(op, s, pair[1]);
  pthread_mutex_unlock(&s->mu);
  gpures__fd_close(pair[1]); /* sent, the sender has its own; else nobody needs it */
  if (status != GPURES_OK) return gpures__fd_close(pair[0]), status;
  *out_fd = pair[0];
  return GPURES_OK;
}
#endif
