/*
** fuzz_channel.c: a libFuzzer target over gpures_channel_receive(), the code
** that reads what an untrusted peer process sends.
**
** Build with clang (libFuzzer comes with libclang-rt-14-dev on Debian):
**   CC=clang cmake -S . -B build-fuzz -DGPURES_BUILD_FUZZ=ON && cmake --build build-fuzz -j2
** which compiles this file and the library's sources together with
** -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all. Run:
**   build-fuzz/fuzz_channel -max_total_time=30 native/fuzz/corpus_channel
**
** One input is one datagram with fds attached, sent through a real
** SOCK_SEQPACKET socketpair (gpures_channel_pair) and received as a peer's
** message is. Its first bytes choose:
**   - the receive flags (GPURES_CHANNEL_ALLOW_UNSEALED or not);
**   - 0..7 fds to attach, each of a kind: a memfd sealed against shrinking,
**     a sealable memfd not yet sealed (made for this input), an unsealable
**     memfd, an empty memfd, a pipe, /dev/null, a directory, a socket, a
**     regular file, an eventfd;
**   - repairs that keep the rest of the input reaching deeper code: a valid
**     header (magic, ABI, sizes, fd count) for a chosen kind, descriptor fd
**     fields holding the positions of the attached fds.
** The rest is the datagram's bytes, as fuzzed.
**
** Besides ASan and UBSan, the target aborts when a promise breaks:
**   - receive consumes exactly this one datagram and never reports the end
**     (the peer is still there);
**   - on failure: handle 0, a message, and every fd the datagram carried
**     closed: the set of open fds is the same as before;
**   - on success: a handle of a kind that owns fds; each of its fds open,
**     close-on-exec, above stderr, of a kind that can back a frame, and (without
**     ALLOW_UNSEALED) a memfd sealed against shrinking or not a plain file;
**     its release closes them all, and the open fds are as before.
*/
#define FUZZ_NAME "fuzz_channel"
#include "fuzz.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* The wire header gpures sends (native/src/channel.h; kept in step by the C tests). */
typedef struct wire_header {
  uint32_t magic, abi, header_size, kind, desc_size, num_fds;
} wire_header;
#define WIRE_MAGIC 0x63727067u


/* ------------------------------------------------------------------ state */

enum fd_kind {
  K_SEALED, K_SEALABLE, K_UNSEALABLE, K_EMPTY, K_PIPE, K_DEV_NULL, K_DIRECTORY, K_SOCKET,
  K_FILE, K_EVENTFD, K_KINDS
};

static struct {
  int ready;
  int pair[2];       /* [0] sends as the peer, [1] receives */
  int own[K_KINDS];  /* one fd of each kind, sent as copies; -1 for those made per input */
  int spare[2];      /* the other ends of the pipe and the socketpair */
} fz;

static int memfd(long size, unsigned flags, int seals) {
  int fd = memfd_create("gpures-fuzz-channel", MFD_CLOEXEC | flags);
  if (fd < 0 || ftruncate(fd, size) != 0) abort();
  if (seals && fcntl(fd, F_ADD_SEALS, seals) != 0) abort();
  return fd;
}

static void fuzz_setup(void) {
  if (fz.ready) return;
  if (gpures_channel_pair(fz.pair) != GPURES_OK) abort();
  int p[2], s[2];
  if (pipe2(p, O_CLOEXEC) != 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) != 0)
    abort();
  char path[] = "/tmp/gpures-fuzz-channel-XXXXXX";
  int file = mkostemp(path, O_CLOEXEC);
  if (file < 0 || unlink(path) != 0 || ftruncate(file, 4096) != 0) abort();
  fz.own[K_SEALED] = memfd(4096, MFD_ALLOW_SEALING, F_SEAL_SHRINK);
  fz.own[K_SEALABLE] = -1; /* a receive seals it: a fresh one per input */
  fz.own[K_UNSEALABLE] = memfd(4096, 0, 0);
  fz.own[K_EMPTY] = -1;
  fz.own[K_PIPE] = p[0];
  fz.own[K_DEV_NULL] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  fz.own[K_DIRECTORY] = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  fz.own[K_SOCKET] = s[0];
  fz.own[K_FILE] = file;
  fz.own[K_EVENTFD] = eventfd(0, EFD_CLOEXEC);
  fz.spare[0] = p[1];
  fz.spare[1] = s[1];
  for (int k = 0; k < K_KINDS; k++)
    if (fz.own[k] < -1 || (fz.own[k] == -1 && k != K_SEALABLE && k != K_EMPTY)) abort();
  fz.ready = 1;
}

/* --------------------------------------------------------------- checks */


