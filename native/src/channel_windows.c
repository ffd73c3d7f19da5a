/*
** channel_windows.c: channels and CPU mappings on Windows. The kinds that own
** fds do not exist there, so neither does anything to send or map: every
** call says so.
*/
#if defined(_WIN32)
#include "internal.h"

static int unsupported(const char *verb, const char *what) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "%s need Unix domain sockets and owned fds, which Windows lacks", what);
}

#define CHANNELS "channels"
#define MAPPINGS "mappings"

int gpures_channel_listen(const char *path, int *out_fd) {
  (void)path;
  if (out_fd) *out_fd = -1;
  return unsupported("listen on", CHANNELS);
}

int gpures_channel_accept(int listen_fd, uint32_t flags, int *out_fd) {
  (void)listen_fd, (void)flags;
  if (out_fd) *out_fd = -1;
  return unsupported("accept on", CHANNELS);
}

int gpures_channel_connect(const char *path, uint32_t flags, int *out_fd) {
  (void)path, (void)flags;
  if (out_fd) *out_fd = -1;
  return unsupported("connect to", CHANNELS);
}

int gpures_channel_pair(int out_fds[2]) {
  if (out_fds) out_fds[0] = out_fds[1] = -1;
  return unsupported("make channel pair", CHANNELS);
}

int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent) {
  (void)fd, (void)handle, (void)flags;
  if (out_sent) *out_sent = 0;
  return unsupported("send", CHANNELS);
}

int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle) {
  (void)fd, (void)flags;
  if (out_handle) *out_handle = 0;
  return unsupported("receive", CHANNELS);
}

int gpures_channel_wait(int fd, uint32_t events, int32_t timeout_ms, uint32_t *out_ready) {
  (void)fd, (void)events, (void)timeout_ms;
  if (out_ready) *out_ready = 0;
  return unsupported("wait on", CHANNELS);
}

int gpures_channel_shutdown(int fd) {
  (void)fd;
  return unsupported("shut down", CHANNELS);
}

int gpures_channel_close(int fd) {
  (void)fd;
  return unsupported("close", CHANNELS);
}

int gpures_channel_unlink(const char *path) {
  (void)path;
  return unsupported("remove socket", CHANNELS);
}

int gpures_map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
               uint64_t *out_size) {
  (void)handle, (void)index, (void)flags;
  if (out_ptr) *out_ptr = NULL;
  if (out_size) *out_size = 0;
  return unsupported("map", MAPPINGS);
}

int gpures_unmap(void *ptr) {
  (void)ptr;
  return unsupported("unmap", MAPPINGS);
}

uint64_t gpures_live_mappings(void) { return 0; }
#endif
