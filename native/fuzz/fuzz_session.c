/*
** fuzz_session.c: a libFuzzer target over frame sessions (native/src/session),
** from the side of a hostile peer process.
**
** Build with clang (libFuzzer comes with libclang-rt-14-dev on Debian):
**   CC=clang cmake -S . -B build-fuzz -DGPURES_BUILD_FUZZ=ON && cmake --build build-fuzz -j2
** Run:
**   build-fuzz/fuzz_session -max_total_time=30 native/fuzz/corpus_session
** The seeds come from native/fuzz/make_session_corpus.py.
**
** One input is one short conversation: a few datagrams (with fds) that the
** peer sends through a real SOCK_SEQPACKET socketpair. Its first byte picks
** the side under attack:
**   - RECEIVE: a session opened with GPURES_SESSION_RECEIVE takes FRAME
**     announcements, FRAMEs by id, FORGETs, HANDLEs, RELEASEs and KEEPs that
**     do not belong there, and garbage; one gpures_session_receive() per
**     datagram. Received frames are held and released as the input says, and
**     the releases that come back to the peer are read and checked;
**   - SEND: a session opened with GPURES_SESSION_SEND has real pooled frames
**     in flight (a pool of its own per input) and the peer answers with
**     RELEASEs and KEEPs of fuzzed or real (buffer, serial) pairs and garbage,
**     which the library's service thread reads.
** Each datagram is a record: six control bytes, then up to 255 bytes of
** message. The control bytes choose 0..4 fds to attach (a memfd of the
** frame's size sealed against shrinking, one too small, a sealable one not
** yet sealed, a pipe, /dev/null, an eventfd, a socket) and repairs that let
** the rest reach deep code: a valid 48-byte header (magic, ABI, header size,
** type, descriptor and metadata sizes, fd count, or a count that lies by one),
** the real descriptor of a pool frame (its fd attached first), metadata with a
** true struct_size and known flags, and buffer ids and serials taken from the
** real ones (announced buffers; frames in flight), exactly or one off. A
** repaired FENCE carries a CpuFence (its eventfd attached first) or, as its
** first byte picks, a lie: a kind the receiver does not know, a non-sync
** kind, a lying header or descriptor size, a cut body, a header cut after its
** type.
**
** Besides ASan and UBSan, the target aborts when a promise breaks:
**   - RECEIVE: every datagram is consumed by exactly one receive; a refused
**     one leaves handle 0, a message, and the open fds exactly as before; a
**     frame by id opens no fd; every received handle's fds are open, above
**     stderr and close-on-exec, and stay open after the session closes while
**     a frame of theirs is held; each RELEASE that comes back names the
**     (buffer, serial) of a frame this side received and released, once, and
**     carries no fds; a FRAME or HANDLE named by a FENCE that was refused
**     (whatever its header said: the raw bytes' type decides) is never handed
**     out, nor, after a FENCE cut before its names, the next one;
**   - SEND: a frame comes back (its slot's in_use drops) only when some
**     datagram named its exact (buffer, serial) in a RELEASE, or its buffer in
**     a KEEP: never because of a lie; the session's in_flight and returned are
**     exact, and in_flight equals the pool's in_use once only the peer holds
**     frames; no slot is handed out while its frame is in flight; after the
**     session closes every slot is back;
**   - both: after the input, with every frame released and the session
**     closed, the set of open fds below 128 is the same as before it.
** A sentinel frame makes the SEND checks exact: the peer releases it last,
** and the service thread reads a session's messages in order, so once it is
** back every datagram before it has been taken.
*/
#define FUZZ_NAME "fuzz_session"
#include "fuzz.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "../tests/clock_util.h"
#include "../tests/pools.h"
#include "../tests/wire.h"

enum {
  SLOTS = 5,        /* the SEND side's pool: up to 4 frames in flight and the sentinel */
  MAX_RECORDS = 12, /* datagrams per input */
  MAX_HELD = 16,    /* frames the RECEIVE side holds at once */
  MAX_MSG = sizeof(wire_header) + sizeof(gpures_dma_buf_handle_desc) + 256,
};

/* ------------------------------------------------------------------ state */

enum fd_kind { K_FRAME, K_SMALL, K_SEALABLE, K_PIPE, K_DEV_NULL, K_EVENTFD, K_SOCKET, K_KINDS };

