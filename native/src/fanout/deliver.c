/*
** deliver.c: a frame published once, delivered to each consumer at its own
** pace. A consumer with room in its window and nothing queued gets the frame
** at once (its session sends it); otherwise the frame waits in its queue,
** where the policy decides what happens when the queue is full: BLOCK holds
** the publish back, DROP_OLDEST lets the oldest waiting frame go, LATEST
** replaces the one in its mailbox. Each release that comes back (on the
** service thread) opens the window by one, and the oldest queued frame goes.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fanout.h"

void gpures__fanout_wake(gpures_fanout *f) {
  pthread_cond_broadcast(&f->room);
  uint32_t kept = 0;
  for (uint32_t i = 0; i < f->num_notices; i++) { /* posting calls nothing back: safe under the lock */
    int status = gpures__event_post_status(f->notices[i].queue, f->notices[i].token,
                                           GPURES_EVENT_ROOM, f->closed ? GPURES_E_STALE : GPURES_OK);
    if (status == GPURES_E_OUT_OF_MEMORY) f->notices[kept++] = f->notices[i]; /* told at the next wake */
  }
  f->num_notices = kept;
}

/*
** Whether the consumer takes one more frame without a publish waiting for
** it; `next`, when not NULL, is the format of a frame that would change the
** stream's: a consumer that will be refused it holds nothing back.
*/
static bool has_room(const consumer *c, const frame_format *next) {
  if (c->terms.policy != GPURES_POLICY_BLOCK || c->refusing) return true;
  char why[8];
  if (next && !gpures__caps_take(&c->terms, next, why, sizeof why)) return true;
  return c->queued < c->terms.depth || (!c->queued && c->in_flight < c->terms.window);
}

/* The first BLOCK consumer without room, or NULL: a publish may go. Locked. */
static consumer *blocker(const gpures_fanout *f, const frame_format *next) {
  for (uint32_t i = 0; i < f->num_consumers; i++)
    if (!has_room(f->consumers[i], next)) return f->consumers[i];
  return NULL;
}

enum { SENT = 1, FULL = 0, OVER = -1, FAILED = -2 };

/*
** Sends a frame to the consumer without waiting, from its message when the
** caller encoded it (else NULL): SENT, FULL (its socket is), OVER (its
** session ended: it leaves), or FAILED (the send failed for this frame, out
** of fds say: the status is recorded and the consumer stays). Locked.
*/
static int send_now(consumer *c, gpures_handle frame, uint64_t buffer, uint64_t published_us,
                    const gpures__wire_message *msg) {
  uint32_t sent = 0;
  int status = msg ? gpures__session_send_encoded(c->session, frame, buffer, msg, &sent)
                   : gpures_session_send(c->session, frame, GPURES_CHANNEL_NONBLOCK, &sent);
  if (status == GPURES_E_STALE) return OVER;
  if (status != GPURES_OK) return FAILED;
  if (!sent) return FULL;
  c->sent[c->in_flight++] = (sent_frame){buffer, published_us};
  c->stats.delivered++;
  return 1;
}

/*
** Sends queued frames while the window has room; their references go to
** `drop`. false when the consumer leaves: its session is over, or it was
** refused a new format and has now been sent every frame of the old one and
** then the refusal. Locked.
*/
static bool pump(consumer *c, frame_list *drop) {
  while (c->queued && c->in_flight < c->terms.window) {
    queued_frame *q = &c->queue[c->head];
    int went = send_now(c, q->frame, q->buffer, q->published_us, NULL);
    if (went == OVER) return false;
    if (went != SENT) return true; /* it stays queued: the next release or publish tries again */
    gpures__frames_add(drop, q->frame);
    c->head = (c->head + 1) % GPURES_FANOUT_MAX_DEPTH;
    c->queued--;
  }
  if (c->queued || !c->refusing) return true;
  /* A full socket keeps the refusal for the next release or publish: it is never lost. */
  return !gpures__send_refusal(gpures_session_fd(c->session), GPURES_E_UNSUPPORTED, "caps",
                               c->refusal);
}

