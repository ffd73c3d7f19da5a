/*
** windows.c: sessions on Windows. They run over channels, which Windows
** lacks (channel/windows.c), so every call says so.
*/
#if defined(_WIN32)
#include "../internal.h"

static int unsupported(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "sessions run over channels, which need Unix domain sockets and owned fds");
}

int gpures_session_open(int fd, uint32_t flags, gpures_session **out_session) {
  (void)fd, (void)flags;
  if (out_session) *out_session = NULL;
  return unsupported("open a session on");
}

int gpures_session_send(gpures_session *s, gpures_handle h, uint32_t flags, uint32_t *out_sent) {
  (void)s, (void)h, (void)flags;
  if (out_sent) *out_sent = 0;
  return unsupported("send");
}

int gpures_session_receive(gpures_session *s, uint32_t flags, gpures_handle *out_handle) {
  (void)s, (void)flags;
  if (out_handle) *out_handle = 0;
  return unsupported("receive");
}

int gpures_session_fd(gpures_session *s) { return (void)s, -1; }

int gpures_session_bell(gpures_session *s, int *out_fd) {
  (void)s;
  if (out_fd) *out_fd = -1;
  return unsupported("make a doorbell for");
}

int gpures_session_stats_get(gpures_session *s, gpures_session_stats *out) {
  (void)s, (void)out;
  return unsupported("read the stats of");
}

int gpures_session_forgotten(gpures_session *s, uint64_t *ids, uint32_t capacity,
                             uint32_t *out_count) {
  (void)s, (void)ids, (void)capacity;
  if (out_count) *out_count = 0;
  return unsupported("read the forgotten buffers of");
}

int gpures_session_subscribe(gpures_session *s, const gpures_subscription *subscription,
                             int32_t timeout_ms, gpures_subscription *out_granted) {
  (void)s, (void)subscription, (void)timeout_ms, (void)out_granted;
  return unsupported("subscribe");
}

int gpures_session_close(gpures_session *s) { return (void)s, GPURES_OK; }
int gpures_session_shutdown(gpures_session *s) { return (void)s, GPURES_OK; }
#endif
