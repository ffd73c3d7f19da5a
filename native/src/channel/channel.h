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

/* One datagram: this header, desc_size bytes of descriptor, num_fds fds attached. */
typedef struct gpures__wire_header {
  uint32_t magic;       /* GPURES__WIRE_MAGIC */
  uint32_t abi;         /* the sender's gpures_abi_version() */
  uint32_t header_size; /* sizeof(gpures__wire_header) */
  uint32_t kind;        /* GPURES_KIND_* of a kind that owns fds */
  uint32_t desc_size;   /* bytes of descriptor after the header; its struct_size */
  uint32_t num_fds;     /* fds attached, in the order of the descriptor's fd fields */
} gpures__wire_header;

typedef struct gpures__wire_message {
  gpures__wire_header h;
  unsigned char desc[GPURES__DESC_MAX];
} gpures__wire_message;

/*
** The message that sends `handle`: its descriptor with fd fields replaced by
** their positions and addresses dropped. The fds to attach are the handle's
** owned fds 0 .. h.num_fds - 1. Fails (WRONG_KIND, field "resource") for a
** process-local kind; sets op->kind.
*/
int gpures__wire_encode(gpures__op *op, gpures_handle handle, gpures__wire_message *out);

/*
** A handle from a received datagram of n bytes (zero past n, 8-byte aligned)
** and the fds that came with it. Checks everything create cannot know about,
** then every fd with gpures__check_frame_fd(), then creates the handle, which
** adopts the fds. On failure the fds are the caller's to close. Sets op->kind
** once the header names one.
*/
int gpures__wire_decode(gpures__op *op, unsigned char *buf, size_t n, const int *fds,
                        uint32_t nfds, bool allow_unsealed, gpures_handle *out_handle);

/* ------------------------------------------------------- socket I/O */

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
