/*
** test_channel.c: handles across processes (channels over SOCK_SEQPACKET
** with SCM_RIGHTS) and CPU mappings of owned fds (Linux: memfds).
**
** Round trips over a socketpair, a path, the abstract namespace and a fork;
** process-local kinds refused; a hostile peer's malformed messages (crafted
** here with sendmsg) refused with every fd they carried closed, the open fd
** count unchanged, and the channel still usable afterwards; waits, shutdown
** and the end of a channel; map/unmap of a memfd both ways.
**
** Hostile peers in processes of their own (fork): memory the peer could
** shrink under a mapping (sealed on receipt, or refused), fds that cannot
** back a frame, a frame that arrives while this process is out of fds
** (reported as dropped), a peer that dies half way, a flood; and listeners
** that remove only their own socket file, and OS failures that name the
** errno and the path.
*/
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "check.h"
#include "fd_util.h"
#include "fork_util.h"


/* The wire header channel_posix.c sends (kept in step with it by the round trips). */
typedef struct wire_header {
  uint32_t magic, abi, header_size, kind, desc_size, num_fds;
} wire_header;
#define WIRE_MAGIC 0x63727067u


/*
** A memfd as a producer makes one for a frame: it allows sealing, so the
** receiver can seal it against shrinking (an unsealable one is refused).
*/
static int frame_memfd(long size) {
  int fd = memfd_create("gpures-test-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, size) != 0) {
    perror("memfd_create/ftruncate");
    abort();
  }
  return fd;
}

/* A DmaBufHandle of an RGBA frame (fixtures.gen.h) over fd: 0, and a failed check, if refused. */
static gpures_handle rgba_frame(int fd) {
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(fd);
  gpures_handle h = 0;
  CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h));
  return h;
}

/* A connected channel pair; returns the open fd count from before it. */
static int open_pair(int pair[2]) {
  int base = count_open_fds();
  CHECK_OK(gpures_channel_pair(pair));
  return base;
}

/* Closes both ends: the open fd count must be back at `base`. */
static void close_pair(int pair[2], int base) {
  gpures_channel_close(pair[0]);
  gpures_channel_close(pair[1]);
  CHECK_EQ(count_open_fds(), base);
}

/*
** `prefix`-<pid>: a socket path of this process's own. A path in the file
** system gets ".sock" and no file left at it; "@..." is an abstract name.
*/
static void socket_path(char *out, size_t size, const char *prefix) {
  snprintf(out, size, "%s-%d%s", prefix, (int)getpid(), prefix[0] == '@' ? "" : ".sock");
  if (prefix[0] != '@') unlink(out);
}

static int patterned_memfd(long size, unsigned char seed) {
  int fd = frame_memfd(size);
  unsigned char buf[256];
  for (long at = 0; at < size; at += (long)sizeof buf) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(seed + at + i);
    if (pwrite(fd, buf, sizeof buf, at) != (ssize_t)sizeof buf) abort();
  }
  return fd;
}

static int has_pattern(int fd, long size, unsigned char seed) {
  unsigned char buf[256];
  for (long at = 0; at < size; at += (long)sizeof buf) {
    if (pread(fd, buf, sizeof buf, at) != (ssize_t)sizeof buf) return 0;
    for (size_t i = 0; i < sizeof buf; i++)
      if (buf[i] != (unsigned char)(seed + at + i)) return 0;
  }
  return 1;
}

/* Sends raw bytes with fds attached, as a hostile peer would. */
static void send_raw(int fd, const void *bytes, size_t len, const int *fds, size_t nfds) {
  if (send_with_fds(fd, bytes, len, fds, nfds, MSG_NOSIGNAL) < 0) {
    perror("sendmsg");
    abort();
  }
}

/* A message as gpures sends it: header, then the descriptor. */
typedef struct message {
  wire_header h;
  unsigned char desc[512];
} message;

static message dma_buf_message(gpures_dma_buf_handle_desc d) {
  message m;
  memset(&m, 0, sizeof m);
  m.h = (wire_header){WIRE_MAGIC, gpures_abi_version(), sizeof(wire_header),
                      GPURES_KIND_DMA_BUF_HANDLE, sizeof d, d.num_fds};
  for (uint32_t i = 0; i < d.num_fds; i++) d.fds[i] = (int32_t)i;
  memcpy(m.desc, &d, sizeof d);
  return m;
}

static size_t message_size(const message *m) { return sizeof m->h + m->h.desc_size; }

/*
** Sends `m` with `fds` attached (opened by the caller, counted as open
** before the call), closes this side's copies, and checks that receive with
** `flags` fails with `status` naming `field`, that no fd stayed open, and
** that the channel still carries a good handle.
*/
static void refused_with(int sender, int receiver, const message *m, size_t len, const int *fds,
                         size_t nfds, uint32_t flags, int status, const char *field, int line) {
  int before = count_open_fds() - (int)nfds;
  send_raw(sender, m, len, fds, nfds);
  for (size_t i = 0; i < nfds; i++) close(fds[i]);
  gpures_handle h = 1;
  if (!check_fails_at(__FILE__, line, "gpures_channel_receive (malformed)",
                      gpures_channel_receive(receiver, flags, &h), status, field))
    fprintf(stderr, "    (message of the test at line %d)\n", line);
  CHECK_EQ(h, 0);
  CHECK_EQ(count_open_fds(), before);

  /* The channel survives: a good handle still goes through. */
  int fd = patterned_memfd(4096, 3);
  gpures_handle good = rgba_frame(fd), got = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_send(sender, good, 0, &sent));
  CHECK_OK(gpures_channel_receive(receiver, 0, &got));
  CHECK(got != 0);
  CHECK_OK(gpures_release(good));
  CHECK_OK(gpures_release(got));
  close(fd);
  CHECK_EQ(count_open_fds(), before);
}
/* refused_with() and `nfds` fresh frame memfds of 4096 bytes. */
static void refused(int sender, int receiver, const message *m, size_t len, size_t nfds,
                    int status, const char *field, int line) {
  int fds[32];
  for (size_t i = 0; i < nfds; i++) fds[i] = frame_memfd(4096);
  refused_with(sender, receiver, m, len, fds, nfds, 0, status, field, line);
}
#define REFUSED(m, len, nfds, status, field) \
  refused(pair[0], pair[1], (m), (len), (nfds), (status), (field), __LINE__)

/* ------------------------------------------------------------- round trips */

