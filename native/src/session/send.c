/*
** send.c: the sending side of a session. Each buffer is announced once (its
** descriptor and fds); from then on a frame of it is its id, a serial and
** the frame's metadata. The sender keeps a reference to every frame until the
** release for that serial comes back (the service thread reads it), or a
** KEEP says the receiver keeps the buffer for good.
*/
#if !defined(_WIN32)
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session.h"

/* ------------------------------------------------------------------ sending */

static bool knows(const gpures_session *s, uint64_t buffer) {
  for (uint32_t i = 0; i < s->num_known; i++)
    if (s->known[i] == buffer) return true;
  return false;
}

/*
** Sends msg with the handle's fds (duplicates: a release elsewhere cannot
** close them mid-send). *out_sent is 1 only when the datagram went.
*/
static int send_with_fds(gpures__op op, int fd, const gpures__wire_message *msg,
                         gpures_handle handle, uint32_t *out_sent) {
  int fds[GPURES__WIRE_MAX_FDS];
  uint32_t have = 0;
  int status = GPURES_OK;
  *out_sent = 0;
  for (; have < msg->h.num_fds && have < GPURES__WIRE_MAX_FDS; have++)
    if ((status = gpures_dup_fd(handle, have, &fds[have])) != GPURES_OK) break;
  if (status != GPURES_OK) status = gpures__refail(op, status);
  else status = gpures__datagram_send(op, fd, GPURES_CHANNEL_NONBLOCK, msg,
                                      gpures__wire_length(msg), fds, have, out_sent);
  for (uint32_t i = 0; i < have; i++) gpures__fd_close(fds[i]);
  return status;
}

/* The handle's acquire fence as a FENCE message naming the message it leads. */
static int fence_message(gpures__op op, gpures_handle acquire, uint64_t buffer, uint64_t serial,
                         gpures__wire_message *out) {
  gpures__op fence_op = op;
  if (gpures__wire_encode(&fence_op, acquire, out) != GPURES_OK)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "acquire",
                        "the acquire fence, a %s, cannot cross processes: give the frame an "
                        "fd-backed one (SyncFile, CpuFence, VkSemaphoreFd)",
                        gpures__kind_name(fence_op.kind));
  out->h.type = GPURES__MSG_FENCE;
  out->h.buffer = buffer; /* a receiver gives it to that message only, never to the next by chance */
  out->h.serial = serial;
  return GPURES_OK;
}

/*
** The handle's acquire fence goes first, as a FENCE message, so the message
** after it (a FRAME, or a plain HANDLE) arrives with it. Only a point with an
** fd can cross; a process-local one (a VkSemaphore, a CUDA event) is refused
** rather than dropped, since a consumer that never waits would read what its
** producer is still writing.
**
** The two datagrams cannot go as one, so a FENCE may go while its message
** finds the socket full. s->led remembers that: the retry of the same handle
** with the same fence sends the message alone, under the serial the FENCE
** names, so the receiver sees one FENCE and then its message. Whatever is
** sent instead spends that serial, and the FENCE left behind names a message
** that never comes (a receiver drops it at the next one).
**
** Sets *serial, the message's; *out_ready 0 when the socket was full before
** the FENCE went (nothing went). Called holding the session's lock.
*/
static int lead_with_fence(gpures__op op, gpures_session *s, gpures_handle handle, uint64_t buffer,
                           uint64_t *serial, uint32_t *out_ready) {
  gpures_handle acquire = 0, release = 0;
  *out_ready = 0;
  int status = gpures_fences_get(handle, &acquire, &release);
  (void)gpures_release(release); /* goes back with the release, not forward */
  if (status != GPURES_OK) return gpures__refail(op, status);
  led_fence *led = &s->led;
  bool again = led->frame == handle && led->fence == acquire && led->buffer == buffer && acquire;
  if (led->frame && !again) {
    if (led->serial > s->next_serial) s->next_serial = led->serial;
    *led = (led_fence){0, 0, 0, 0};
  }
  *serial = again ? led->serial : s->next_serial + 1;
  if (!acquire || again) {
    (void)gpures_release(acquire);
    *out_ready = 1;
    return GPURES_OK;
  }
  gpures__wire_message fence;
  status = fence_message(op, acquire, buffer, *serial, &fence);
  if (status == GPURES_OK) status = send_with_fds(op, s->fd, &fence, acquire, out_ready);
  if (status == GPURES_OK && *out_ready) *led = (led_fence){handle, acquire, buffer, *serial};
  (void)gpures_release(acquire);
  return status;
}

