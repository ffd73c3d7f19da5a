/*
** subscribe.c: the consumer's side of a fan-out. A receiving session asks to
** join with a JOIN (its policy, depth, window and format rows) as the first
** message it sends, and the producer answers once: a WELCOME with the terms it
** granted, or a REFUSE with the reason, after which it hangs up. The answer is
** peeked before it is read, so that anything else (a peer that is no fan-out
** and sent a frame) stays for gpures_session_receive().
*/
#if !defined(_WIN32)
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "session.h"

static int send_join(gpures__op op, gpures_session *s, const gpures_subscription *asked) {
  gpures_subscription sub;
  memset(&sub, 0, sizeof sub);
  int status = gpures__copy_versioned(op, "structSize", asked, sizeof sub, &sub);
  if (status != GPURES_OK) return status;
  if (sub.num_caps > GPURES_FANOUT_MAX_CAPS) /* the producer checks the rest: it decides */
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "numCaps",
                        "numCaps is %u; a JOIN carries at most %u rows", sub.num_caps,
                        GPURES_FANOUT_MAX_CAPS);
  sub.struct_size = sizeof sub;
  sub.consumer = 0;
  struct {
    gpures__wire_header h;
    gpures_subscription sub;
  } msg;
  msg.h = gpures__session_header(GPURES__MSG_JOIN, 0, 0);
  msg.h.desc_size = sizeof sub;
  msg.sub = sub;
  uint32_t sent = 0;
  status = gpures__datagram_send(op, s->fd, GPURES_CHANNEL_NONBLOCK, &msg, sizeof msg, NULL, 0, &sent);
  if (status == GPURES_OK && !sent) /* the first message on an empty socket: never, but say so */
    status = gpures__fail(op, GPURES_E_OS_ERROR, "channel", "%s: the channel is full",
                          gpures__errno_name(EAGAIN));
  return status;
}

/* The type of the message waiting, without reading it: -1 when none came within timeout_ms. */
static int peek_type(gpures__op op, gpures_session *s, int32_t timeout_ms, int *out_type) {
  struct pollfd p = {s->fd, POLLIN, 0};
  *out_type = -1;
  int n;
  do n = poll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms);
  while (n < 0 && errno == EINTR);
  if (n < 0) return gpures__os_fail(op, "channel", "poll", errno);
  if (n == 0) return GPURES_OK;
  gpures__wire_header h;
  memset(&h, 0, sizeof h);
  ssize_t got = recv(s->fd, &h, sizeof h, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0) return gpures__fail(op, GPURES_E_STALE, "channel", "the producer hung up without answering");
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return GPURES_OK;
  if (got < 0) return gpures__os_fail(op, "channel", "recv", errno);
  /* A 1.2 header has no type (its bytes there are the body's): it is a HANDLE. */
  bool full = h.magic == GPURES__WIRE_MAGIC && h.header_size == sizeof h && got >= (ssize_t)sizeof h;
  *out_type = full ? (int)h.type : GPURES__MSG_HANDLE;
  return GPURES_OK;
}

bool gpures__session_subscribed(gpures_session *s) {
  pthread_mutex_lock(&s->mu);
  bool sent = s->join_sent;
  pthread_mutex_unlock(&s->mu);
  return sent;
}

int gpures__session_refusal(gpures__op op, gpures_session *s, const gpures__wire_header *h,
                            const unsigned char *body) {
  gpures__wire_refusal r;
  memset(&r, 0, sizeof r);
  memcpy(&r, body, h->desc_size < sizeof r ? h->desc_size : sizeof r);
  r.field[sizeof r.field - 1] = r.reason[sizeof r.reason - 1] = '\0';
  for (char *c = r.field; *c; c++) /* the peer's text names a field: letters, digits, dots */
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '[' || *c == ']'))
      *c = '_';
  for (char *c = r.reason; *c; c++) /* and its reason is one line of text */
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
  pthread_mutex_lock(&s->mu);
  s->ended = true;
  pthread_mutex_unlock(&s->mu);
  /* UNSUPPORTED but for a device mismatch: no other status a peer names is taken on its word. */
  int status = r.status == GPURES_E_DEVICE_MISMATCH ? r.status : GPURES_E_UNSUPPORTED;
  return gpures__fail(op, status, r.field, "the producer refused: %s", r.reason);
}