static void round_trip_over_a_socketpair_moves_the_fds_and_the_layout(void) {
  int base = count_open_fds();
  uint64_t live = gpures_live_handles(0);
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  CHECK(fd_is_cloexec(pair[0]) && fd_is_cloexec(pair[1]));
  CHECK(fcntl(pair[0], F_GETFL) & O_NONBLOCK);

  int luma = patterned_memfd(GPURES_FIXTURE_DMA_BUF_HANDLE_FD0_SIZE, 1);
  int chroma = patterned_memfd(GPURES_FIXTURE_DMA_BUF_HANDLE_FD1_SIZE, 2);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(luma, chroma);
  d.modifier = 0;
  gpures_handle mine = 0, theirs = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_create(GPURES_KIND_DMA_BUF_HANDLE, &d, NULL, &mine));
  CHECK_OK(gpures_channel_send(pair[0], mine, 0, &sent));
  CHECK_EQ(sent, 1);
  CHECK_OK(gpures_channel_receive(pair[1], 0, &theirs));
  CHECK(theirs != 0 && theirs != mine);
  uint32_t kind = 0, refs = 0;
  CHECK_OK(gpures_kind(theirs, &kind));
  CHECK_EQ(kind, GPURES_KIND_DMA_BUF_HANDLE);
  CHECK_OK(gpures_refcount(theirs, &refs));
  CHECK_EQ(refs, 1);

  gpures_dma_buf_handle_desc a, b;
  CHECK_OK(gpures_dma_buf_handle_describe(mine, (a.struct_size = sizeof a, &a)));
  CHECK_OK(gpures_dma_buf_handle_describe(theirs, (b.struct_size = sizeof b, &b)));
  CHECK_EQ(b.num_fds, 2);
  CHECK_EQ(b.fourcc, a.fourcc);
  CHECK_EQ(b.width, d.width);
  CHECK_EQ(b.height, d.height);
  CHECK_EQ(b.num_planes, 2);
  CHECK(memcmp(b.planes, a.planes, sizeof a.planes) == 0);
  /* New fds of the same memory, owned by the new handle, close-on-exec. */
  for (int i = 0; i < 2; i++) {
    CHECK(b.fds[i] != a.fds[i]);
    CHECK(same_file(b.fds[i], a.fds[i]));
    CHECK(fd_is_cloexec(b.fds[i]));
  }
  CHECK(has_pattern(b.fds[0], GPURES_FIXTURE_DMA_BUF_HANDLE_FD0_SIZE, 1));
  CHECK(has_pattern(b.fds[1], GPURES_FIXTURE_DMA_BUF_HANDLE_FD1_SIZE, 2));
  CHECK_EQ(gpures_live_handles(0), live + 2);

  /* The receiver's handle closes its fds on its last release; the sender's are its own. */
  int received0 = b.fds[0], received1 = b.fds[1];
  CHECK_OK(gpures_release(theirs));
  CHECK(fd_is_closed(received0) && fd_is_closed(received1));
  CHECK(fd_is_open(a.fds[0]));
  CHECK_OK(gpures_release(mine));
  close(luma);
  close(chroma);
  CHECK_OK(gpures_channel_close(pair[0]));
  CHECK_OK(gpures_channel_close(pair[1]));
  CHECK_EQ(gpures_live_handles(0), live);
  CHECK_EQ(count_open_fds(), base);
}

static void vk_opaque_fd_crosses_without_its_slot_release(void) {
  int pair[2], base = open_pair(pair);
  int fd = patterned_memfd(8192, 9);
  gpures_vk_opaque_fd_desc d = gpures_fixture_vk_opaque_fd(fd); /* with a slot release */
  d.size = 8192;
  gpures_handle mine = 0, theirs = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_create(GPURES_KIND_VK_OPAQUE_FD, &d, NULL, &mine));
  CHECK_OK(gpures_channel_send(pair[0], mine, 0, &sent));
  CHECK_OK(gpures_channel_receive(pair[1], 0, &theirs));
  gpures_vk_opaque_fd_desc got;
  got.struct_size = sizeof got;
  CHECK_OK(gpures_vk_opaque_fd_describe(theirs, &got));
  CHECK_EQ(got.flags, 0); /* the gate is an address of the sender */
  CHECK(got.slot_release.gate == NULL);
  CHECK_EQ(got.slot_release.value, 0);
  CHECK_EQ(got.size, 8192);
  CHECK_EQ(got.memory_type_index, d.memory_type_index);
  CHECK_EQ(got.offset, d.offset);
  CHECK_EQ(got.dedicated, 1);
  CHECK_EQ(got.width, d.width);
  CHECK_EQ(got.height, d.height);
  CHECK_EQ(got.format, GPURES_PF_RGBA_U8);
  CHECK(memcmp(got.device_uuid, d.device_uuid, 16) == 0);
  CHECK(same_file(got.fd, fd) && got.fd != fd);
  CHECK(has_pattern(got.fd, 8192, 9));
  gpures_fixture_gate = 0;
  CHECK_OK(gpures_slot_release(theirs)); /* nothing to store: no gate crossed */
  CHECK_EQ(gpures_fixture_gate, 0);
  CHECK_OK(gpures_slot_release(mine));
  CHECK_EQ(gpures_fixture_gate, d.slot_release.value);
  CHECK_OK(gpures_release(theirs));
  CHECK_OK(gpures_release(mine));
  close(fd);
  close_pair(pair, base);
}

static void round_trip(const char *path) {
  int listener = -1, client = -1, server = -1;
  CHECK_OK(gpures_channel_listen(path, &listener));
  CHECK(fd_is_cloexec(listener));
  CHECK_OK(gpures_channel_accept(listener, GPURES_CHANNEL_NONBLOCK, &server));
  CHECK_EQ(server, -1); /* nobody connected yet */
  CHECK_OK(gpures_channel_connect(path, 0, &client));
  CHECK_OK(gpures_channel_accept(listener, 0, &server));
  CHECK(server >= 0 && fd_is_cloexec(server) && fd_is_cloexec(client));

  int fd = patterned_memfd(4096, 5);
  gpures_handle mine = rgba_frame(fd), theirs = 0;
  uint32_t sent = 0;
  /* Both directions. */
  CHECK_OK(gpures_channel_send(client, mine, 0, &sent));
  CHECK_OK(gpures_channel_receive(server, 0, &theirs));
  CHECK_OK(gpures_channel_send(server, theirs, 0, &sent));
  CHECK_OK(gpures_release(theirs));
  CHECK_OK(gpures_channel_receive(client, 0, &theirs));
  gpures_dma_buf_handle_desc got;
  got.struct_size = sizeof got;
  CHECK_OK(gpures_dma_buf_handle_describe(theirs, &got));
  CHECK(same_file(got.fds[0], fd));
  CHECK(has_pattern(got.fds[0], 4096, 5));
  CHECK_OK(gpures_release(theirs));
  CHECK_OK(gpures_release(mine));
  close(fd);
  CHECK_OK(gpures_channel_close(client));
  CHECK_OK(gpures_channel_close(server));
  CHECK_OK(gpures_channel_close(listener));
  CHECK_OK(gpures_channel_unlink(path));
}

static void round_trip_over_a_path(void) {
  int base = count_open_fds();
  char path[64];
  socket_path(path, sizeof path, "/tmp/gpures-test");
  round_trip(path);
  CHECK(access(path, F_OK) != 0); /* unlink removed the socket file */
  CHECK_EQ(count_open_fds(), base);
}

static void round_trip_over_an_abstract_name(void) {
  int base = count_open_fds();
  char path[64];
  socket_path(path, sizeof path, "@gpures-test");
  round_trip(path);
  CHECK_EQ(count_open_fds(), base);
}

/* A socket file nobody listens on: bound and closed without gpures. */
static void stale_socket_file(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) abort();
  close(fd);
}