/* The message went: its serial is spent, and the FENCE that led it with it. Locked. */
static void message_sent(gpures_session *s, uint64_t serial) {
  s->led = (led_fence){0, 0, 0, 0};
  s->next_serial = serial;
  s->stats.frames++;
  gpures__session_ring(s);
}

/*
** One byte, never waited for: a doorbell that is full is rung already. A
** receiver that is gone (EPIPE) needs no more rings.
*/
int gpures__session_take_bell(gpures_session *s) {
  int bell = s->bell;
  s->bell = -1;
  return bell;
}

void gpures__session_ring(gpures_session *s) {
  if (s->bell < 0 || s->role != GPURES_SESSION_SEND) return;
#if defined(MSG_NOSIGNAL)
  ssize_t n = send(s->bell, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
#else
  ssize_t n = send(s->bell, "", 1, MSG_DONTWAIT); /* SO_NOSIGPIPE is set on it */
#endif
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    close(s->bell);
    s->bell = -1;
  }
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

/* One try at a frame of `buffer`, without waiting: *out_sent 0 when the socket is full. Locked. */
static int try_send_frame(gpures__op op, gpures_session *s, gpures_handle handle, uint64_t buffer,
                          gpures__wire_message msg, uint32_t *out_sent) {
  bool known = knows(s, buffer);
  if (!gpures__grow((void **)&s->flights, &s->cap_flights, s->num_flights, sizeof *s->flights,
                    SESSION_FIRST_ROOM, SESSION_MAX_IN_FLIGHT) ||
      (!known && !gpures__grow((void **)&s->known, &s->cap_known, s->num_known, sizeof *s->known,
                               SESSION_FIRST_ROOM, SESSION_MAX_BUFFERS)))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "",
                        "the peer holds %u frames of %u buffers, the most a session tracks (or "
                        "memory ran out)", s->num_flights, s->num_known);
  uint64_t serial = 0;
  uint32_t ready = 0;
  int status = lead_with_fence(op, s, handle, buffer, &serial, &ready);
  if (status != GPURES_OK || !ready) return status;
  as_frame(&msg, buffer, serial, known);
  status = gpures_clone(handle); /* the peer's reference, until its release comes back */
  if (status != GPURES_OK) return gpures__refail(op, status);
  status = send_with_fds(op, s->fd, &msg, handle, out_sent);
  if (status != GPURES_OK || !*out_sent) {
    (void)gpures_release(handle);
    return status;
  }
  message_sent(s, serial);
  s->flights[s->num_flights++] = (in_flight){serial, buffer, handle};
  if (!known) s->known[s->num_known++] = buffer, s->stats.announced++;
  s->stats.in_flight++;
  return GPURES_OK;
}

/*
** One try at a handle without a buffer identity: it goes whole, as over a
** plain channel, with a serial only so that its FENCE can name it (older
** receivers compare the two and nothing more). Locked.
*/
static int try_send_handle(gpures__op op, gpures_session *s, gpures_handle handle,
                           gpures__wire_message msg, uint32_t *out_sent) {
  uint64_t serial = 0;
  uint32_t ready = 0;
  int status = lead_with_fence(op, s, handle, 0, &serial, &ready);
  if (status != GPURES_OK || !ready) return status;
  msg.h.serial = serial;
  status = send_with_fds(op, s->fd, &msg, handle, out_sent);
  if (status == GPURES_OK && *out_sent) message_sent(s, serial);
  return status;
}

/*
** Tries until the message goes, waiting for room outside the lock (releases
** keep coming in meanwhile), or once with NONBLOCK.
*/
static int send_message(gpures__op op, gpures_session *s, gpures_handle handle, uint64_t buffer,
                        const gpures__wire_message *msg, uint32_t flags, uint32_t *out_sent) {
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int status = s->closed || s->ended
                     ? gpures__fail(op, GPURES_E_STALE, "channel", "the session has ended")
                 : buffer ? try_send_frame(op, s, handle, buffer, *msg, out_sent)
                          : try_send_handle(op, s, handle, *msg, out_sent);
    pthread_mutex_unlock(&s->mu);
    if (status != GPURES_OK || *out_sent || (flags & GPURES_CHANNEL_NONBLOCK)) return status;
    uint32_t ready = 0;
    status = gpures_channel_wait(s->fd, GPURES_CHANNEL_WRITABLE, -1, &ready);
    if (status != GPURES_OK) return gpures__refail(op, status);
  }
}