static struct {
  int ready;
  int own[K_KINDS];                  /* one fd of each kind; -1 for those made per input */
  int spare[2];                      /* the other ends of the pipe and the socketpair */
  gpures_dma_buf_handle_desc frame;  /* a pool frame's descriptor, in wire form (fds[0] = 0) */
  uint64_t frame_size;
  int trace;  /* FUZZ_SESSION_TRACE=1: one line per datagram, to see how deep seeds reach */
} fz;

static int memfd(long size, unsigned flags, int seals) {
  int fd = memfd_create("gpures-fuzz-session", MFD_CLOEXEC | flags);
  if (fd < 0 || ftruncate(fd, size) != 0) abort();
  if (seals && fcntl(fd, F_ADD_SEALS, seals) != 0) abort();
  return fd;
}

/*
** What the library keeps for its whole life (the service thread's wake pipe)
** is made here, once, by one sending session: the fd comparison of an input
** must not see it appear.
*/
static void warm_library(void) {
  int pair[2];
  gpures_session *s = NULL;
  if (gpures_channel_pair(pair) != GPURES_OK) abort();
  FUZZ_EXPECT(gpures_session_open(pair[0], GPURES_SESSION_SEND, &s) == GPURES_OK, "open");
  gpures_session_close(s);
  close(pair[1]);
}

/* A pool frame's descriptor as a sender puts it on the wire, and its size. */
static void learn_frame(void) {
  gpures_pool *p = new_nv12_pool(64, 64, SLOTS);
  gpures_handle h = 0;
  FUZZ_EXPECT(gpures_pool_acquire(p, 0, 0, NULL, &h) == GPURES_OK, "acquire");
  FUZZ_EXPECT(gpures_describe(h, &fz.frame, sizeof fz.frame) == GPURES_OK, "describe");
  fz.frame.fds[0] = 0;
  fz.frame_size = pool_stats(p).buffer_size;
  gpures_release(h);
  gpures_pool_close(p);
}

static void fuzz_setup(void) {
  if (fz.ready) return;
  warm_library();
  learn_frame();
  int p[2], s[2];
  if (pipe2(p, O_CLOEXEC) != 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) != 0)
    abort();
  fz.own[K_FRAME] = memfd((long)fz.frame_size, MFD_ALLOW_SEALING, F_SEAL_SHRINK);
  fz.own[K_SMALL] = memfd(64, MFD_ALLOW_SEALING, F_SEAL_SHRINK);
  fz.own[K_SEALABLE] = -1; /* a receive seals it: a fresh one per input */
  fz.own[K_PIPE] = p[0];
  fz.own[K_DEV_NULL] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  fz.own[K_EVENTFD] = eventfd(0, EFD_CLOEXEC);
  fz.own[K_SOCKET] = s[0];
  fz.spare[0] = p[1];
  fz.spare[1] = s[1];
  for (int k = 0; k < K_KINDS; k++)
    if (fz.own[k] < -1 || (fz.own[k] == -1 && k != K_SEALABLE)) abort();
  fz.trace = getenv("FUZZ_SESSION_TRACE") != NULL;
  fz.ready = 1;
}

/* ---------------------------------------------------------------- fds */


/* An fd of `kind` to attach, and whether this input made it (then it closes it). */
static int fd_of(unsigned kind, int *made) {
  *made = kind % K_KINDS == K_SEALABLE;
  return *made ? memfd((long)fz.frame_size, MFD_ALLOW_SEALING, 0) : fz.own[kind % K_KINDS];
}

/* Every fd a received handle owns or borrows is open, above stderr and close-on-exec. */
static void check_handle_fds(gpures_handle h, const char *when) {
  _Alignas(8) unsigned char desc[512];
  uint32_t kind = 0, n_rows = 0;
  FUZZ_EXPECT(gpures_kind(h, &kind) == GPURES_OK, "the kind of a received handle");
  const gpures_kind_info *info = gpures_kind_info_of(kind);
  FUZZ_EXPECT(info && info->ownership == GPURES_OWNED, "received a %u, which owns no fds", kind);
  memset(desc, 0, sizeof desc);
  FUZZ_EXPECT(gpures_describe(h, desc, info->desc_size) == GPURES_OK, "describe");
  const gpures_field_info *rows = gpures_kind_fields(kind, &n_rows);
  int seen = 0;
  for (uint32_t r = 0; r < n_rows; r++) {
    if (rows[r].type != GPURES_FIELD_FD) continue;
    uint32_t used = 1;
    if (rows[r].count_offset) memcpy(&used, desc + rows[r].count_offset, 4);
    for (uint32_t i = 0; i < used && i < rows[r].count; i++, seen++) {
      int32_t fd;
      memcpy(&fd, desc + rows[r].offset + i * rows[r].stride, 4);
      FUZZ_EXPECT(fd > 2 && fd_is_open(fd), "%s: a received handle's fd %d is not open", when, fd);
      FUZZ_EXPECT(fd_is_cloexec(fd), "%s: a received handle's fd %d is not close-on-exec", when,
                  fd);
    }
  }
  FUZZ_EXPECT(seen >= 1, "%s: a received handle with no fd", when);
}