static void listen_replaces_a_stale_socket_but_no_other_file(void) {
  char path[64];
  socket_path(path, sizeof path, "/tmp/gpures-test-stale");
  int a = -1, b = -1;
  CHECK_OK(gpures_channel_listen(path, &a));
  CHECK_FAILS(GPURES_E_OS_ERROR, "path", gpures_channel_listen(path, &b)); /* a listens */
  CHECK_EQ(b, -1);
  CHECK_OK(gpures_channel_close(a)); /* its own file goes with it */
  CHECK(access(path, F_OK) != 0);
  stale_socket_file(path); /* what a listener that crashed leaves */
  CHECK_OK(gpures_channel_listen(path, &b));
  CHECK_OK(gpures_channel_close(b));
  CHECK(access(path, F_OK) != 0);
  CHECK_OK(gpures_channel_unlink(path)); /* nothing there: nothing to do */

  FILE *f = fopen(path, "w"); /* a regular file is never removed */
  fclose(f);
  CHECK_FAILS(GPURES_E_OS_ERROR, "path", gpures_channel_listen(path, &b));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "path", gpures_channel_unlink(path));
  CHECK(access(path, F_OK) == 0);
  unlink(path);
  CHECK_FAILS(GPURES_E_OS_ERROR, "path", gpures_channel_connect(path, 0, &b));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "path", gpures_channel_listen("", &b));
  char longer[200];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "path", gpures_channel_listen(longer, &b));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "path", gpures_channel_connect(NULL, 0, &b));
}

static void a_handle_crosses_to_another_process(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  pid_t child = fork_quietly();
  if (child == 0) { /* the producer: makes a frame and sends it */
    close(pair[1]);
    int fd = patterned_memfd(4096, 77);
    gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(fd);
    gpures_handle h = 0;
    uint32_t sent = 0;
    int ok = gpures_create(GPURES_KIND_DMA_BUF_HANDLE, &d, NULL, &h) == GPURES_OK &&
             gpures_channel_send(pair[0], h, 0, &sent) == GPURES_OK && sent == 1;
    gpures_release(h);
    close(fd);
    _exit(ok ? 0 : 1); /* the frame outlives the producer: the consumer holds an fd */
  }
  close(pair[0]);
  gpures_handle h = 0, end = 1;
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  gpures_dma_buf_handle_desc got;
  got.struct_size = sizeof got;
  CHECK_OK(gpures_dma_buf_handle_describe(h, &got));
  CHECK(has_pattern(got.fds[0], 4096, 77));
  /* The producer is gone: the end of the channel. */
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_receive(pair[1], 0, &end));
  CHECK_EQ(end, 0);
  CHECK_OK(gpures_release(h));
  CHECK_OK(gpures_channel_close(pair[1]));
}

/* --------------------------------------------------------------- refusals */

static void process_local_kinds_are_refused_and_nothing_is_sent(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  gpures_cpu_bytes_desc c = gpures_fixture_cpu_bytes();
  gpures_vk_image_desc v = gpures_fixture_vk_image();
  gpures_handle cpu = 0, image = 0, got = 1;
  uint32_t sent = 1;
  CHECK_OK(gpures_create(GPURES_KIND_CPU_BYTES, &c, NULL, &cpu));
  CHECK_OK(gpures_create(GPURES_KIND_VK_IMAGE, &v, NULL, &image));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "resource", gpures_channel_send(pair[0], cpu, 0, &sent));
  CHECK_EQ(sent, 0);
  CHECK(strstr(gpures_last_error(), "CpuBytes is process-local") != NULL);
  CHECK_FAILS(GPURES_E_WRONG_KIND, "resource", gpures_channel_send(pair[0], image, 0, &sent));
  CHECK_OK(gpures_channel_receive(pair[1], GPURES_CHANNEL_NONBLOCK, &got));
  CHECK_EQ(got, 0); /* nothing was sent */
  CHECK_OK(gpures_release(cpu));
  CHECK_OK(gpures_release(image));
  /* Released and null handles. */
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_channel_send(pair[0], cpu, 0, &sent));
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "handle", gpures_channel_send(pair[0], 0, 0, &sent));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outSent", gpures_channel_send(pair[0], cpu, 0, NULL));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_channel_send(pair[0], cpu, 8, &sent));
  gpures_channel_close(pair[0]);
  gpures_channel_close(pair[1]);
}

static void malformed_messages_are_refused_with_their_fds_closed(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  int real = frame_memfd(4096);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(real);
  message good = dma_buf_message(d), m;

  /* Truncated: shorter than a header, or than the descriptor it announces. */
  REFUSED(&good, 10, 1, GPURES_E_INVALID_VALUE, "message");
  REFUSED(&good, message_size(&good) - 8, 1, GPURES_E_INVALID_VALUE, "descSize");
  REFUSED(&good, 0, 1, GPURES_E_INVALID_VALUE, "message");
  REFUSED(&good, 0, 0, GPURES_E_INVALID_VALUE, "message"); /* an empty datagram is not the end */
  /* Not a gpures message, another major ABI, another header size. */
  m = good, m.h.magic = 0x12345678;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "message");
  m = good, m.h.abi = (GPURES_ABI_MAJOR + 1) << 16;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "abi");
  m = good, m.h.header_size = 28;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "headerSize");
  /* Wrong kinds: unknown, process-local (with an address in it). */
  m = good, m.h.kind = 99;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "kind");
  m = good, m.h.kind = 0;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "kind");
  {
    gpures_cpu_bytes_desc c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.ptr = (void *)(uintptr_t)0x1000; /* an address in the receiver: never to be trusted */
    c.size = 4096;
    c.format = GPURES_PF_RGBA_U8;
    m = good, m.h.kind = GPURES_KIND_CPU_BYTES, m.h.desc_size = sizeof c, m.h.num_fds = 0;
    memcpy(m.desc, &c, sizeof c);
    REFUSED(&m, message_size(&m), 0, GPURES_E_WRONG_KIND, "kind");
    m.h.num_fds = 1;
    REFUSED(&m, message_size(&m), 1, GPURES_E_WRONG_KIND, "kind");
  }
  /* struct_size: not the size sent, too short, longer than any descriptor. */
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->struct_size = sizeof d + 8;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "structSize");
  m = good, m.h.desc_size = 4, ((gpures_dma_buf_handle_desc *)m.desc)->struct_size = 4;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "structSize");
  {
    static unsigned char big[sizeof(wire_header) + 8192]; /* past a descriptor's and metadata's most */
    wire_header h = good.h;
    h.desc_size = 8192;
    memcpy(big, &h, sizeof h);
    memcpy(big + sizeof h, good.desc, sizeof d);
    uint32_t size = 8192;
    memcpy(big + sizeof h, &size, 4);
    refused(pair[0], pair[1], (const message *)big, sizeof big, 1, GPURES_E_INVALID_VALUE,
            "message", __LINE__);
  }
  /* A struct shorter than the library's that ends before the fd it names. */
  m = good, m.h.desc_size = 12, ((gpures_dma_buf_handle_desc *)m.desc)->struct_size = 12;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "fds[0]");
  /* Fd counts: the header and the fds that arrived disagree, or the descriptor and both. */
  REFUSED(&good, message_size(&good), 0, GPURES_E_INVALID_VALUE, "fds");
  REFUSED(&good, message_size(&good), 2, GPURES_E_INVALID_VALUE, "fds");
  m = good, m.h.num_fds = 2;
  REFUSED(&m, message_size(&m), 2, GPURES_E_INVALID_VALUE, "fds");
  {
    gpures_dma_buf_handle_desc two = gpures_fixture_dma_buf_handle(real, real);
    m = dma_buf_message(two);
    m.h.num_fds = 1;
    REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "fds[1]");
  }
  /* Too many fds: more than a descriptor names, more than the receive buffer holds. */
  m = good, m.h.num_fds = 6;
  REFUSED(&m, message_size(&m), 6, GPURES_E_INVALID_VALUE, "fds");
  m = good, m.h.num_fds = 20;
  REFUSED(&m, message_size(&m), 20, GPURES_E_INVALID_VALUE, "fds");
  /* Hostile descriptor values: the receiver's own fds (stderr, its socket), -1, positions out of order. */
  int stderr_fd = 2;
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->fds[0] = stderr_fd;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "fds[0]");
  CHECK(fd_is_open(2));
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->fds[0] = pair[1];
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "fds[0]");
  CHECK(fd_is_open(pair[1]));
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->fds[0] = -1;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "fds[0]");
  {
    gpures_dma_buf_handle_desc two = gpures_fixture_dma_buf_handle(real, real);
    m = dma_buf_message(two);
    ((gpures_dma_buf_handle_desc *)m.desc)->fds[0] = 1;
    ((gpures_dma_buf_handle_desc *)m.desc)->fds[1] = 0;
    REFUSED(&m, message_size(&m), 2, GPURES_E_INVALID_VALUE, "fds[0]");
  }
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->num_fds = 7;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "fds");
  /* An address: a slot release gate that would let the peer write into this process. */
  {
    gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(0); /* fd: the first attached */
    v.slot_release.gate = (uint64_t *)(uintptr_t)0x7f0000001000ull;
    m = good, m.h.kind = GPURES_KIND_VK_OPAQUE_FD, m.h.desc_size = sizeof v;
    memcpy(m.desc, &v, sizeof v);
    REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "slotRelease.gate");
    v.slot_release.gate = NULL; /* the group without its address: create refuses it */
    memcpy(m.desc, &v, sizeof v);
    REFUSED(&m, message_size(&m), 1, GPURES_E_NULL_POINTER, "slotRelease.gate");
  }
  /* A descriptor create refuses, exactly as for a local caller. */
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->width = 0;
  REFUSED(&m, message_size(&m), 1, GPURES_E_ZERO_SIZE, "width");
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->planes[0].offset = 64;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "planes[0].offset");
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->flags = 0x80;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "flags");
  m = good, ((gpures_dma_buf_handle_desc *)m.desc)->planes[0].object_index = 3;
  REFUSED(&m, message_size(&m), 1, GPURES_E_INVALID_VALUE, "planes[0].objectIndex");

  close(real);
  gpures_channel_close(pair[0]);
  gpures_channel_close(pair[1]);
}

