/*
** join.c: admitting a consumer. Its channel's first message must be a JOIN
** with terms in range; the fan-out then admits it only while it has room for
** one more consumer, while the pool still covers what every consumer may hold
** (fanout.h's bound), and when the consumer's rows take the frames' format.
** Whatever the verdict, the consumer hears it: the terms granted (WELCOME)
** before any frame, or the reason (REFUSE) before the channel closes.
*/
#if !defined(_WIN32)
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fanout.h"

/* A verdict against a consumer: the field at fault and why. */
typedef struct refusal {
  int status; /* GPURES_OK: none */
  char field[32];
  char reason[400];
} refusal;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static bool refuse(refusal *r, int status, const char *field, const char *fmt, ...) {
  r->status = status;
  snprintf(r->field, sizeof r->field, "%s", field);
  va_list args;
  va_start(args, fmt);
  vsnprintf(r->reason, sizeof r->reason, fmt, args);
  va_end(args);
  return false;
}

bool gpures__send_refusal(int fd, int status, const char *field, const char *reason) {
  struct {
    gpures__wire_header h;
    gpures__wire_refusal r;
  } msg;
  memset(&msg, 0, sizeof msg);
  msg.h = gpures__session_header(GPURES__MSG_REFUSE, 0, 0);
  msg.h.desc_size = sizeof msg.r;
  msg.r.status = status;
  snprintf(msg.r.field, sizeof msg.r.field, "%s", field);
  snprintf(msg.r.reason, sizeof msg.r.reason, "%s", reason);
  uint32_t sent = 0;
  gpures__op op = {"refuse a consumer", 0};
  return gpures__datagram_send(op, fd, GPURES_CHANNEL_NONBLOCK, &msg, sizeof msg, NULL, 0, &sent) ==
             GPURES_OK && sent;
}

/* A consumer's memory bits that can carry frames of `kind` (0: the kind is not checked). */
static uint32_t memory_for(uint32_t kind) {
  if (kind == GPURES_KIND_DMA_BUF_HANDLE) return GPURES_MEMORY_DMA_BUF | GPURES_MEMORY_HOST;
  if (kind == GPURES_KIND_VK_OPAQUE_FD) return GPURES_MEMORY_OPAQUE_FD;
  if (kind == GPURES_KIND_CUDA_VMM_FD) return GPURES_MEMORY_CUDA_VMM_FD;
  return 0;
}

static bool row_takes(const gpures_format_cap *row, const frame_format *ff) {
  uint32_t memory = memory_for(ff->kind);
  if (!(row->memory & memory)) return false;
  if ((row->max_width && ff->width > row->max_width) || (row->max_height && ff->height > row->max_height))
    return false;
  if (ff->kind != GPURES_KIND_DMA_BUF_HANDLE) return true; /* opaque memory: no format to compare */
  return row->format == ff->format && row->modifier == ff->modifier;
}

bool gpures__caps_take(const gpures_subscription *terms, const frame_format *ff, char *why, size_t size) {
  if (!terms->num_caps || !ff->kind || !memory_for(ff->kind)) return true;
  for (uint32_t i = 0; i < terms->num_caps; i++)
    if (row_takes(&terms->caps[i], ff)) return true;
  const char *format = ff->format ? gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, ff->format) : NULL;
  snprintf(why, size, "the frames are %s %ux%u (%s, modifier 0x%llx), which none of its %u rows takes",
           gpures__kind_name(ff->kind), ff->width, ff->height, format ? format : "no pixel format",
           (unsigned long long)ff->modifier, terms->num_caps);
  return false;
}