/* Queues a frame for the consumer under its policy (room was checked for BLOCK). Locked. */
static void enqueue(consumer *c, gpures_handle frame, uint64_t buffer, uint64_t now, frame_list *drop) {
  if (c->queued == c->terms.depth) { /* DROP_OLDEST and LATEST: the oldest waiting frame goes */
    gpures__frames_add(drop, c->queue[c->head].frame);
    c->head = (c->head + 1) % GPURES_FANOUT_MAX_DEPTH;
    c->queued--;
    c->stats.dropped++;
  }
  if (gpures_clone(frame) != GPURES_OK) { /* the frame died under us: nothing to queue */
    c->stats.dropped++;
    return;
  }
  c->queue[(c->head + c->queued++) % GPURES_FANOUT_MAX_DEPTH] = (queued_frame){frame, buffer, now};
}

/*
** Offers the frame (its message: `msg`) to one consumer: SENT (sent or
** queued), OVER (it leaves, pump()) or FAILED (nothing of the frame is its,
** the send's status recorded). Locked.
*/
static int offer(consumer *c, gpures_handle frame, uint64_t buffer, uint64_t now,
                 const gpures__wire_message *msg, frame_list *drop) {
  if (c->refusing) return pump(c, drop) ? SENT : OVER; /* no frame of the new format for it */
  if (!c->queued && c->in_flight < c->terms.window) {
    int went = send_now(c, frame, buffer, now, msg);
    if (went != FULL) return went;
  }
  enqueue(c, frame, buffer, now, drop);
  return pump(c, drop) ? SENT : OVER;
}

/* The pixel format whose DRM fourcc this is; 0 for none. */
static uint32_t format_of_fourcc(uint32_t fourcc) {
  uint32_t n = 0;
  const gpures_pixel_format_info *t = gpures_pixel_format_table(&n);
  for (uint32_t i = 0; i < n; i++)
    if (t[i].drm_fourcc == fourcc) return t[i].id;
  return 0;
}

/* The frame's format, read from its encoded message: the descriptor is there already. */
static frame_format format_of(const gpures__wire_message *msg) {
  frame_format out;
  memset(&out, 0, sizeof out);
  out.kind = msg->h.kind;
  gpures__desc_extent(gpures__variant_of(out.kind), msg->body, &out.width, &out.height);
  if (out.kind == GPURES_KIND_DMA_BUF_HANDLE) {
    gpures_dma_buf_handle_desc d;
    memcpy(&d, msg->body, sizeof d);
    out.format = format_of_fourcc(d.fourcc);
    out.modifier = d.modifier;
  }
  return out;
}

static bool same_format(const frame_format *a, const frame_format *b) {
  return a->kind == b->kind && a->format == b->format && a->width == b->width &&
         a->height == b->height && a->modifier == b->modifier;
}

/*
** A new format: consumers whose rows do not take it are refused it. Each
** still gets the frames of the old format it has queued (under BLOCK, none is
** lost), then the reason, and leaves (pump()); none gets a frame of the new
** format. Locked.
*/
static void change_format(gpures_fanout *f, const frame_format *ff) {
  bool unblocked = false;
  for (uint32_t i = 0; i < f->num_consumers; i++) {
    consumer *c = f->consumers[i];
    if (c->refusing || gpures__caps_take(&c->terms, ff, c->refusal, sizeof c->refusal)) continue;
    c->refusing = true;
    unblocked |= c->terms.policy == GPURES_POLICY_BLOCK;
  }
  if (unblocked) gpures__fanout_wake(f); /* publishes it held back may go */
}

static struct timespec deadline_after(int32_t ms) {
  struct timespec t;
#if defined(__APPLE__)
  clock_gettime(CLOCK_REALTIME, &t); /* the clock its condition variables wait by */
#else
  clock_gettime(CLOCK_MONOTONIC, &t);
#endif
  t.tv_sec += ms / 1000;
  t.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}