/* ------------------------------------------------------ waiting and the end */

static void nonblocking_calls_return_at_once(void) {
  int pair[2], base = open_pair(pair);
  gpures_handle got = 1;
  CHECK_OK(gpures_channel_receive(pair[1], GPURES_CHANNEL_NONBLOCK, &got));
  CHECK_EQ(got, 0);
  uint32_t ready = 9;
  CHECK_OK(gpures_channel_wait(pair[1], GPURES_CHANNEL_READABLE, 0, &ready));
  CHECK_EQ(ready, 0);
  CHECK_OK(gpures_channel_wait(pair[0], GPURES_CHANNEL_WRITABLE, 0, &ready));
  CHECK_EQ(ready, GPURES_CHANNEL_WRITABLE);

  /* Fill the channel until it is full; a full channel sends nothing and says so. */
  int fd = frame_memfd(4096);
  gpures_handle h = rgba_frame(fd);
  uint32_t sent = 1, queued = 0;
  while (queued < 100000) {
    if (gpures_channel_send(pair[0], h, GPURES_CHANNEL_NONBLOCK, &sent) != GPURES_OK || !sent)
      break;
    queued++;
  }
  CHECK_EQ(sent, 0);
  CHECK(queued > 0);
  CHECK_OK(gpures_channel_wait(pair[0], GPURES_CHANNEL_WRITABLE, 0, &ready));
  CHECK_EQ(ready, 0);
  CHECK_OK(gpures_channel_wait(pair[1], GPURES_CHANNEL_READABLE, 0, &ready));
  CHECK_EQ(ready, GPURES_CHANNEL_READABLE);
  uint64_t live = gpures_live_handles(0);
  for (uint32_t i = 0; i < queued; i++) {
    CHECK_OK(gpures_channel_receive(pair[1], GPURES_CHANNEL_NONBLOCK, &got));
    if (!got) break;
    CHECK_OK(gpures_release(got));
  }
  CHECK_OK(gpures_channel_receive(pair[1], GPURES_CHANNEL_NONBLOCK, &got));
  CHECK_EQ(got, 0);
  CHECK_EQ(gpures_live_handles(0), live);
  CHECK_OK(gpures_release(h));
  close(fd);
  close_pair(pair, base);
}

static void the_end_of_a_channel_is_stale_for_both_sides(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  int fd = frame_memfd(4096);
  gpures_handle h = rgba_frame(fd), got = 0;
  uint32_t sent = 0, ready = 0;
  CHECK_OK(gpures_channel_send(pair[0], h, 0, &sent));
  CHECK_OK(gpures_channel_close(pair[0]));
  /* What was sent before the end still arrives; then the end. */
  CHECK_OK(gpures_channel_receive(pair[1], 0, &got));
  CHECK(got != 0);
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_channel_wait(pair[1], GPURES_CHANNEL_READABLE, -1, &ready));
  CHECK(ready & GPURES_CHANNEL_HANGUP);
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_receive(pair[1], 0, &got));
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_send(pair[1], h, 0, &sent));
  CHECK_OK(gpures_release(h));
  close(fd);
  gpures_channel_close(pair[1]);
  /* Fds that are not channels. */
  int memfd = make_memfd(16, 1);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_channel_close(memfd));
  CHECK(fd_is_open(memfd));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_channel_shutdown(memfd));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_channel_receive(memfd, 0, &got));
  close(memfd);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_channel_wait(-1, 1, 0, &ready));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "events", gpures_channel_wait(0, 16, 0, &ready));
}

typedef struct waiter {
  int fd;
  int listener;
  int status;
  uint32_t ready;
} waiter;

static void *wait_thread(void *arg) {
  waiter *w = arg;
  if (w->listener) {
    int fd = -1;
    w->status = gpures_channel_accept(w->fd, 0, &fd);
  } else {
    gpures_handle h = 0;
    w->status = gpures_channel_wait(w->fd, GPURES_CHANNEL_READABLE, -1, &w->ready);
    if (w->status == GPURES_OK) w->status = gpures_channel_receive(w->fd, 0, &h);
  }
  return NULL;
}