int gpures__session_send_encoded(gpures_session *s, gpures_handle handle, uint64_t buffer,
                                 const gpures__wire_message *msg, uint32_t *out_sent) {
  gpures__op op = {"send", msg->h.kind};
  *out_sent = 0;
  return send_message(op, s, handle, buffer, msg, GPURES_CHANNEL_NONBLOCK, out_sent);
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
  return send_message(op, s, handle, buffer, &msg, flags, out_sent);
}

/* --------------------------------------------------- releases coming back */

/*
** KEEP: the receiver closed while still holding frames of this buffer. They
** stay valid there for as long as it likes, so the buffer is never handed
** out again: its frames in flight are let go as retired.
*/
/* Tells the fan-out the session serves, if any, that a frame of `buffer` came back. */
static void tell_returned(gpures_session *s, uint64_t buffer) {
  struct gpures_fanout *f = gpures__session_fanout(s);
  if (!f) return;
  gpures__fanout_returned(f, s, buffer);
  gpures__fanout_unref(f);
}

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
    tell_returned(s, buffer);
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
  if (!found) return;
  (void)gpures_release(frame); /* outside the lock: the slot may go home now */
  tell_returned(s, h->buffer);
}

/*
** BELL: the receiver's doorbell, kept and rung once at once (so the receiver
** knows it works). One per session: a second, or an fd that is no Unix stream
** socket, is refused and counted, and closed with the datagram.
*/
static void take_bell(gpures_session *s, gpures__datagram *d) {
  pthread_mutex_lock(&s->mu);
  if (!s->bell_given && !s->closed && gpures__is_doorbell(d->fds[0])) {
#if defined(SO_NOSIGPIPE)
    int one = 1; /* the receiver set it on its copy; this one is ours to be sure of */
    (void)setsockopt(d->fds[0], SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    s->bell = d->fds[0];
    s->bell_given = true;
    d->fds[0] = -1;
    d->nfds = 0;
    gpures__session_ring(s);
  } else {
    s->stats.refused++;
  }
  pthread_mutex_unlock(&s->mu);
}

/* Messages read per wake-up: one busy peer must not keep the service thread from the others. */
#define READS_PER_WAKE 64

void gpures__session_read_releases(gpures_session *s) {
  gpures__op op = {"read releases of", 0};
  gpures__datagram d;
  for (int reads = 0; reads < READS_PER_WAKE; reads++) {
    int status = gpures__datagram_receive(op, s->fd, GPURES_CHANNEL_NONBLOCK, &d);
    if (status == GPURES_E_STALE) {
      pthread_mutex_lock(&s->mu);
      s->ended = true; /* the receiver closed or died: everything it held comes back */
      int bell = gpures__session_take_bell(s); /* a receive waiting on it must hear the end */
      pthread_mutex_unlock(&s->mu);
      if (bell >= 0) gpures__fd_close(bell);
      /*
      ** Retired, not reused: a receiver that closed still reads what it held
      ** (its KEEPs say which, but a KEEP can be lost to a full socket), and new
      ** memory for a slot costs a memfd, never a frame overwritten under a reader.
      */
      gpures__session_drop_flights(s, true);
      struct gpures_fanout *f = gpures__session_fanout(s);
      if (f) gpures__fanout_ended(f, s), gpures__fanout_unref(f);
      return;
    }
    if (status != GPURES_OK) {
      gpures__session_refused(s);
      continue;
    }
    if (d.none) return;
    gpures__wire_header h;
    unsigned char *body;
    if (gpures__wire_parse(&op, (unsigned char *)d.storage, d.n, d.nfds, &h, &body) != GPURES_OK)
      gpures__session_refused(s);
    else if (h.type == GPURES__MSG_BELL)
      take_bell(s, &d);
    else
      take_release(s, &h);
    gpures__datagram_close_fds(&d, 0);
  }
}

void gpures__session_forget_buffer(gpures_session *s, uint64_t buffer) {
  bool queued = false, lost = false;
  pthread_mutex_lock(&s->mu);
  for (uint32_t i = 0; i < s->num_known; i++) {
    if (s->known[i] != buffer) continue;
    s->known[i] = s->known[--s->num_known];
    /* Sent now or when there is room (the service thread watches this session already). */
    if (!s->closed && !s->ended)
      lost = !gpures__session_notify(s, GPURES__MSG_FORGET, buffer, 0, &queued);
    break;
  }
  pthread_mutex_unlock(&s->mu);
  /* A peer that cannot be told keeps an entry it may never drop: end the session instead. */
  if (lost) (void)shutdown(s->fd, SHUT_RDWR); /* the service thread reads the end, and ends the bell */
  if (queued) gpures__service_wake();
}
#endif