/* The terms of a JOIN, defaults filled in, each in range. */
static bool check_terms(const gpures__wire_header *h, const unsigned char *body,
                        gpures_subscription *t, refusal *r) {
  memset(t, 0, sizeof *t);
  uint32_t size = 0;
  size_t least = offsetof(gpures_subscription, caps);
  if (h->desc_size >= 4) memcpy(&size, body, 4);
  if (size != h->desc_size || size < least || size > sizeof *t)
    return refuse(r, GPURES_E_INVALID_VALUE, "structSize",
                  "the JOIN's structSize is %u for %u bytes; a subscription has %zu to %zu", size,
                  h->desc_size, least, sizeof *t);
  memcpy(t, body, size);
  t->struct_size = sizeof *t;
  if (t->policy < GPURES_POLICY_BLOCK || t->policy > GPURES_POLICY_LATEST)
    return refuse(r, GPURES_E_INVALID_VALUE, "policy",
                  "policy is %u: BLOCK (1), DROP_OLDEST (2) or LATEST (3)", t->policy);
  if (!t->depth) t->depth = t->policy == GPURES_POLICY_LATEST ? 1 : 2;
  if (!t->window) t->window = 2;
  if (t->policy == GPURES_POLICY_LATEST && t->depth != 1)
    return refuse(r, GPURES_E_INVALID_VALUE, "depth", "depth is %u; a LATEST mailbox holds 1", t->depth);
  if (t->depth > GPURES_FANOUT_MAX_DEPTH || t->window > GPURES_FANOUT_MAX_DEPTH)
    return refuse(r, GPURES_E_INVALID_VALUE, t->depth > GPURES_FANOUT_MAX_DEPTH ? "depth" : "window",
                  "depth %u, window %u; each is 1 to %u", t->depth, t->window, GPURES_FANOUT_MAX_DEPTH);
  if (t->num_caps > GPURES_FANOUT_MAX_CAPS ||
      least + (size_t)t->num_caps * sizeof t->caps[0] > size)
    return refuse(r, GPURES_E_INVALID_VALUE, "numCaps", "numCaps is %u; the JOIN carries %zu rows",
                  t->num_caps, (size - least) / sizeof t->caps[0]);
  if (t->reserved || t->consumer)
    return refuse(r, GPURES_E_INVALID_VALUE, t->reserved ? "reserved" : "consumer",
                  "reserved and consumer are 0 in a JOIN");
  if (t->device.kind > GPURES_DEVICE_OPENCL || t->device.reserved)
    return refuse(r, GPURES_E_INVALID_VALUE, t->device.reserved ? "device.reserved" : "device.kind",
                  "device names kind %u (reserved %u): a GPURES_DEVICE_* id, reserved 0",
                  t->device.kind, t->device.reserved);
  for (uint32_t i = 0; i < t->num_caps; i++) {
    const gpures_format_cap *c = &t->caps[i];
    char field[32];
    bool format = gpures_pixel_format_info_of(c->format) != NULL;
    bool memory = c->memory && !(c->memory & ~GPURES__MEMORY_ALL);
    bool align = c->row_align <= 4096 && !(c->row_align & (c->row_align - 1)); /* 0, 1: any */
    snprintf(field, sizeof field, !format   ? "caps[%u].format"
                                  : !memory ? "caps[%u].memory"
                                  : !align  ? "caps[%u].rowAlign"
                                            : "caps[%u].flags", i);
    if (!format || !memory || !align || (c->flags & ~GPURES_CAP_EXTERNAL_ONLY))
      return refuse(r, GPURES_E_INVALID_VALUE, field,
                    "row %u names format %u, memory 0x%x, row alignment %u, flags 0x%x: a "
                    "PixelFormat id, GPURES_MEMORY_* bits, a power of two up to 4096, GPURES_CAP_* bits",
                    i, c->format, c->memory, c->row_align, c->flags);
  }
  memset(&t->caps[t->num_caps], 0, (GPURES_FANOUT_MAX_CAPS - t->num_caps) * sizeof t->caps[0]);
  return true;
}

/* Whether the fan-out takes a consumer of terms `t` now. Locked. */
static bool admissible(gpures_fanout *f, const gpures_subscription *t, refusal *r) {
  char why[300];
  if (f->closed) return refuse(r, GPURES_E_STALE, "fanout", "the fan-out is closed");
  if (f->num_consumers >= f->desc.max_consumers)
    return refuse(r, GPURES_E_UNSUPPORTED, "consumers", "the fan-out serves %u consumers, its most",
                  f->num_consumers);
  uint32_t bound = gpures__fanout_bound(f, t);
  if (bound > f->desc.slots)
    return refuse(r, GPURES_E_UNSUPPORTED, "window",
                  "the pool has %u slots; with this consumer (depth %u, window %u) the frames "
                  "held could reach %u (reserve + deepest queue + every window)",
                  f->desc.slots, t->depth, t->window, bound);
  if (!gpures__caps_take(t, &f->format, why, sizeof why))
    return refuse(r, GPURES_E_UNSUPPORTED, "caps", "%s", why);
  const gpures_device_id *frames = f->desc.device.kind ? &f->desc.device : &f->format.device;
  if (gpures_device_compare(frames, &t->device) == GPURES_DEVICE_DIFFERENT)
    return refuse(r, GPURES_E_DEVICE_MISMATCH, "device",
                  "the frames are on another device (%s) than the consumer's (%s)",
                  gpures_enum_name(GPURES_ENUM_DEVICE_ID_KIND, frames->kind),
                  gpures_enum_name(GPURES_ENUM_DEVICE_ID_KIND, t->device.kind));
  return true;
}