static void shutdown_wakes_a_thread_waiting_on_the_channel(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  waiter w = {pair[1], 0, -1, 0};
  pthread_t t;
  pthread_create(&t, NULL, wait_thread, &w);
  usleep(20000);
  CHECK_OK(gpures_channel_shutdown(pair[1]));
  pthread_join(t, NULL);
  CHECK(w.ready & GPURES_CHANNEL_READABLE);
  CHECK_EQ(w.status, GPURES_E_STALE);
  gpures_channel_close(pair[0]);
  gpures_channel_close(pair[1]);

  char path[64];
  socket_path(path, sizeof path, "@gpures-test-wake");
  int listener = -1;
  CHECK_OK(gpures_channel_listen(path, &listener));
  waiter l = {listener, 1, -1, 0};
  pthread_create(&t, NULL, wait_thread, &l);
  usleep(20000);
  CHECK_OK(gpures_channel_shutdown(listener));
  pthread_join(t, NULL);
  CHECK_EQ(l.status, GPURES_E_STALE);
  gpures_channel_close(listener);
}

/* ---------------------------------------------------------------- mappings */

static void map_shares_memory_with_the_memfd_both_ways(void) {
  int base = count_open_fds();
  uint64_t maps = gpures_live_mappings();
  int fd = patterned_memfd(4096, 11);
  gpures_handle h = rgba_frame(fd);
  void *ptr = NULL;
  uint64_t size = 0;
  int during = count_open_fds();
  CHECK_OK(gpures_map(h, 0, GPURES_MAP_READ | GPURES_MAP_WRITE, &ptr, &size));
  CHECK(ptr != NULL);
  CHECK_EQ(size, 4096);
  CHECK_EQ(gpures_live_mappings(), maps + 1);
  /* A memfd is not a dma-buf: no fd kept for the sync, and the ioctl says ENOTTY. */
  CHECK_EQ(count_open_fds(), during);
  uint64_t sync_flags = 0;
  errno = 0;
  CHECK(ioctl(fd, _IOW('b', 0, uint64_t), &sync_flags) == -1 && errno == ENOTTY);

  unsigned char *bytes = ptr;
  CHECK_EQ(bytes[0], 11);
  CHECK_EQ(bytes[300], (unsigned char)(11 + 300));
  bytes[100] = 0xee; /* through the mapping, seen through the fd */
  unsigned char b = 0;
  CHECK(pread(fd, &b, 1, 100) == 1 && b == 0xee);
  b = 0x5a; /* through the fd, seen through the mapping */
  CHECK(pwrite(fd, &b, 1, 4000) == 1);
  CHECK_EQ(bytes[4000], 0x5a);

  /* The mapping does not depend on the handle. */
  CHECK_OK(gpures_release(h));
  CHECK_EQ(bytes[100], 0xee);
  CHECK_OK(gpures_unmap(ptr));
  CHECK_EQ(gpures_live_mappings(), maps);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "ptr", gpures_unmap(ptr));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "ptr", gpures_unmap(&b));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "ptr", gpures_unmap(NULL));
  close(fd);
  CHECK_EQ(count_open_fds(), base);
}

static void map_refuses_what_it_cannot_map(void) {
  int fd = frame_memfd(4096);
  gpures_handle h = rgba_frame(fd), cpu = 0;
  void *ptr = (void *)1;
  uint64_t size = 1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "index", gpures_map(h, 1, GPURES_MAP_READ, &ptr, &size));
  CHECK(ptr == NULL && size == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_map(h, 0, 0, &ptr, &size));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_map(h, 0, 4, &ptr, &size));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outPtr", gpures_map(h, 0, 1, NULL, &size));
  gpures_cpu_bytes_desc c = gpures_fixture_cpu_bytes();
  CHECK_OK(gpures_create(GPURES_KIND_CPU_BYTES, &c, NULL, &cpu));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_map(cpu, 0, GPURES_MAP_READ, &ptr, &size));
  CHECK_OK(gpures_release(cpu));
  CHECK_OK(gpures_release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_map(h, 0, GPURES_MAP_READ, &ptr, &size));

  /* A write-sealed memfd maps for reading only. */
  int sealed = memfd_create("gpures-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  CHECK(ftruncate(sealed, 4096) == 0);
  CHECK(fcntl(sealed, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) == 0);
  h = rgba_frame(sealed);
  CHECK_FAILS(GPURES_E_OS_ERROR, "fds[0]", /* the fd at fault, by its field */
              gpures_map(h, 0, GPURES_MAP_READ | GPURES_MAP_WRITE, &ptr, &size));
  CHECK_OK(gpures_map(h, 0, GPURES_MAP_READ, &ptr, &size));
  CHECK_EQ(((unsigned char *)ptr)[10], 0);
  CHECK_OK(gpures_unmap(ptr));
  CHECK_OK(gpures_release(h));
  close(sealed);
  close(fd);
}

static void a_received_frame_is_read_through_a_mapping(void) {
  int pair[2], base = open_pair(pair);
  int fd = patterned_memfd(4096, 21);
  gpures_handle mine = rgba_frame(fd), theirs = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_send(pair[0], mine, 0, &sent));
  CHECK_OK(gpures_release(mine));
  close(fd); /* only the message's fd keeps the memory now */
  CHECK_OK(gpures_channel_receive(pair[1], 0, &theirs));
  void *ptr = NULL;
  uint64_t size = 0;
  CHECK_OK(gpures_map(theirs, 0, GPURES_MAP_READ | GPURES_MAP_WRITE, &ptr, &size));
  int ok = 1;
  for (uint64_t i = 0; i < size; i++) ok &= ((unsigned char *)ptr)[i] == (unsigned char)(21 + i);
  CHECK(ok);
  CHECK_OK(gpures_unmap(ptr));
  CHECK_OK(gpures_release(theirs));
  close_pair(pair, base);
}

/* ------------------------------------------------------------ hostile peers */

/* Exit status of a child, or 128 + its signal. */
static int child_status(pid_t child) {
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Makes a (non-blocking) channel fd block, as a simple peer's socket does. */
static void blocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

static int seals_of(int fd) { return fcntl(fd, F_GET_SEALS); }

static void received_memfds_are_sealed_so_the_peer_cannot_shrink_them(void) {
  int base = count_open_fds();
  int pair[2], go[2], told[2];
  CHECK_OK(gpures_channel_pair(pair));
  CHECK(pipe(go) == 0 && pipe(told) == 0);
  pid_t peer = fork_quietly();
  if (peer == 0) { /* sends a frame, keeps its fd, and tries to shrink it when told */
    int fd = patterned_memfd(4096, 31);
    gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(fd);
    message m = dma_buf_message(d);
    send_raw(pair[0], &m, message_size(&m), &fd, 1);
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(2);
    int err = ftruncate(fd, 0) == 0 ? 0 : errno;
    _exit(write(told[1], &err, sizeof err) == sizeof err ? 0 : 3);
  }
  gpures_handle h = 0;
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  gpures_dma_buf_handle_desc got;
  got.struct_size = sizeof got;
  CHECK_OK(gpures_dma_buf_handle_describe(h, &got));
  CHECK(seals_of(got.fds[0]) & F_SEAL_SHRINK); /* sealed on receipt */
  void *ptr = NULL;
  uint64_t size = 0;
  CHECK_OK(gpures_map(h, 0, GPURES_MAP_READ, &ptr, &size));
  int err = -1;
  CHECK(write(go[1], "t", 1) == 1);
  CHECK(read(told[0], &err, sizeof err) == sizeof err);
  CHECK_EQ(err, EPERM); /* the peer's ftruncate() was refused */
  CHECK_EQ(child_status(peer), 0);
  if (ptr && err == EPERM) { /* safe only because it did not shrink: else SIGBUS */
    int ok = 1;
    for (uint64_t i = 0; i < size; i++) ok &= ((unsigned char *)ptr)[i] == (unsigned char)(31 + i);
    CHECK(ok && size == 4096);
  }
  if (ptr) CHECK_OK(gpures_unmap(ptr));
  CHECK_OK(gpures_release(h));
  close(go[0]), close(go[1]), close(told[0]), close(told[1]);
  close_pair(pair, base);
}

/* A regular file of `size` bytes that only the fd names. */
static int regular_file(long size) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/gpures-test-file-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0 || unlink(path) != 0 || ftruncate(fd, size) != 0) abort();
  return fd;
}

