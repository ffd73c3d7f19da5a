/*
** channel.h: what the channel sources share; not installed. POSIX only.
**   sockets.c    the sockets: listen, accept, connect, pair, wait, shut down, close, unlink
**   messages.c   send and receive: one datagram per handle, its fds attached
**   wire.c       the message format, and every check a received one passes
**   listeners.c  the socket files listeners made, so that only those are removed
**   windows.c    every call refused: Windows has no fd-owning kinds to send
*/
#ifndef GPURES_CHANNEL_H
#define GPURES_CHANNEL_H

#include "../internal.h"

/* ---------------------------------------------------------- the wire format */

#define GPURES__WIRE_MAGIC 0x63727067u /* "gprc" */
#define GPURES__WIRE_MAX_DESC 1024u    /* a newer sender's descriptor may be longer than ours */
#define GPURES__WIRE_MAX_FDS 4u        /* what one descriptor can name */
#define GPURES__WIRE_RECEIVED_FDS 16u  /* room for more, so that "too many" is seen, not truncated */

/* What a datagram is. Plain channels carry HANDLE; sessions the others. */
enum {
  GPURES__MSG_HANDLE = 0,  /* a handle: descriptor and fds */
  GPURES__MSG_FRAME = 1,   /* a session's frame: descriptor and fds the first time, then neither */
  GPURES__MSG_RELEASE = 2, /* receiver to sender: frame `serial` of `buffer` was released */
  GPURES__MSG_FORGET = 3,  /* sender to receiver: `buffer` is gone, drop what was kept for it */
  GPURES__MSG_KEEP = 4,    /* receiver to sender, as it closes: it still holds frames of `buffer` */
  GPURES__MSG_FENCE = 5,   /* sender to receiver: a SyncPoint, the acquire fence of the next frame */
  GPURES__MSG_BELL = 6,    /* receiver to sender: a stream socket to write a byte to after each message */
  GPURES__MSG_JOIN = 7,    /* receiver to a fan-out, first: the terms it asks for (a gpures_subscription) */
  GPURES__MSG_WELCOME = 8, /* fan-out to receiver: the terms granted (a gpures_subscription) */
  GPURES__MSG_REFUSE = 9   /* fan-out to receiver: why it is refused (a gpures__wire_refusal); then the end */
};

/* The body of a REFUSE: the status, the field at fault and the reason, both NUL-terminated. */
typedef struct gpures__wire_refusal {
  int32_t status; /* a GPURES_E_*; a receiver keeps only the ones a refusal can have */
  char field[32];
  char reason[476]; /* the body stays 512 bytes */
} gpures__wire_refusal;

/* Messages whose body is a plain struct of theirs (desc_size bytes, no kind, no fds). */
static inline bool gpures__wire_has_payload(uint32_t type) {
  return type == GPURES__MSG_JOIN || type == GPURES__MSG_WELCOME || type == GPURES__MSG_REFUSE;
}

/*
** One datagram: this header, desc_size bytes of descriptor, meta_size bytes
** of gpures_frame_meta, num_fds fds attached. ABI 1.2 senders wrote the first
** six fields only (header_size 24): such a message is a HANDLE without metadata.
*/
typedef struct gpures__wire_header {
  uint32_t magic;       /* GPURES__WIRE_MAGIC */
  uint32_t abi;         /* the sender's gpures_abi_version() */
  uint32_t header_size; /* sizeof(gpures__wire_header), or GPURES__WIRE_HEADER_1_2 */
  uint32_t kind;        /* GPURES_KIND_* of a kind that owns fds; 0 for RELEASE and FORGET */
  uint32_t desc_size;   /* bytes of descriptor after the header; its struct_size */
  uint32_t num_fds;     /* fds attached, in the order of the descriptor's fd fields */
  uint32_t type;        /* GPURES__MSG_* */
  uint32_t meta_size;   /* bytes of metadata after the descriptor; 0 for none */
  uint64_t buffer;      /* FRAME, RELEASE, FORGET: the sender's buffer id */
  uint64_t serial;      /* FRAME, RELEASE: which sending of the buffer */
} gpures__wire_header;

#define GPURES__WIRE_HEADER_1_2 24u

typedef struct gpures__wire_message {
  gpures__wire_header h;
  unsigned char body[GPURES__DESC_MAX + sizeof(gpures_frame_meta)]; /* descriptor, then metadata */
} gpures__wire_message;

/* Bytes of the message as sent. */
static inline size_t gpures__wire_length(const gpures__wire_message *m) {
  return sizeof m->h + m->h.desc_size + m->h.meta_size;
}

/* The largest datagram a receiver takes, plus one byte to see longer ones. */
#define GPURES__WIRE_RECEIVE_MAX \
  (sizeof(gpures__wire_header) + GPURES__WIRE_MAX_DESC + GPURES_STRUCT_SIZE_MAX + 1)