/* The consumer's record, and a WELCOME with its terms sent before any frame can be. Locked. */
static int admit(gpures__op op, gpures_fanout *f, gpures_session *s, const gpures_subscription *t,
                 uint64_t *out_id) {
  consumer *c = gpures__alloc(sizeof *c);
  if (!c || !gpures__grow((void **)&f->consumers, &f->cap_consumers, f->num_consumers,
                          sizeof *f->consumers, 8, GPURES_FANOUT_MAX_CONSUMERS)) {
    gpures__free(c);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for one more consumer");
  }
  memset(c, 0, sizeof *c);
  c->id = ++f->next_id;
  c->session = s;
  c->terms = *t;
  c->terms.consumer = c->id;
  c->stats.struct_size = sizeof c->stats;
  c->stats.consumer = c->id;
  c->stats.policy = t->policy, c->stats.depth = t->depth, c->stats.window = t->window;
  struct {
    gpures__wire_header h;
    gpures_subscription terms;
  } msg;
  msg.h = gpures__session_header(GPURES__MSG_WELCOME, 0, 0);
  msg.h.desc_size = sizeof msg.terms;
  msg.terms = c->terms;
  /*
  ** The session's end reaches the fan-out from now on (the service thread's
  ** hook waits for the lock held here, then finds the consumer): one that
  ** hangs up right after its WELCOME still leaves.
  */
  gpures__session_set_fanout(s, f);
  uint32_t sent = 0;
  int status = gpures__datagram_send(op, gpures_session_fd(s), GPURES_CHANNEL_NONBLOCK, &msg,
                                     sizeof msg, NULL, 0, &sent);
  if (status == GPURES_OK && !sent)
    status = gpures__fail(op, GPURES_E_OS_ERROR, "fd", "the consumer's channel is full before its WELCOME");
  if (status != GPURES_OK) {
    gpures__session_set_fanout(s, NULL);
    gpures__free(c);
    return status;
  }
  f->consumers[f->num_consumers++] = c;
  f->stats.joined++;
  f->stats.consumers = f->num_consumers;
  f->stats.bound = gpures__fanout_bound(f, NULL);
  *out_id = c->id;
  return GPURES_OK;
}

/* Reads the first message: a JOIN's terms into *t, or the refusal. */
static bool read_join(gpures__op op, int fd, gpures_subscription *t, refusal *r) {
  gpures__datagram d;
  int status = gpures__datagram_receive(op, fd, GPURES_CHANNEL_NONBLOCK, &d);
  if (status == GPURES_E_STALE)
    return refuse(r, GPURES_E_STALE, "fd", "the consumer hung up before it joined");
  if (status == GPURES_OK && d.none) /* poll() said readable, but it went: never on a socket of ours */
    return refuse(r, GPURES_E_STALE, "fd", "the consumer's JOIN went away");
  gpures__wire_header h;
  unsigned char *body = NULL;
  if (status == GPURES_OK)
    status = gpures__wire_parse(&op, (unsigned char *)d.storage, d.n, d.nfds, &h, &body);
  gpures__datagram_close_fds(&d, 0);
  if (status != GPURES_OK)
    return refuse(r, status, gpures_last_error_field(), "%s", gpures_last_error());
  if (h.type != GPURES__MSG_JOIN)
    return refuse(r, GPURES_E_INVALID_VALUE, "type",
                  "the consumer's first message is of type %u; a consumer joins with a JOIN", h.type);
  return check_terms(&h, body, t, r);
}

static int admit_or_refuse(gpures__op op, gpures_fanout *f, int fd, uint64_t *out_consumer);

int gpures_fanout_join(gpures_fanout *f, int fd, int32_t timeout_ms, uint64_t *out_consumer) {
  gpures__op op = {"admit a consumer to a fan-out", 0};
  if (!out_consumer) return gpures__fail(op, GPURES_E_NULL_POINTER, "outConsumer", "outConsumer is null");
  *out_consumer = 0;
  if (!f) return gpures__fail(op, GPURES_E_NULL_POINTER, "fanout", "fanout is null");
  int type = 0;
  socklen_t size = sizeof type;
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_SEQPACKET)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  struct pollfd p = {fd, POLLIN, 0};
  gpures__fanout_ref(f); /* a close while this waits for the JOIN frees nothing under it */
  int ready = poll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms);
  int status = ready > 0 ? admit_or_refuse(op, f, fd, out_consumer)
                         : gpures__fail(op, GPURES_E_TIMED_OUT, "timeout", "no JOIN came within %d ms",
                                        timeout_ms);
  gpures__fanout_unref(f);
  return status;
}

/* The JOIN waiting on fd, read and judged; fd is the fan-out's whatever the verdict. */
static int admit_or_refuse(gpures__op op, gpures_fanout *f, int fd, uint64_t *out_consumer) {
  gpures_subscription t;
  refusal r = {GPURES_OK, "", ""};
  gpures_session *s = NULL;
  bool ok = read_join(op, fd, &t, &r);
  if (ok && gpures_session_open(fd, GPURES_SESSION_SEND, &s) != GPURES_OK)
    ok = refuse(&r, GPURES_E_OUT_OF_MEMORY, "", "%s", gpures_last_error());
  int status = GPURES_OK;
  pthread_mutex_lock(&f->mu);
  if (ok) ok = admissible(f, &t, &r);
  if (ok) status = admit(op, f, s, &t, out_consumer);
  if (!ok || status != GPURES_OK) f->stats.refused++;
  pthread_mutex_unlock(&f->mu);
  if (ok && status == GPURES_OK) return GPURES_OK;
  if (!ok) gpures__send_refusal(fd, r.status, r.field, r.reason);
  else (void)gpures__send_refusal(fd, status, gpures_last_error_field(), gpures_last_error());
  if (s) (void)gpures_session_close(s); /* its fd with it */
  else (void)close(fd);
  return ok ? status : gpures__fail(op, r.status, r.field, "%s", r.reason);
}
#endif