/*
** Waits (locked) until no BLOCK consumer holds back a publish of a frame of
** format `next` (NULL: the stream's). No consumer pointer is kept across a
** wait: the lock is down meanwhile, and a consumer may leave and be freed.
*/
static int wait_for_room(gpures__op op, gpures_fanout *f, int32_t timeout_ms, const frame_format *next) {
  struct timespec deadline = deadline_after(timeout_ms > 0 ? timeout_ms : 0);
  for (bool expired = false;;) {
    if (f->closed) return gpures__fail(op, GPURES_E_STALE, "fanout", "the fan-out is closed");
    consumer *c = blocker(f, next);
    if (!c) return GPURES_OK;
    if (timeout_ms == 0 || expired)
      return gpures__fail(op, GPURES_E_TIMED_OUT, "timeout",
                          "consumer %llu (BLOCK) holds %u frames and has %u queued, its most",
                          (unsigned long long)c->id, c->in_flight, c->queued);
    if (timeout_ms < 0) pthread_cond_wait(&f->room, &f->mu);
    else expired = pthread_cond_timedwait(&f->room, &f->mu, &deadline) == ETIMEDOUT;
  }
}

/* A frame whose acquire fence cannot cross processes is refused before any consumer is touched. */
static int check_fence(gpures__op op, gpures_handle frame) {
  gpures_handle acquire = 0, release = 0;
  int status = gpures_fences_get(frame, &acquire, &release);
  (void)gpures_release(release);
  if (status != GPURES_OK) return gpures__refail(op, status);
  gpures__wire_message fence;
  gpures__op fence_op = op;
  status = acquire ? gpures__wire_encode(&fence_op, acquire, &fence) : GPURES_OK;
  (void)gpures_release(acquire);
  if (status == GPURES_OK) return GPURES_OK;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "acquire",
                      "the frame's acquire fence, a %s, cannot cross processes: give the frame an "
                      "fd-backed one (SyncFile, CpuFence, VkSemaphoreFd)",
                      gpures__kind_name(fence_op.kind));
}

int gpures_fanout_publish(gpures_fanout *f, gpures_handle frame, int32_t timeout_ms) {
  gpures__op op = {"publish", 0};
  if (!f) return gpures__fail(op, GPURES_E_NULL_POINTER, "fanout", "fanout is null");
  uint64_t buffer = 0;
  int status = gpures_buffer_id(frame, &buffer);
  if (status != GPURES_OK) return gpures__refail(op, status);
  gpures__wire_message msg; /* once for every consumer: the descriptor and metadata are the frame's */
  if ((status = gpures__wire_encode(&op, frame, &msg)) != GPURES_OK) return status;
  frame_format ff = format_of(&msg);
  /* The device from the descriptor already encoded: no second snapshot of the frame. */
  if ((status = gpures__device_of_desc(op, ff.kind, msg.body, &ff.device)) != GPURES_OK)
    return status;
  if (!buffer)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame",
                        "the frame has no buffer identity; a fan-out carries pooled or received frames");
  if ((status = check_fence(op, frame)) != GPURES_OK) return status;
  consumer *gone[GPURES_FANOUT_MAX_CONSUMERS];
  uint32_t num_gone = 0;
  frame_list drop = {NULL, 0, 0};
  gpures__fanout_ref(f); /* a close while this waits frees nothing under it */
  pthread_mutex_lock(&f->mu);
  /* A new format takes effect with the frame that brings it: a publish that waits in vain changes nothing. */
  bool changes = f->format.kind && !same_format(&f->format, &ff);
  status = wait_for_room(op, f, timeout_ms, changes ? &ff : NULL);
  if (status == GPURES_OK && changes) change_format(f, &ff);
  if (status == GPURES_OK) f->format = ff;
  uint64_t now = gpures_clock_us();
  int failed = GPURES_OK;
  for (uint32_t i = 0; status == GPURES_OK && i < f->num_consumers;) {
    consumer *c = f->consumers[i];
    int went = offer(c, frame, buffer, now, &msg, &drop);
    if (went == FAILED) { /* the consumers before it have the frame; the caller hears why */
      failed = gpures__refail(op, gpures_last_status());
      break;
    }
    if (went == SENT) {
      i++;
      continue;
    }
    gpures__fanout_remove(f, c, &drop); /* its session ended: it leaves */
    gone[num_gone++] = c;
  }
  if (status == GPURES_OK && failed == GPURES_OK) f->stats.published++;
  if (status == GPURES_OK) status = failed;
  pthread_mutex_unlock(&f->mu);
  gpures__frames_release(&drop);
  for (uint32_t i = 0; i < num_gone; i++) gpures__consumer_end(gone[i]);
  gpures__fanout_unref(f);
  return status;
}