/*
** Whether a received fd may back a frame, as the receive promised. An opaque
** driver export (memory or a semaphore) may be a character device: NVIDIA's are.
*/
static void check_received_fd(int fd, int allow_unsealed, int opaque) {
  struct stat st;
  FUZZ_EXPECT(fd > 2 && fstat(fd, &st) == 0, "received fd %d is not open", fd);
  FUZZ_EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC, "received fd %d is not close-on-exec", fd);
  if (opaque && S_ISCHR(st.st_mode)) return;
  FUZZ_EXPECT(S_ISREG(st.st_mode) || (st.st_mode & S_IFMT) == 0,
              "received fd %d has file type 0%o, which cannot back a frame", fd,
              (unsigned)(st.st_mode & S_IFMT));
  if (!S_ISREG(st.st_mode) || allow_unsealed) return;
  int seals = fcntl(fd, F_GET_SEALS);
  FUZZ_EXPECT(seals >= 0 && (seals & F_SEAL_SHRINK),
              "received fd %d is a file or memfd that can still shrink (seals %d)", fd, seals);
}

/* The handle's fds, from its descriptor's fd rows. */
static int handle_fds(gpures_handle h, int *out) {
  uint32_t kind = 0, n_rows = 0;
  FUZZ_EXPECT(gpures_kind(h, &kind) == GPURES_OK, "kind of a received handle");
  const gpures_kind_info *info = gpures_kind_info_of(kind);
  FUZZ_EXPECT(info && info->ownership == GPURES_OWNED, "received a %u, which owns no fds", kind);
  _Alignas(8) unsigned char desc[512];
  memset(desc, 0, sizeof desc);
  FUZZ_EXPECT(gpures_describe(h, desc, info->desc_size) == GPURES_OK, "describe");
  const gpures_field_info *rows = gpures_kind_fields(kind, &n_rows);
  int n = 0;
  for (uint32_t r = 0; r < n_rows; r++) {
    const gpures_field_info *f = &rows[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t used = 1;
    if (f->count_offset) memcpy(&used, desc + f->count_offset, 4);
    for (uint32_t i = 0; i < used && i < f->count; i++) {
      int32_t fd;
      memcpy(&fd, desc + f->offset + i * f->stride, 4);
      out[n++] = fd;
    }
  }
  return n;
}

/* ------------------------------------------------------------- the input */

/* Header bytes. */
enum { H_FLAGS, H_NFDS, H_KINDS, H_SIZE = H_KINDS + 7 };

/* H_FLAGS bits */
#define F_ALLOW_UNSEALED 0x01u
#define F_FIX_HEADER 0x02u  /* magic, ABI, header and descriptor sizes, fd count */
#define F_FIX_FDS 0x04u     /* descriptor fd fields: 0, 1, ... */
#define F_VK 0x08u          /* with F_FIX_HEADER: VkOpaqueFd, else DmaBufHandle */
#define F_COUNT_LIES 0x10u  /* with F_FIX_HEADER: num_fds one more than attached */

/* An fd of `kind` to attach, and whether this input made it (then it closes it). */
static int fd_of(unsigned kind, int *made) {
  *made = 1;
  switch (kind % K_KINDS) {
  case K_SEALABLE: return memfd(4096, MFD_ALLOW_SEALING, 0);
  case K_EMPTY: return memfd(0, MFD_ALLOW_SEALING, 0);
  default: *made = 0; return fz.own[kind % K_KINDS];
  }
}

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

/* Makes the datagram's header true to itself, and its fd fields name the attached fds. */
static void repair(unsigned char *msg, size_t len, uint8_t flags, uint32_t nfds) {
  if (len < sizeof(wire_header)) return;
  uint32_t kind = (flags & F_VK) ? GPURES_KIND_VK_OPAQUE_FD : GPURES_KIND_DMA_BUF_HANDLE;
  uint32_t desc_size = (uint32_t)(len - sizeof(wire_header));
  if (flags & F_FIX_HEADER) {
    wire_header h = {WIRE_MAGIC, gpures_abi_version(), sizeof h, kind, desc_size,
                     nfds + ((flags & F_COUNT_LIES) ? 1u : 0u)};
    memcpy(msg, &h, sizeof h);
    if (desc_size >= 4) put_u32(msg + sizeof h, desc_size); /* struct_size */
  }
  if (!(flags & F_FIX_FDS)) return;
  uint32_t n_rows = 0, position = 0;
  memcpy(&kind, msg + 12, 4);
  const gpures_field_info *rows = gpures_kind_fields(kind, &n_rows);
  for (uint32_t r = 0; rows && r < n_rows; r++) {
    if (rows[r].type != GPURES_FIELD_FD) continue;
    for (uint32_t i = 0; i < rows[r].count; i++) {
      size_t at = sizeof(wire_header) + rows[r].offset + (size_t)i * rows[r].stride;
      if (at + 4 <= len) put_u32(msg + at, position++);
    }
  }
}

/* sendmsg() of one datagram with `fds` attached, as the peer. */
static void send_datagram(const unsigned char *msg, size_t len, const int *fds, uint32_t nfds) {
  if (send_with_fds(fz.pair[0], msg, len, fds, nfds, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len) {
    perror("fuzz_channel: sendmsg");
    abort();
  }
}

/* An opaque driver export: VkOpaqueFd, CudaVmmFd, a VkSemaphoreFd of handle type opaqueFd. */
static int is_opaque_export(gpures_handle h, uint32_t kind) {
  if (kind == GPURES_KIND_VK_OPAQUE_FD || kind == GPURES_KIND_CUDA_VMM_FD) return 1;
  if (kind != GPURES_KIND_VK_SEMAPHORE_FD) return 0;
  gpures_vk_semaphore_fd_desc d;
  memset(&d, 0, sizeof d);
  FUZZ_EXPECT(gpures_describe(h, &d, sizeof d) == GPURES_OK, "describe");
  return d.handle_type == 1; /* opaqueFd */
}

/* ------------------------------------------------------------- the target */

static void check_handle(gpures_handle h, int allow_unsealed, const fd_set_bits *before) {
  int fds[16];
  int n = handle_fds(h, fds);
  FUZZ_EXPECT(n >= 1, "a received handle with %d fds", n);
  uint32_t kind = 0;
  FUZZ_EXPECT(gpures_kind(h, &kind) == GPURES_OK, "the kind of a received handle");
  for (int i = 0; i < n; i++) check_received_fd(fds[i], allow_unsealed, is_opaque_export(h, kind));
  FUZZ_EXPECT(gpures_release(h) == GPURES_OK, "release of a received handle");
  for (int i = 0; i < n; i++)
    FUZZ_EXPECT(fcntl(fds[i], F_GETFD) < 0 && errno == EBADF, "fd %d outlived its handle", fds[i]);
  fd_set_bits after = open_fds();
  FUZZ_EXPECT(same_fds(before, &after), "open fds changed across receive and release");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  if (size < H_SIZE) return 0;
  uint8_t flags = data[H_FLAGS];
  uint32_t nfds = data[H_NFDS] % 8u;
  size_t len = size - H_SIZE;
  unsigned char *msg = malloc(len ? len : 1); /* exactly len bytes, so ASan sees any overrun */
  if (!msg) abort();
  if (len) memcpy(msg, data + H_SIZE, len);
  repair(msg, len, flags, nfds);

  fd_set_bits before = open_fds();
  int fds[8], made[8];
  for (uint32_t i = 0; i < nfds; i++) fds[i] = fd_of(data[H_KINDS + i], &made[i]);
  send_datagram(msg, len, fds, nfds);
  for (uint32_t i = 0; i < nfds; i++)
    if (made[i]) close(fds[i]); /* the datagram's copies are the receiver's now */
  free(msg);

  int allow = (flags & F_ALLOW_UNSEALED) != 0;
  uint32_t receive_flags = GPURES_CHANNEL_NONBLOCK | (allow ? GPURES_CHANNEL_ALLOW_UNSEALED : 0u);
  gpures_handle h = 7;
  int status = gpures_channel_receive(fz.pair[1], receive_flags, &h);
  if (status == GPURES_OK) {
    FUZZ_EXPECT(h != 0, "receive said OK with nothing received, a datagram waiting");
    check_handle(h, allow, &before);
  } else {
    FUZZ_EXPECT(h == 0, "a failed receive left handle 0x%llx", (unsigned long long)h);
    FUZZ_EXPECT(status != GPURES_E_STALE, "a datagram taken for the end of the channel");
    FUZZ_EXPECT(gpures_last_error()[0] != 0, "a failed receive (%d) without a message", status);
    fd_set_bits after = open_fds();
    FUZZ_EXPECT(same_fds(&before, &after), "a refused datagram left fds open: %s",
                gpures_last_error());
  }
  /* Exactly one datagram was taken: nothing is waiting now. */
  h = 7;
  status = gpures_channel_receive(fz.pair[1], GPURES_CHANNEL_NONBLOCK, &h);
  FUZZ_EXPECT(status == GPURES_OK && h == 0, "a second receive found %d, handle 0x%llx", status,
              (unsigned long long)h);
  return 0;
}