/* Reads the answer the peek saw: WELCOME fills *out, REFUSE fails with its reason. */
static int read_answer(gpures__op op, gpures_session *s, gpures_subscription *out) {
  gpures__datagram d;
  int status = gpures__datagram_receive(op, s->fd, GPURES_CHANNEL_NONBLOCK, &d);
  if (status == GPURES_OK && d.none)
    status = gpures__fail(op, GPURES_E_STALE, "channel", "the answer went away");
  gpures__wire_header h;
  unsigned char *body = NULL;
  if (status == GPURES_OK)
    status = gpures__wire_parse(&op, (unsigned char *)d.storage, d.n, d.nfds, &h, &body);
  gpures__datagram_close_fds(&d, 0);
  if (status != GPURES_OK) return status;
  if (h.type == GPURES__MSG_REFUSE) return gpures__session_refusal(op, s, &h, body);
  gpures_subscription granted;
  memset(&granted, 0, sizeof granted);
  memcpy(&granted, body, h.desc_size < sizeof granted ? h.desc_size : sizeof granted);
  if (h.type != GPURES__MSG_WELCOME || h.desc_size < offsetof(gpures_subscription, caps) ||
      granted.policy < GPURES_POLICY_BLOCK || granted.policy > GPURES_POLICY_LATEST ||
      !granted.depth || granted.depth > GPURES_FANOUT_MAX_DEPTH || !granted.window ||
      granted.window > GPURES_FANOUT_MAX_DEPTH || !granted.consumer)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "subscription",
                        "the producer's answer (type %u, %u bytes) is no WELCOME with terms in range",
                        h.type, h.desc_size);
  granted.struct_size = sizeof granted;
  pthread_mutex_lock(&s->mu);
  s->joined = true;
  pthread_mutex_unlock(&s->mu);
  if (out) {
    uint32_t size = out->struct_size < sizeof granted ? out->struct_size : (uint32_t)sizeof granted;
    granted.struct_size = size;
    memcpy(out, &granted, size);
  }
  return GPURES_OK;
}

int gpures_session_subscribe(gpures_session *s, const gpures_subscription *subscription,
                             int32_t timeout_ms, gpures_subscription *out_granted) {
  gpures__op op = {"subscribe", 0};
  if (!s) return gpures__fail(op, GPURES_E_NULL_POINTER, "session", "session is null");
  if (s->role != GPURES_SESSION_RECEIVE)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "session", "the session sends; only a receiver subscribes");
  if (out_granted) {
    int status = gpures__check_struct_size(op, "outGranted.structSize", out_granted->struct_size);
    if (status != GPURES_OK) return status;
  }
  pthread_mutex_lock(&s->mu);
  bool sent = s->join_sent, joined = s->joined, over = s->closed || s->ended;
  pthread_mutex_unlock(&s->mu);
  if (joined) return gpures__fail(op, GPURES_E_INVALID_VALUE, "session", "the session joined already");
  if (over) return gpures__fail(op, GPURES_E_STALE, "channel", "the session has ended");
  if (!sent) {
    if (!subscription)
      return gpures__fail(op, GPURES_E_NULL_POINTER, "subscription", "subscription is null");
    int status = send_join(op, s, subscription);
    if (status != GPURES_OK) return status;
    pthread_mutex_lock(&s->mu);
    s->join_sent = true;
    pthread_mutex_unlock(&s->mu);
  }
  int type = -1;
  int status = peek_type(op, s, timeout_ms, &type);
  if (status != GPURES_OK) return status;
  if (type < 0)
    return gpures__fail(op, GPURES_E_TIMED_OUT, "timeout", "the producer did not answer within %d ms",
                        timeout_ms);
  if (type != GPURES__MSG_WELCOME && type != GPURES__MSG_REFUSE)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "subscription",
                        "the peer sent a message of type %d before answering the JOIN: it is no "
                        "fan-out (receive what it sends instead)", type);
  return read_answer(op, s, out_granted);
}
#endif