void gpures__fanout_returned(gpures_fanout *f, gpures_session *s, uint64_t buffer) {
  frame_list drop = {NULL, 0, 0};
  consumer *gone = NULL;
  pthread_mutex_lock(&f->mu);
  consumer *c = gpures__fanout_find(f, s);
  for (uint32_t i = 0; c && i < c->in_flight; i++) {
    if (c->sent[i].buffer != buffer) continue;
    uint64_t held = gpures_clock_us() - c->sent[i].published_us;
    c->stats.latency_sum_us += held;
    if (held > c->stats.latency_max_us) c->stats.latency_max_us = held;
    c->stats.returned++;
    memmove(&c->sent[i], &c->sent[i + 1], (c->in_flight - i - 1) * sizeof c->sent[0]);
    c->in_flight--;
    break;
  }
  if (c && !pump(c, &drop)) gpures__fanout_remove(f, c, &drop), gone = c;
  if (c && c->terms.policy == GPURES_POLICY_BLOCK) gpures__fanout_wake(f);
  pthread_mutex_unlock(&f->mu);
  gpures__frames_release(&drop);
  if (gone) gpures__consumer_end(gone);
}

void gpures__fanout_ended(gpures_fanout *f, gpures_session *s) {
  frame_list drop = {NULL, 0, 0};
  pthread_mutex_lock(&f->mu);
  consumer *c = gpures__fanout_find(f, s);
  if (c) gpures__fanout_remove(f, c, &drop);
  pthread_mutex_unlock(&f->mu);
  gpures__frames_release(&drop);
  if (c) gpures__consumer_end(c);
}

int gpures_fanout_notify(gpures_fanout *f, uint32_t queue, uint64_t token) {
  gpures__op op = {"ask to hear of room in a fan-out", 0};
  if (!f) return gpures__fail(op, GPURES_E_NULL_POINTER, "fanout", "fanout is null");
  if (!gpures__event_queue_open(queue))
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u is not open", queue);
  pthread_mutex_lock(&f->mu);
  bool now = f->closed || !blocker(f, NULL);
  bool kept = now || gpures__grow((void **)&f->notices, &f->cap_notices, f->num_notices,
                                  sizeof *f->notices, 4, 1u << 20);
  if (!now && kept) f->notices[f->num_notices++] = (room_notice){queue, token};
  int status = f->closed ? GPURES_E_STALE : GPURES_OK;
  pthread_mutex_unlock(&f->mu);
  if (!kept) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory to remember one more wait");
  if (now) return gpures__event_post_status(queue, token, GPURES_EVENT_ROOM, status);
  return GPURES_OK;
}

int gpures_fanout_notify_cancel(gpures_fanout *f, uint32_t queue, uint64_t token) {
  if (!f) return gpures__fail((gpures__op){"withdraw a notice of", 0}, GPURES_E_NULL_POINTER, "fanout", "fanout is null");
  pthread_mutex_lock(&f->mu);
  for (uint32_t i = 0; i < f->num_notices; i++) {
    if (f->notices[i].queue != queue || f->notices[i].token != token) continue;
    f->notices[i] = f->notices[--f->num_notices];
    break;
  }
  pthread_mutex_unlock(&f->mu);
  return GPURES_OK;
}
#endif