/* A message of `kind` whose descriptor names one attached fd. */
static message one_fd_message(uint32_t kind, const void *desc, uint32_t desc_size) {
  message m;
  memset(&m, 0, sizeof m);
  m.h = (wire_header){WIRE_MAGIC, gpures_abi_version(), sizeof(wire_header), kind, desc_size, 1};
  memcpy(m.desc, desc, desc_size);
  return m;
}

static message vk_opaque_fd_message(void) {
  gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(0); /* fd: the first attached */
  v.flags = 0; /* no slot release: its gate would be an address of the sender */
  memset(&v.slot_release, 0, sizeof v.slot_release);
  return one_fd_message(GPURES_KIND_VK_OPAQUE_FD, &v, sizeof v);
}

/* Sends `m` with `fd` attached and receives it with `flags`: the handle, or 0 with the error. */
static gpures_handle received_with(int pair[2], const message *m, int fd, uint32_t flags,
                                   int *status) {
  send_raw(pair[0], m, message_size(m), &fd, 1);
  close(fd);
  gpures_handle h = 0;
  *status = gpures_channel_receive(pair[1], flags, &h);
  return h;
}

static void memory_the_peer_can_shrink_is_refused_unless_trusted(void) {
  int pair[2], base = open_pair(pair);
  int real = frame_memfd(4096);
  message dma = dma_buf_message(gpures_fixture_dma_buf_handle_rgba(real)), vk = vk_opaque_fd_message();
  int fd = make_memfd(4096, 1); /* no MFD_ALLOW_SEALING: nobody can seal it */
  refused_with(pair[0], pair[1], &dma, message_size(&dma), &fd, 1, 0, GPURES_E_INVALID_VALUE,
               "fds[0]", __LINE__);
  CHECK(strstr(gpures_last_error(), "cannot be sealed") != NULL);
  fd = make_memfd(4096, 1);
  refused_with(pair[0], pair[1], &vk, message_size(&vk), &fd, 1, 0, GPURES_E_INVALID_VALUE, "fd",
               __LINE__);
  fd = regular_file(4096);
  refused_with(pair[0], pair[1], &dma, message_size(&dma), &fd, 1, GPURES_CHANNEL_NONBLOCK,
               GPURES_E_INVALID_VALUE, "fds[0]", __LINE__);
  CHECK(strstr(gpures_last_error(), "regular file") != NULL);
  /* Sealable but already sealed against further seals (F_SEAL_SEAL) without SHRINK. */
  fd = frame_memfd(4096);
  CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) == 0);
  refused_with(pair[0], pair[1], &dma, message_size(&dma), &fd, 1, 0, GPURES_E_INVALID_VALUE,
               "fds[0]", __LINE__);

  /* The receiver's explicit trust. */
  int status = -1;
  gpures_handle h = received_with(pair, &dma, make_memfd(4096, 1),
                                  GPURES_CHANNEL_ALLOW_UNSEALED, &status);
  CHECK_OK(status);
  CHECK_OK(gpures_release(h));
  h = received_with(pair, &vk, regular_file(4096), GPURES_CHANNEL_ALLOW_UNSEALED, &status);
  CHECK_OK(status);
  CHECK_OK(gpures_release(h));
  /* Sealed by the producer itself (and sealed shut): nothing to trust. */
  fd = frame_memfd(4096);
  CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) == 0);
  h = received_with(pair, &dma, fd, 0, &status);
  CHECK_OK(status);
  CHECK_OK(gpures_release(h));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_channel_receive(pair[1], 4, &h));
  close(real);
  close_pair(pair, base);
}

/*
** NVIDIA exports Vulkan memory as an open of /dev/nvidiactl: a VkOpaqueFd
** over a character device is received (the importing driver resolves it),
** while no DmaBufHandle may name one.
*/
static void opaque_device_is_accepted(int sender, int receiver, const message *m, int device) {
  send_raw(sender, m, message_size(m), &device, 1);
  close(device);
  gpures_handle h = 0;
  CHECK_OK(gpures_channel_receive(receiver, 0, &h));
  uint32_t kind = 0;
  CHECK_OK(gpures_kind(h, &kind));
  CHECK_EQ(kind, GPURES_KIND_VK_OPAQUE_FD);
  void *ptr = NULL;
  uint64_t size = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_map(h, 0, GPURES_MAP_READ, &ptr, &size));
  CHECK_OK(gpures_release(h));
}

static void fds_that_cannot_back_a_frame_are_refused_at_receive(void) {
  int pair[2], base = open_pair(pair);
  int real = frame_memfd(4096);
  message dma = dma_buf_message(gpures_fixture_dma_buf_handle_rgba(real)), vk = vk_opaque_fd_message();
  static const char *what[] = {"a pipe", "a socket", "a directory", "a character device"};
  for (int kind = 0; kind < 4; kind++) {
    for (int k = 0; k < 2; k++) { /* DmaBufHandle's fds[0], VkOpaqueFd's fd */
      int fds[2], n = 1;
      if (kind == 0) CHECK(pipe(fds) == 0), n = 2;
      if (kind == 1) CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0), n = 2;
      if (kind == 2) fds[0] = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (kind == 3) fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (n == 2) close(fds[1]);
      const message *m = k ? &vk : &dma;
      if (k == 1 && kind == 3) { /* an opaque driver export may be a device: NVIDIA's are */
        opaque_device_is_accepted(pair[0], pair[1], m, fds[0]);
        continue;
      }
      refused_with(pair[0], pair[1], m, message_size(m), fds, 1, 0, GPURES_E_INVALID_VALUE,
                   k ? "fd" : "fds[0]", __LINE__);
      if (!CHECK(strstr(gpures_last_error(), what[kind]) != NULL))
        fprintf(stderr, "    %s: %s\n", what[kind], gpures_last_error());
    }
  }
  close(real);
  close_pair(pair, base);
}

static message vk_semaphore_fd_message(uint32_t handle_type) {
  gpures_vk_semaphore_fd_desc d = gpures_fixture_vk_semaphore_fd(0);
  d.handle_type = handle_type;
  if (handle_type == 16) d.semaphore_type = 0, d.value = 0; /* a sync fd is binary */
  return one_fd_message(GPURES_KIND_VK_SEMAPHORE_FD, &d, sizeof d);
}