/* ------------------------------------------------------------ datagrams */

/*
** sendmsg() as the peer. A datagram socket holds only net.unix.max_dgram_qlen
** messages: wait (bounded) for the reader, the service thread on the SEND side.
*/
static void send_datagram(int fd, const unsigned char *msg, size_t len, const int *fds,
                          uint32_t nfds) {
  double until = now_ms() + 5000;
  for (;;) {
    if (send_with_fds(fd, msg, len, fds, nfds, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len) return;
    FUZZ_EXPECT(errno == EAGAIN && now_ms() < until, "sendmsg as the peer: %s", strerror(errno));
    struct pollfd p = {fd, POLLOUT, 0};
    (void)poll(&p, 1, 10);
  }
}

/* One datagram waiting on fd (nonblocking): its length, or -1 when none; *nfds fds came (closed). */
static ssize_t take_datagram(int fd, unsigned char *buf, size_t cap, uint32_t *nfds) {
  return recv_closing_fds(fd, buf, cap, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, nfds);
}

/* ---------------------------------------------------------------- records */

/* Record control bytes. */
enum { R_REPAIR, R_TYPE, R_FDS_LO, R_FDS_HI, R_PICK, R_LEN, R_SIZE };

/* R_REPAIR bits */
#define F_FIX_HEADER 0x01u /* a valid 48-byte header around the record's bytes */
#define F_REAL_DESC 0x02u  /* with FIX_HEADER: a pool frame's descriptor, its fd attached first */
#define F_BY_ID 0x04u      /* with FIX_HEADER: no descriptor; the bytes are metadata */
#define F_FIX_META 0x08u   /* metadata with a true struct_size and known flags only */
#define F_REAL_PAIR 0x10u  /* buffer (and serial) of a real buffer / frame in flight */
#define F_NEAR 0x20u       /* with REAL_PAIR: the serial one off, or another frame's */
#define F_RELEASE 0x40u    /* RECEIVE: release the oldest held frame after this record */
#define F_COUNT_LIES 0x80u /* with FIX_HEADER: num_fds one more than attached */

typedef struct record {
  const uint8_t *ctl;
  const uint8_t *bytes;
  size_t len;
} record;

/* Splits the input after its first byte into at most MAX_RECORDS records. */
static int split_records(const uint8_t *data, size_t size, record *out) {
  int n = 0;
  while (n < MAX_RECORDS && size >= R_SIZE) {
    size_t len = data[R_LEN] < size - R_SIZE ? data[R_LEN] : size - R_SIZE;
    out[n++] = (record){data, data + R_SIZE, len};
    data += R_SIZE + len, size -= R_SIZE + len;
  }
  return n;
}

/* The (buffer, serial) a repaired header names: what the side under attack knows of. */
typedef struct pair_choice {
  uint64_t buffer, serial;
} pair_choice;

/*
** The types the saved inputs were found with. A BELL (a receiver's doorbell)
** has its hostile cases in test_doorbell.c; a new type here would give every
** saved input another meaning.
*/
static uint32_t record_type(const record *r) { return (r->ctl[R_TYPE] & 7u) % MSG_BELL; }

/*
** A repaired FENCE: a CpuFence descriptor naming the attached fd 0, or, by
** its first byte, one lie a newer or hostile sender tells about it.
*/
static size_t fence_message(const record *r, wire_header h, unsigned char *msg) {
  gpures_cpu_fence_desc d = {sizeof d, 0, 0, 0};
  uint8_t lie = r->len ? r->bytes[0] % 8u : 0, arg = r->len > 1 ? r->bytes[1] : 0;
  h.kind = GPURES_KIND_CPU_FENCE;
  h.desc_size = sizeof d;
  size_t len = sizeof h + sizeof d;
  switch (lie) {
    case 2: h.kind = 38u + arg; break;                       /* a kind not known here */
    case 3: h.header_size = arg == 48 ? 40 : arg; break;     /* a lying header size */
    case 4: h.desc_size += 1u + arg % 16u; break;            /* more descriptor than came */
    case 5: len -= 1u + arg % sizeof d; break;               /* the body cut short */
    case 6: len = 28u + arg % 20u; break;                    /* the header cut after its type */
    case 7: h.kind = GPURES_KIND_DMA_BUF_HANDLE; break;      /* not a SyncPoint */
    default: break;                                          /* honest */
  }
  memcpy(msg, &h, sizeof h);
  memcpy(msg + sizeof h, &d, sizeof d);
  return len;
}

/* The datagram of a record: its bytes as they came, or wrapped in a valid header. */
static size_t build_message(const record *r, pair_choice ids, uint32_t nfds, unsigned char *msg) {
  uint8_t f = r->ctl[R_REPAIR];
  if (!(f & F_FIX_HEADER)) return memcpy(msg, r->bytes, r->len), r->len;
  wire_header h = {WIRE_MAGIC, gpures_abi_version(), sizeof h, GPURES_KIND_DMA_BUF_HANDLE, 0,
                   nfds + ((f & F_COUNT_LIES) ? 1u : 0u), record_type(r), 0,
                   ids.buffer, ids.serial};
  if (h.type == MSG_FENCE) return fence_message(r, h, msg);
  size_t at = sizeof h;
  if (h.type == MSG_HANDLE || h.type == MSG_FRAME) {
    if (f & F_REAL_DESC) {
      memcpy(msg + at, &fz.frame, sizeof fz.frame);
      h.desc_size = sizeof fz.frame;
      at += sizeof fz.frame;
    } else if (!(f & F_BY_ID) || h.type == MSG_HANDLE) {
      memcpy(msg + at, r->bytes, r->len); /* a fuzzed descriptor, its struct_size true */
      h.desc_size = (uint32_t)r->len;
      if (r->len >= 4) memcpy(msg + at, &h.desc_size, 4);
      memcpy(msg, &h, sizeof h);
      return at + r->len;
    }
    memcpy(msg + at, r->bytes, r->len); /* the rest is metadata */
    h.meta_size = (uint32_t)r->len;
    if ((f & F_FIX_META) && r->len >= 8) {
      uint32_t flags;
      memcpy(&flags, msg + at + 4, 4);
      flags &= 0x7fu; /* GPURES_META_HAS_* */
      memcpy(msg + at, &h.meta_size, 4);
      memcpy(msg + at + 4, &flags, 4);
    }
    at += r->len;
  }
  memcpy(msg, &h, sizeof h);
  return at;
}

/* Attaches the record's fds: with F_REAL_DESC the frame-sized memfd comes first. */
static uint32_t record_fds(const record *r, int *fds, int *made) {
  uint32_t nfds = (r->ctl[R_TYPE] >> 3) % 5u;
  unsigned kinds = r->ctl[R_FDS_LO] | (unsigned)r->ctl[R_FDS_HI] << 8;
  for (uint32_t i = 0; i < nfds; i++) fds[i] = fd_of((kinds >> (4 * i)) & 15u, &made[i]);
  if ((r->ctl[R_REPAIR] & (F_FIX_HEADER | F_REAL_DESC)) == (F_FIX_HEADER | F_REAL_DESC) && nfds) {
    if (made[0]) close(fds[0]);
    fds[0] = fz.own[record_type(r) == MSG_FENCE ? K_EVENTFD : K_FRAME], made[0] = 0;
  }
  return nfds;
}

static void close_made(const int *fds, const int *made, uint32_t nfds) {
  for (uint32_t i = 0; i < nfds; i++)
    if (made[i]) close(fds[i]); /* the datagram's copies are the other side's now */
}

static wire_header parsed_header(const unsigned char *msg, size_t len) {
  wire_header h;
  memset(&h, 0, sizeof h);
  memcpy(&h, msg, len < sizeof h ? len : sizeof h);
  if (len < sizeof h || h.header_size != sizeof h) h.type = MSG_HANDLE, h.buffer = h.serial = 0;
  return h;
}

/* =============================================================== RECEIVE */

typedef struct held_frame {
  gpures_handle h;
  uint64_t buffer, serial; /* the sender's: what its release must name */
  int is_frame;            /* a FRAME (its release goes back), not a HANDLE */
} held_frame;

typedef struct receiver {
  int peer;
  gpures_session *session;
  held_frame held[MAX_HELD];
  int num_held;
  pair_choice owed[MAX_RECORDS * 2]; /* released frames whose RELEASE has not come back yet */
  int num_owed;
  int fence_lost, lost_unnamed; /* a refused FENCE named (lost_buffer, lost_serial), or nothing */
  uint64_t lost_buffer, lost_serial;
} receiver;

/* Reads what came back to the peer: each RELEASE names a frame released here, once. */
static void read_releases(receiver *rx, int closed) {
  unsigned char buf[256];
  uint32_t nfds;
  ssize_t n;
  while ((n = take_datagram(rx->peer, buf, sizeof buf, &nfds)) >= 0) {
    if (n == 0) return; /* the end, after close */
    wire_header h = parsed_header(buf, (size_t)n);
    FUZZ_EXPECT(nfds == 0 && n == (ssize_t)sizeof h && h.magic == WIRE_MAGIC,
                "the receiver sent back %zd bytes, %u fds, magic 0x%x", n, nfds, h.magic);
    FUZZ_EXPECT(h.type == MSG_RELEASE || (closed && h.type == MSG_KEEP),
                "the receiver sent back a message of type %u", h.type);
    if (h.type == MSG_KEEP) continue;
    int i = 0;
    while (i < rx->num_owed && (rx->owed[i].buffer != h.buffer || rx->owed[i].serial != h.serial))
      i++;
    FUZZ_EXPECT(i < rx->num_owed, "a RELEASE of (%llu, %llu), which no released frame had",
                (unsigned long long)h.buffer, (unsigned long long)h.serial);
    rx->owed[i] = rx->owed[--rx->num_owed];
  }
}

static void release_oldest(receiver *rx) {
  if (!rx->num_held) return;
  held_frame f = rx->held[0];
  memmove(rx->held, rx->held + 1, (size_t)--rx->num_held * sizeof *rx->held);
  FUZZ_EXPECT(gpures_release(f.h) == GPURES_OK, "release of a received frame");
  if (f.is_frame && rx->num_owed < (int)(sizeof rx->owed / sizeof *rx->owed))
    rx->owed[rx->num_owed++] = (pair_choice){f.buffer, f.serial};
}

/* What the receive of one datagram gave, checked against what the datagram was. */
static void check_received(receiver *rx, int status, gpures_handle h, const wire_header *sent,
                           const fd_set_bits *before, uint32_t buffers) {
  fd_set_bits after = open_fds();
  if (fz.trace)
    fprintf(stderr, "receive type %u buffer %llu: status %d handle %s %s\n", sent->type,
            (unsigned long long)sent->buffer, status, h ? "yes" : "no",
            status ? gpures_last_error() : "");
  if (status != GPURES_OK) {
    FUZZ_EXPECT(h == 0, "a failed receive left handle 0x%llx", (unsigned long long)h);
    FUZZ_EXPECT(status != GPURES_E_STALE, "a datagram taken for the end of the session");
    FUZZ_EXPECT(gpures_last_error()[0] != 0, "a failed receive (%d) without a message", status);
    FUZZ_EXPECT(same_fds(before, &after), "a refused datagram left fds open: %s",
                gpures_last_error());
    FUZZ_EXPECT(session_stats(rx->session).buffers == buffers,
                "a refused datagram left a buffer cached");
    return;
  }
  if (!h) {
    FUZZ_EXPECT(sent->type == MSG_FORGET || sent->type == MSG_FENCE, "receive took a datagram of type %u and gave nothing",
                sent->type);
    return;
  }
  check_handle_fds(h, "at receive");
  if (sent->type == MSG_FRAME && sent->desc_size == 0)
    FUZZ_EXPECT(no_new_fds(before, &after), "a frame by id opened fds"); /* a stale fence may close */
  if (rx->num_held == MAX_HELD) release_oldest(rx);
  rx->held[rx->num_held++] = (held_frame){h, sent->buffer, sent->serial, sent->type == MSG_FRAME};
}

/*
** The rule for fences that did not arrive whole, kept here on its own: a
** refused datagram whose raw bytes say FENCE (magic, and the type at its
** fixed offset) marks the message it names (read at their fixed offsets), or
** the next one when it was cut before them; that message is never handed out.
*/
static void check_fence_rule(receiver *rx, const unsigned char *msg, size_t len, int status,
                             gpures_handle h, const wire_header *sent) {
  int carries = sent->type == MSG_FRAME || sent->type == MSG_HANDLE;
  int named = rx->fence_lost && carries &&
               (rx->lost_unnamed ||
                (sent->buffer == rx->lost_buffer && sent->serial == rx->lost_serial));
  FUZZ_EXPECT(!(named && status == GPURES_OK && h),
              "a %s of (%llu, %llu) was handed out though its FENCE was refused",
              sent->type == MSG_FRAME ? "FRAME" : "HANDLE", (unsigned long long)sent->buffer,
              (unsigned long long)sent->serial);
  if (named) rx->fence_lost = 0; /* refused: the mark is spent (or, refused earlier, kept there) */
  wire_header raw;
  memset(&raw, 0, sizeof raw);
  memcpy(&raw, msg, len < sizeof raw ? len : sizeof raw);
  if (status == GPURES_OK || len < 28 || raw.magic != WIRE_MAGIC || raw.type != MSG_FENCE) return;
  rx->fence_lost = 1;
  rx->lost_unnamed = len < sizeof raw;
  rx->lost_buffer = raw.buffer, rx->lost_serial = raw.serial;
}

/* One record: sent by the peer, received with exactly one receive. */
static void receive_record(receiver *rx, const record *r, int allow_unsealed) {
  unsigned char msg[MAX_MSG];
  int fds[4], made[4];
  uint8_t f = r->ctl[R_REPAIR], pick = r->ctl[R_PICK];
  pair_choice ids = {(f & F_REAL_PAIR) ? 1u + pick % 4u : pick, (uint64_t)(pick >> 2) + 1};
  fd_set_bits before = open_fds();
  uint32_t buffers = session_stats(rx->session).buffers;
  uint32_t nfds = record_fds(r, fds, made);
  size_t len = build_message(r, ids, nfds, msg); /* empty ones too: the library tells them from the end */
  send_datagram(rx->peer, msg, len, fds, nfds);
  close_made(fds, made, nfds);
  wire_header sent = parsed_header(msg, len);
  gpures_handle h = 7;
  uint32_t flags = GPURES_CHANNEL_NONBLOCK | (allow_unsealed ? GPURES_CHANNEL_ALLOW_UNSEALED : 0u);
  int status = gpures_session_receive(rx->session, flags, &h);
  check_fence_rule(rx, msg, len, status, h, &sent);
  check_received(rx, status, h, &sent, &before, buffers);
  h = 7;
  status = gpures_session_receive(rx->session, GPURES_CHANNEL_NONBLOCK, &h);
  FUZZ_EXPECT(status == GPURES_OK && h == 0, "a second receive found %d, handle 0x%llx", status,
              (unsigned long long)h);
  if (f & F_RELEASE) release_oldest(rx);
  read_releases(rx, 0);
}

/* Input byte 0 bits */
#define I_SEND 0x01u           /* attack a sending session (else a receiving one) */
#define I_ALLOW_UNSEALED 0x02u /* RECEIVE: GPURES_CHANNEL_ALLOW_UNSEALED */
#define I_CLOSE_FIRST 0x04u    /* RECEIVE: close the session while frames are held */

/* A session of `side` over one end of a channel pair; the peer's end in *peer. */
static gpures_session *open_session(uint32_t side, int *peer) {
  int pair[2], own = side == GPURES_SESSION_SEND ? 0 : 1;
  FUZZ_EXPECT(gpures_channel_pair(pair) == GPURES_OK, "channel pair");
  *peer = pair[1 - own];
  gpures_session *s = NULL;
  FUZZ_EXPECT(gpures_session_open(pair[own], side, &s) == GPURES_OK, "open a session");
  return s;
}

static void attack_receiver(uint8_t mode, const record *recs, int n) {
  receiver rx;
  memset(&rx, 0, sizeof rx);
  rx.session = open_session(GPURES_SESSION_RECEIVE, &rx.peer);
  for (int i = 0; i < n; i++) receive_record(&rx, &recs[i], (mode & I_ALLOW_UNSEALED) != 0);
  if (mode & I_CLOSE_FIRST) {
    FUZZ_EXPECT(gpures_session_close(rx.session) == GPURES_OK, "close");
    rx.session = NULL;
    for (int i = 0; i < rx.num_held; i++) check_handle_fds(rx.held[i].h, "after the close");
  }
  while (rx.num_held) release_oldest(&rx);
  read_releases(&rx, rx.session == NULL);
  if (rx.session) FUZZ_EXPECT(gpures_session_close(rx.session) == GPURES_OK, "close");
  read_releases(&rx, 1);
  close(rx.peer);
}

/* ================================================================== SEND */

typedef struct flight {
  gpures_handle mine; /* our own reference: its refcount says whether the session let go */
  uint64_t buffer, serial;
  int named;          /* some datagram named (buffer, serial) in a RELEASE, or buffer in a KEEP */
} flight;

typedef struct sender {
  int peer;
  gpures_pool *pool;
  gpures_session *session;
  flight flights[SLOTS]; /* the last one is the sentinel */
  int num_flights;
} sender;

static uint32_t refcount(gpures_handle h) {
  uint32_t n = 0;
  FUZZ_EXPECT(gpures_refcount(h, &n) == GPURES_OK, "refcount of a frame we hold");
  return n;
}

/* Reads (and drops) what the session sent the peer: frames, FORGETs. */
static void drain_peer(int fd) {
  unsigned char buf[2048];
  uint32_t nfds;
  while (take_datagram(fd, buf, sizeof buf, &nfds) > 0) {}
}

static void send_frame(sender *tx) {
  gpures_handle h = 0;
  FUZZ_EXPECT(gpures_pool_acquire(tx->pool, 0, 0, NULL, &h) == GPURES_OK, "acquire");
  uint64_t id = 0;
  uint32_t sent = 0;
  FUZZ_EXPECT(gpures_buffer_id(h, &id) == GPURES_OK && id, "buffer id of a pool frame");
  FUZZ_EXPECT(gpures_session_send(tx->session, h, 0, &sent) == GPURES_OK && sent, "send");
  int i = tx->num_flights++;
  tx->flights[i] = (flight){h, id, (uint64_t)i + 1, 0}; /* serials count from 1 */
  drain_peer(tx->peer);
}

/* Marks the frames a datagram could truthfully take back (as the library might read it). */
static void note_named(sender *tx, const unsigned char *msg, size_t len) {
  if (len < sizeof(wire_header)) return;
  wire_header h;
  memcpy(&h, msg, sizeof h);
  for (int i = 0; i < tx->num_flights; i++)
    if (h.buffer == tx->flights[i].buffer && (h.serial == tx->flights[i].serial || h.type == MSG_KEEP))
      tx->flights[i].named = 1;
}

static void answer_record(sender *tx, const record *r) {
  unsigned char msg[MAX_MSG];
  int fds[4], made[4];
  uint8_t f = r->ctl[R_REPAIR], pick = r->ctl[R_PICK];
  int real = tx->num_flights - 1; /* never the sentinel */
  pair_choice ids = {pick, pick >> 4};
  if (f & F_REAL_PAIR) {
    const flight *a = &tx->flights[pick % real], *b = &tx->flights[(pick / 8u) % real];
    ids = (pair_choice){a->buffer, a->serial};
    if (f & F_NEAR) ids.serial = (pick & 0x80u) ? b->serial : a->serial + ((pick & 0x40u) ? 1 : -1);
  }
  uint32_t nfds = record_fds(r, fds, made);
  size_t len = build_message(r, ids, nfds, msg);
  note_named(tx, msg, len);
  send_datagram(tx->peer, msg, len, fds, nfds);
  close_made(fds, made, nfds);
}

/*
** The barrier: the peer releases the sentinel truthfully, last. The service
** thread reads in order, so once the sentinel is back all before it was
** taken. False when a fuzzed datagram named the sentinel (then only the
** checks that cannot race stay).
*/
static int sentinel_barrier(sender *tx) {
  flight *s = &tx->flights[tx->num_flights - 1];
  if (s->named) return 0;
  wire_header h = {WIRE_MAGIC, gpures_abi_version(), sizeof h, 0, 0, 0, MSG_RELEASE, 0,
                   s->buffer, s->serial};
  send_datagram(tx->peer, (const unsigned char *)&h, sizeof h, NULL, 0);
  s->named = 1;
  double until = now_ms() + 5000;
  while (refcount(s->mine) != 1) {
    FUZZ_EXPECT(now_ms() < until, "the service thread never took a true release");
    struct timespec t = {0, 100000};
    nanosleep(&t, NULL);
  }
  return 1;
}

/* After the barrier: only named frames came back, and the counts are exact. */
static void check_flights(sender *tx, int exact) {
  uint64_t held = 0;
  for (int i = 0; i < tx->num_flights; i++) {
    uint32_t rc = refcount(tx->flights[i].mine);
    FUZZ_EXPECT(rc == 1 || rc == 2, "a frame in flight has refcount %u", rc);
    FUZZ_EXPECT(rc == 2 || tx->flights[i].named,
                "frame (%llu, %llu) came back though no datagram released it",
                (unsigned long long)tx->flights[i].buffer,
                (unsigned long long)tx->flights[i].serial);
    held += rc == 2;
  }
  gpures_session_stats st = session_stats(tx->session);
  if (fz.trace)
    fprintf(stderr, "send: %d frames, %llu held, in flight %llu, returned %llu, refused %llu%s\n",
            tx->num_flights, (unsigned long long)held, (unsigned long long)st.in_flight,
            (unsigned long long)st.returned, (unsigned long long)st.refused,
            exact ? "" : " (no barrier)");
  if (!exact) return;
  FUZZ_EXPECT(st.in_flight == held && st.returned == (uint64_t)tx->num_flights - held,
              "the session says %llu in flight, %llu returned; %llu of %d are held",
              (unsigned long long)st.in_flight, (unsigned long long)st.returned,
              (unsigned long long)held, tx->num_flights);
}

/* Our references gone: the pool's in_use is what the peer holds, and no held slot is handed out. */
static void check_slots(sender *tx, int exact) {
  uint64_t held_ids[SLOTS];
  int num_held = 0;
  for (int i = 0; i < tx->num_flights; i++) {
    if (refcount(tx->flights[i].mine) == 2) held_ids[num_held++] = tx->flights[i].buffer;
    FUZZ_EXPECT(gpures_release(tx->flights[i].mine) == GPURES_OK, "release");
  }
  gpures_pool_stats ps = pool_stats(tx->pool);
  if (exact)
    FUZZ_EXPECT(ps.in_use == session_stats(tx->session).in_flight,
                "the pool has %u slots in use, the session %llu frames in flight", ps.in_use,
                (unsigned long long)session_stats(tx->session).in_flight);
  gpures_handle got[SLOTS];
  int n = 0;
  while (n < SLOTS && gpures_pool_acquire(tx->pool, 0, 0, NULL, &got[n]) == GPURES_OK) {
    uint64_t id = 0;
    FUZZ_EXPECT(gpures_buffer_id(got[n], &id) == GPURES_OK, "buffer id");
    for (int k = 0; k < num_held; k++)
      FUZZ_EXPECT(id != held_ids[k], "slot of buffer %llu handed out while the peer holds it",
                  (unsigned long long)id);
    n++;
  }
  if (exact) FUZZ_EXPECT(n == SLOTS - (int)ps.in_use, "%d slots free, %u in use", n, ps.in_use);
  while (n) gpures_release(got[--n]);
}

static void attack_sender(uint8_t mode, const record *recs, int n) {
  sender tx;
  memset(&tx, 0, sizeof tx);
  tx.session = open_session(GPURES_SESSION_SEND, &tx.peer);
  tx.pool = new_nv12_pool(64, 64, SLOTS);
  int frames = 1 + (mode >> 3) % (SLOTS - 1);
  for (int i = 0; i <= frames; i++) send_frame(&tx); /* the last is the sentinel */
  for (int i = 0; i < n; i++) answer_record(&tx, &recs[i]);
  int exact = sentinel_barrier(&tx);
  check_flights(&tx, exact);
  check_slots(&tx, exact);
  FUZZ_EXPECT(gpures_session_close(tx.session) == GPURES_OK, "close");
  FUZZ_EXPECT(pool_stats(tx.pool).in_use == 0, "slots in use after the session closed");
  FUZZ_EXPECT(gpures_pool_close(tx.pool) == GPURES_OK, "pool close");
  drain_peer(tx.peer);
  close(tx.peer);
}

/* ------------------------------------------------------------- the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  if (size < 1) return 0;
  record recs[MAX_RECORDS];
  int n = split_records(data + 1, size - 1, recs);
  fd_set_bits before = open_fds();
  if (data[0] & I_SEND) attack_sender(data[0], recs, n);
  else attack_receiver(data[0], recs, n);
  fd_set_bits after = open_fds();
  FUZZ_EXPECT(same_fds(&before, &after), "open fds changed across the input");
  return 0;
}
