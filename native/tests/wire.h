/*
** wire.h: the session wire header, as the tests and fuzzers that play a
** hostile peer write it by hand (native/src/channel/channel.h's
** gpures__wire_header; the round trips of the C tests keep the two in step).
**   header_of(type, buffer, serial)  a header of that message, no descriptor
**   announce(sock, buffer, serial)   sends the FRAME that first names `buffer`
**   read_header(sock, &h, ms)        takes the next datagram, keeping its header
*/
#ifndef GPURES_TEST_WIRE_H
#define GPURES_TEST_WIRE_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fd_util.h"
#include "fixtures.gen.h"
#include "gpures.h"

typedef struct wire_header {
  uint32_t magic, abi, header_size, kind, desc_size, num_fds, type, meta_size;
  uint64_t buffer, serial;
} wire_header;
_Static_assert(sizeof(wire_header) == 48, "the wire header has 48 bytes");
#define WIRE_MAGIC 0x63727067u
enum { MSG_HANDLE, MSG_FRAME, MSG_RELEASE, MSG_FORGET, MSG_KEEP, MSG_FENCE, MSG_BELL, MSG_TYPES };

static inline wire_header header_of(uint32_t type, uint64_t buffer, uint64_t serial) {
  wire_header h;
  memset(&h, 0, sizeof h);
  h.magic = WIRE_MAGIC;
  h.abi = gpures_abi_version();
  h.header_size = sizeof h;
  h.type = type;
  h.buffer = buffer;
  h.serial = serial;
  return h;
}

/*
** The FRAME a sender's first sending of `buffer` is: an RGBA frame over a memfd
** of 4096 bytes, sealed as a pool's. 0 when the whole datagram went.
*/
static inline int announce(int sock, uint64_t buffer, uint64_t serial) {
  int fd = memfd_create("gpures-test-announce", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, 4096) != 0) abort();
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
  struct {
    wire_header h;
    gpures_dma_buf_handle_desc d;
  } msg;
  memset(&msg, 0, sizeof msg);
  msg.h = header_of(MSG_FRAME, buffer, serial);
  msg.h.kind = GPURES_KIND_DMA_BUF_HANDLE;
  msg.h.desc_size = sizeof msg.d;
  msg.h.num_fds = 1;
  msg.d = gpures_fixture_dma_buf_handle_rgba(0);
  msg.d.fds[0] = 0;
  for (int i = 1; i < 4; i++) msg.d.fds[i] = -1;
  ssize_t n = send_with_fds(sock, &msg, sizeof msg, &fd, 1, 0);
  close(fd);
  return n == (ssize_t)sizeof msg ? 0 : -1;
}

/* Waits up to timeout_ms for a datagram at sock and takes it, closing its fds; false when none came. */
static inline bool read_header(int sock, wire_header *h, int timeout_ms) {
  unsigned char buf[2048];
  struct pollfd pfd = {sock, POLLIN, 0};
  if (poll(&pfd, 1, timeout_ms) != 1) return false;
  ssize_t n = recv_closing_fds(sock, buf, sizeof buf, MSG_CMSG_CLOEXEC | MSG_DONTWAIT, NULL);
  if (n < (ssize_t)sizeof *h) return false;
  memcpy(h, buf, sizeof *h);
  return true;
}

#endif /* GPURES_TEST_WIRE_H */