/*
** NVIDIA exports a Vulkan semaphore as an opaque fd that is an open of
** /dev/nvidiactl too: received, for the importing driver to resolve. A
** sync-fd semaphore is polled by the host, so no device may stand for one.
*/
static void an_opaque_semaphore_may_be_a_device_a_sync_fd_may_not(void) {
  int pair[2], base = open_pair(pair);
  message opaque = vk_semaphore_fd_message(1), sync_fd = vk_semaphore_fd_message(16);
  int device = open("/dev/null", O_RDONLY | O_CLOEXEC);
  send_raw(pair[0], &opaque, message_size(&opaque), &device, 1);
  close(device);
  gpures_handle h = 0;
  uint32_t kind = 0;
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  CHECK_OK(gpures_kind(h, &kind));
  CHECK_EQ(kind, GPURES_KIND_VK_SEMAPHORE_FD);
  CHECK_OK(gpures_release(h));

  /* A fence is no memory: an anonymous inode such as Mesa's syncobj (here an eventfd) passes. */
  int fence = eventfd(0, EFD_CLOEXEC);
  send_raw(pair[0], &opaque, message_size(&opaque), &fence, 1);
  close(fence);
  h = 0;
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  CHECK_OK(gpures_release(h));

  device = open("/dev/null", O_RDONLY | O_CLOEXEC);
  refused_with(pair[0], pair[1], &sync_fd, message_size(&sync_fd), &device, 1, 0,
               GPURES_E_INVALID_VALUE, "fd", __LINE__);
  CHECK(strstr(gpures_last_error(), "a character device") != NULL);
  close_pair(pair, base);
}

static void a_frame_that_arrives_while_out_of_fds_is_reported_as_dropped(void) {
  int base = count_open_fds();
  uint64_t live = gpures_live_handles(0);
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  for (int i = 0; i < 2; i++) {
    int fd = patterned_memfd(4096, 40);
    message m = dma_buf_message(gpures_fixture_dma_buf_handle_rgba(fd));
    send_raw(pair[0], &m, message_size(&m), &fd, 1);
    close(fd);
  }
  struct rlimit was;
  gpures_handle h = 1;
  if (!without_free_fds(&was)) { /* the kernel would install the message's fds */
    gpures_channel_close(pair[0]);
    gpures_channel_close(pair[1]);
    return;
  }
  int status = gpures_channel_receive(pair[1], GPURES_CHANNEL_NONBLOCK, &h);
  setrlimit(RLIMIT_NOFILE, &was);
  CHECK_STATUS(GPURES_E_OS_ERROR, status);
  CHECK_STR(gpures_last_error_field(), "fds");
  CHECK(strstr(gpures_last_error(), "dropped") && strstr(gpures_last_error(), "EMFILE"));
  CHECK(strstr(gpures_last_error(), "Cannot receive DmaBufHandle:") == gpures_last_error());
  CHECK_EQ(h, 0);
  CHECK_EQ(count_open_fds(), base + 2);
  CHECK_OK(gpures_channel_receive(pair[1], GPURES_CHANNEL_NONBLOCK, &h)); /* the next one */
  CHECK(h != 0);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_live_handles(0), live);
  close_pair(pair, base);
}

static void closing_a_listener_removes_only_its_own_socket_file(void) {
  int base = count_open_fds();
  char path[64];
  socket_path(path, sizeof path, "/tmp/gpures-test-own");
  int a = -1, b = -1, client = -1, server = -1;
  /* A newer listener took the path: closing the old one leaves its file. */
  CHECK_OK(gpures_channel_listen(path, &a));
  CHECK(unlink(path) == 0);
  CHECK_OK(gpures_channel_listen(path, &b));
  CHECK_OK(gpures_channel_close(a));
  CHECK(access(path, F_OK) == 0);
  CHECK_OK(gpures_channel_connect(path, 0, &client));
  CHECK_OK(gpures_channel_accept(b, 0, &server));
  CHECK_OK(gpures_channel_close(client));
  CHECK_OK(gpures_channel_close(server));
  CHECK_OK(gpures_channel_shutdown(b)); /* shutting down removes its own file */
  CHECK(access(path, F_OK) != 0);
  CHECK_OK(gpures_channel_close(b));

  /* Not a socket any more: left alone. */
  CHECK_OK(gpures_channel_listen(path, &a));
  CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
  CHECK_OK(gpures_channel_close(a));
  struct stat st;
  CHECK(lstat(path, &st) == 0 && S_ISDIR(st.st_mode));
  CHECK(rmdir(path) == 0);

  /* A child that inherited the listener and closes its copy removes nothing. */
  CHECK_OK(gpures_channel_listen(path, &a));
  pid_t child = fork_quietly();
  if (child == 0) _exit(gpures_channel_close(a) == GPURES_OK ? 0 : 1);
  CHECK_EQ(child_status(child), 0);
  CHECK(access(path, F_OK) == 0);
  CHECK_OK(gpures_channel_close(a));
  CHECK(access(path, F_OK) != 0);
  CHECK_EQ(count_open_fds(), base);
}

/* Checks that the last error begins with `prefix` and holds `part`. */
static void error_reads(const char *prefix, const char *part, int line) {
  const char *e = gpures_last_error();
  if (strncmp(e, prefix, strlen(prefix)) != 0 || !strstr(e, part)) {
    check_report(0, __FILE__, line, "the error names the object and the errno");
    fprintf(stderr, "    got \"%s\"\n    want \"%s...%s...\"\n", e, prefix, part);
  }
}
#define ERROR_READS(prefix, part) error_reads((prefix), (part), __LINE__)

static void os_failures_name_the_errno_and_the_path(void) {
  int base = count_open_fds();
  char path[96], prefix[160];
  int fd = -1;
  snprintf(path, sizeof path, "/tmp/gpures-test-no-dir-%d/x.sock", (int)getpid());
  CHECK_FAILS(GPURES_E_OS_ERROR, "path", gpures_channel_listen(path, &fd));
  snprintf(prefix, sizeof prefix, "Cannot listen on \"%s\": ENOENT (", path);
  ERROR_READS(prefix, "from bind()");
  CHECK_FAILS(GPURES_E_OS_ERROR, "path", gpures_channel_connect(path, 0, &fd));
  snprintf(prefix, sizeof prefix, "Cannot connect to \"%s\": nobody listens there: ENOENT", path);
  ERROR_READS(prefix, "");

  /* Empty: invalid, and said so (not "Cannot connect to: "). */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "path", gpures_channel_connect("", 0, &fd));
  ERROR_READS("Cannot connect: path is empty", "");
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "path", gpures_channel_listen("", &fd));
  ERROR_READS("Cannot listen: path is empty", "");

  /* EACCES: a directory this process may not write (as nobody, when root). */
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/gpures-test-ro-%d", (int)getpid());
  CHECK(mkdir(dir, 0500) == 0);
  snprintf(path, sizeof path, "%s/x.sock", dir);
  pid_t child = fork_quietly();
  if (child == 0) {
    if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    snprintf(prefix, sizeof prefix, "Cannot listen on \"%s\": EACCES (", path);
    int status = gpures_channel_listen(path, &fd);
    if (status != GPURES_E_OS_ERROR || strncmp(gpures_last_error(), prefix, strlen(prefix))) {
      fprintf(stderr, "    child: %s\n", gpures_last_error());
      _exit(1);
    }
    _exit(0);
  }
  CHECK_EQ(child_status(child), 0);
  rmdir(dir);

  /* EMFILE, whichever call needs the fd. */
  socket_path(path, sizeof path, "@gpures-test-emfile");
  int listener = -1, waiting = -1, pair[2];
  CHECK_OK(gpures_channel_listen(path, &listener));
  CHECK_OK(gpures_channel_connect(path, 0, &waiting));
  struct rlimit was;
  if (!without_free_fds(&was)) {
    gpures_channel_close(waiting);
    gpures_channel_close(listener);
    return;
  }
  int s_pair = gpures_channel_pair(pair);
  char pair_error[256];
  snprintf(pair_error, sizeof pair_error, "%s", gpures_last_error());
  int s_connect = gpures_channel_connect(path, 0, &fd);
  char connect_error[256];
  snprintf(connect_error, sizeof connect_error, "%s", gpures_last_error());
  int s_accept = gpures_channel_accept(listener, GPURES_CHANNEL_NONBLOCK, &fd);
  setrlimit(RLIMIT_NOFILE, &was);
  CHECK_STATUS(GPURES_E_OS_ERROR, s_accept);
  ERROR_READS("Cannot accept on fd ", ": EMFILE (");
  CHECK_STATUS(GPURES_E_OS_ERROR, s_pair);
  CHECK(strncmp(pair_error, "Cannot make channel pair: EMFILE (", 34) == 0);
  CHECK_STATUS(GPURES_E_OS_ERROR, s_connect);
  snprintf(prefix, sizeof prefix, "Cannot connect to \"%s\": EMFILE (", path);
  CHECK(strncmp(connect_error, prefix, strlen(prefix)) == 0);
  CHECK_OK(gpures_channel_close(waiting));
  CHECK_OK(gpures_channel_close(listener));
  CHECK_EQ(count_open_fds(), base);
}

