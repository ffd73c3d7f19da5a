/*
** windows.c: channels on Windows. The kinds that own fds do not exist there,
** so there is nothing to send: every call says so (map/windows.c does the
** same for mappings).
*/
#if defined(_WIN32)
#include "../internal.h"

static int unsupported(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "channels need Unix domain sockets and owned fds, which Windows lacks");
}

int gpures_channel_listen(const char *path, int *out_fd) {
  (void)path;
  if (out_fd) *out_fd = -1;
  return unsupported("listen on");
}

int gpures_channel_accept(int listen_fd, uint32_t flags, int *out_fd) {
  (void)listen_fd, (void)flags;
  if (out_fd) *out_fd = -1;
  return unsupported("accept on");
}

int gpures_channel_connect(const char *path, uint32_t flags, int *out_fd) {
  (void)path, (void)flags;
  if (out_fd) *out_fd = -1;
  return unsupported("connect to");
}

int gpures_channel_pair(int out_fds[2]) {
  if (out_fds) out_fds[0] = out_fds[1] = -1;
  return unsupported("make channel pair");
}

int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent) {
  (void)fd, (void)handle, (void)flags;
  if (out_sent) *out_sent = 0;
  return unsupported("send");
}

int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle) {
  (void)fd, (void)flags;
  if (out_handle) *out_handle = 0;
  return unsupported("receive");
}

int gpures_channel_wait(int fd, uint32_t events, int32_t timeout_ms, uint32_t *out_ready) {
  (void)fd, (void)events, (void)timeout_ms;
  if (out_ready) *out_ready = 0;
  return unsupported("wait on");
}

int gpures_channel_shutdown(int fd) {
  (void)fd;
  return unsupported("shut down");
}

int gpures_channel_close(int fd) {
  (void)fd;
  return unsupported("close");
}

int gpures_channel_unlink(const char *path) {
  (void)path;
  return unsupported("remove socket");
}
#endif