/*
** The message that sends `handle`: its descriptor with fd fields replaced by
** their positions and addresses dropped. The fds to attach are the handle's
** owned fds 0 .. h.num_fds - 1. Fails (WRONG_KIND, field "resource") for a
** process-local kind; sets op->kind.
*/
int gpures__wire_encode(gpures__op *op, gpures_handle handle, gpures__wire_message *out);

/*
** A HANDLE without metadata in ABI 1.2's form (the 24-byte header, the
** descriptor right after it), so that receivers not yet upgraded still take
** it; the message's bytes to send. Anything else stays as it is.
*/
size_t gpures__wire_compact(gpures__wire_message *m);

/* Appends the handle's metadata, if it has any, after the descriptor. */
int gpures__wire_add_meta(gpures__op *op, gpures_handle handle, gpures__wire_message *m);

/*
** A received datagram of n bytes (8-byte aligned), checked as far as it can
** be without its kind: header, type, sizes. Fills *h (a 1.2 header widened)
** and points *body at the descriptor, which metadata follows.
*/
int gpures__wire_parse(gpures__op *op, const unsigned char *buf, size_t n, uint32_t nfds,
                       gpures__wire_header *h, unsigned char **body);

/*
** The handle a parsed HANDLE or announcing FRAME message carries, with its
** metadata. Checks everything create cannot know about, then every fd with
** gpures__check_frame_fd(), then creates the handle, which adopts the fds. On
** failure the fds are the caller's to close. Sets op->kind.
*/
int gpures__wire_decode(gpures__op *op, const gpures__wire_header *h, unsigned char *body,
                        const int *fds, uint32_t nfds, bool allow_unsealed,
                        gpures_handle *out_handle);

/* The message's metadata, validated for a frame of `width` x `height` (0: unknown). */
int gpures__wire_meta(gpures__op *op, const gpures__wire_header *h, const unsigned char *body,
                      uint32_t width, uint32_t height, gpures_frame_meta *out);

/* ------------------------------------------------------------ datagrams */

typedef struct gpures__datagram {
  uint64_t storage[GPURES__WIRE_RECEIVE_MAX / 8 + 1]; /* aligned, zero past what arrived */
  size_t n;
  int fds[GPURES__WIRE_RECEIVED_FDS];
  uint32_t nfds;
  bool none; /* NONBLOCK and nothing was waiting */
} gpures__datagram;

/*
** Receives one datagram: the bytes and the fds that came with it (the
** caller's to close), or the reason there is none: the end (STALE), a
** message whose fds the kernel withheld, one too long, an empty one. Those
** failures close whatever fds came.
*/
int gpures__datagram_receive(gpures__op op, int fd, uint32_t flags, gpures__datagram *d);
/* Closes the fds of d from `from` on. */
void gpures__datagram_close_fds(gpures__datagram *d, uint32_t from);
/* sendmsg() of one message with `n` fds, waiting for room unless NONBLOCK; *out_sent 1 only when it went. */
int gpures__datagram_send(gpures__op op, int fd, uint32_t flags, const void *bytes, size_t len,
                          const int *fds, uint32_t n, uint32_t *out_sent);

/* ------------------------------------------------------- socket I/O */

/*
** A doorbell pair (gpures_session_bell): two connected Unix stream sockets,
** close-on-exec and nonblocking, that never raise SIGPIPE. OS_ERROR naming the
** call on failure.
*/
int gpures__doorbell_pair(gpures__op op, int out_fds[2]);
/* Whether fd can be a doorbell: a Unix stream socket, nothing else. */
bool gpures__is_doorbell(int fd);
/*
** After sendmsg() or recvmsg() (`call`) on channel fd failed, with errno as
** it left it: 1 to call again (interrupted, or what it waited for, `events`
** of poll(), came), else 0 with the result in *status: GPURES_OK having done
** nothing (NONBLOCK, and the call would wait), or the failure, recorded.
*/
int gpures__channel_io_failed(gpures__op op, int fd, uint32_t flags, short events,
                              const char *call, int *status);

/* ------------------------------------------------- listeners' socket files */

/*
** Remembers that listener fd made the socket file at path (its device and
** inode, now): gpures__listener_forget() removes that file and no other.
** Nothing for abstract names. OUT_OF_MEMORY when it cannot remember.
*/
int gpures__listener_remember(gpures__op op, int fd, const char *path);
/*
** Removes the socket file listener fd made, when the file at its path is
** still that one (not a newer listener's) and this is the process that made
** it; forgets the listener either way. Nothing for other fds.
*/
void gpures__listener_forget(int fd);

#endif /* GPURES_CHANNEL_H */