static void an_empty_datagram_is_refused_and_not_taken_for_the_end(void) {
  int pair[2], base = open_pair(pair);
  int fd = frame_memfd(4096);
  message m = dma_buf_message(gpures_fixture_dma_buf_handle_rgba(fd));
  send_raw(pair[0], "", 0, NULL, 0);
  send_raw(pair[0], "", 0, NULL, 0);
  send_raw(pair[0], &m, message_size(&m), &fd, 1);
  CHECK_OK(gpures_channel_close(pair[0])); /* the peer is gone; its messages are not */
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "message", gpures_channel_receive(pair[1], 0, &h));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "message", gpures_channel_receive(pair[1], 0, &h));
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  CHECK(h != 0);
  CHECK_OK(gpures_release(h));
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_receive(pair[1], 0, &h));
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_receive(pair[1], 0, &h));
  close(fd);
  gpures_channel_close(pair[1]);
  CHECK_EQ(count_open_fds(), base);
}

static void a_peer_that_dies_half_way_ends_the_channel(void) {
  int pair[2], base = open_pair(pair);
  pid_t peer = fork_quietly();
  if (peer == 0) { /* the header of a message, then gone */
    int fd = frame_memfd(4096);
    message m = dma_buf_message(gpures_fixture_dma_buf_handle_rgba(fd));
    send_raw(pair[0], &m, sizeof m.h, &fd, 1);
    _exit(0);
  }
  CHECK_OK(gpures_channel_close(pair[0]));
  CHECK_EQ(child_status(peer), 0);
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "descSize", gpures_channel_receive(pair[1], 0, &h));
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_receive(pair[1], 0, &h));
  gpures_channel_close(pair[1]);
  CHECK_EQ(count_open_fds(), base);

  /* Killed while this side waits in receive: the end, no hang. */
  CHECK_OK(gpures_channel_pair(pair));
  peer = fork_quietly();
  if (peer == 0) {
    pause();
    _exit(0);
  }
  CHECK_OK(gpures_channel_close(pair[0]));
  usleep(20000);
  kill(peer, SIGKILL);
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_channel_receive(pair[1], 0, &h));
  CHECK_EQ(child_status(peer), 128 + SIGKILL);
  gpures_channel_close(pair[1]);
  CHECK_EQ(count_open_fds(), base);
}

static void a_flood_from_a_peer_leaves_nothing_behind(void) {
  enum { COUNT = 20000 };
  int base = count_open_fds();
  uint64_t live = gpures_live_handles(0);
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  pid_t peer = fork_quietly();
  if (peer == 0) { /* junk and frames, alternately, as fast as the socket takes them */
    blocking(pair[0]);
    int fd = frame_memfd(4096), fds[3] = {fd, fd, fd};
    message good = dma_buf_message(gpures_fixture_dma_buf_handle_rgba(fd)), junk = good;
    junk.h.num_fds = 3;
    for (int i = 0; i < COUNT; i++) {
      if (i % 2) send_raw(pair[0], &junk, message_size(&junk) - (size_t)(i % 7), fds, 3);
      else send_raw(pair[0], &good, message_size(&good), fds, 1);
    }
    _exit(0);
  }
  CHECK_OK(gpures_channel_close(pair[0]));
  int frames = 0, refused_count = 0, status;
  for (;;) {
    gpures_handle h = 0;
    status = gpures_channel_receive(pair[1], 0, &h);
    if (status == GPURES_E_STALE) break;
    if (status == GPURES_OK) {
      frames++;
      gpures_release(h);
    } else {
      refused_count++;
    }
  }
  CHECK_EQ(child_status(peer), 0);
  CHECK_EQ(frames, COUNT / 2);
  CHECK_EQ(refused_count, COUNT / 2);
  CHECK_EQ(gpures_live_handles(0), live);
  gpures_channel_close(pair[1]);
  CHECK_EQ(count_open_fds(), base);
}

int main(void) {
  RUN(round_trip_over_a_socketpair_moves_the_fds_and_the_layout);
  RUN(vk_opaque_fd_crosses_without_its_slot_release);
  RUN(round_trip_over_a_path);
  RUN(round_trip_over_an_abstract_name);
  RUN(listen_replaces_a_stale_socket_but_no_other_file);
  RUN(a_handle_crosses_to_another_process);
  RUN(process_local_kinds_are_refused_and_nothing_is_sent);
  RUN(malformed_messages_are_refused_with_their_fds_closed);
  RUN(nonblocking_calls_return_at_once);
  RUN(the_end_of_a_channel_is_stale_for_both_sides);
  RUN(shutdown_wakes_a_thread_waiting_on_the_channel);
  RUN(map_shares_memory_with_the_memfd_both_ways);
  RUN(map_refuses_what_it_cannot_map);
  RUN(a_received_frame_is_read_through_a_mapping);
  RUN(received_memfds_are_sealed_so_the_peer_cannot_shrink_them);
  RUN(memory_the_peer_can_shrink_is_refused_unless_trusted);
  RUN(fds_that_cannot_back_a_frame_are_refused_at_receive);
  RUN(an_opaque_semaphore_may_be_a_device_a_sync_fd_may_not);
  RUN(a_frame_that_arrives_while_out_of_fds_is_reported_as_dropped);
  RUN(closing_a_listener_removes_only_its_own_socket_file);
  RUN(os_failures_name_the_errno_and_the_path);
  RUN(an_empty_datagram_is_refused_and_not_taken_for_the_end);
  RUN(a_peer_that_dies_half_way_ends_the_channel);
  RUN(a_flood_from_a_peer_leaves_nothing_behind);
  return check_finish("test_channel");
}
