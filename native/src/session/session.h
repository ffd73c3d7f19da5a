/*
** session.h: what the session sources share; not installed. POSIX only.
**   session.c   open, close, stats, the notices both sides send
**   send.c      the sending side: buffers announced once, frames by id after,
**               held until their release (or a KEEP) comes back
**   receive.c   the receiving side: the buffer cache, frames over it, releases
**               sent back at each frame's last release, the doorbell it hands the sender
**   service.c   the one background thread: reads the releases coming back
**               to sending sessions, flushes releases a full socket held up
**   subscribe.c a receiving session's JOIN to a fan-out, and its answer
**   windows.c   every call refused: sessions run over channels
*/
#ifndef GPURES_SESSION_H
#define GPURES_SESSION_H

#include <pthread.h>

#include "../channel/channel.h"

/* A frame in flight: the sender's reference, held until the peer releases it. */
typedef struct in_flight {
  uint64_t serial;
  uint64_t buffer;
  gpures_handle frame;
} in_flight;

/* A buffer the peer announced: its handle owns the fds; frames borrow them. */
typedef struct cached_buffer {
  _Atomic uint32_t refs; /* the session's cache, and each live frame over it */
  uint64_t peer_id;      /* the sender's buffer id */
  uint64_t local_id;     /* ours, for gpures_buffer_id() */
  gpures_handle owner;
  uint32_t kind;         /* owner's kind and descriptor, read once: every frame of it borrows them */
  uint32_t width, height;
  unsigned char desc[GPURES__DESC_MAX];
} cached_buffer;

/*
** SEND: a FENCE that went while the message it leads (frame, serial) found
** the socket full. The retry of that frame sends the message alone; anything
** else sent first spends the serial, so the FENCE names nothing that arrives.
*/
typedef struct led_fence {
  gpures_handle frame, fence; /* handle values, compared only: no reference is held */
  uint64_t buffer, serial;
} led_fence;

/* A notice (RELEASE, FORGET) that found the socket full, sent when it has room. */
typedef struct pending_notice {
  uint32_t type;
  uint64_t buffer, serial;
} pending_notice;

#define SESSION_FIRST_ROOM 8u      /* items a session's arrays have room for at first */
#define SESSION_MAX_BUFFERS 1024u   /* per session: more is a peer flooding announcements */
#define SESSION_MAX_IN_FLIGHT 4096u /* frames sent and not released */
#define SESSION_MAX_PENDING 8192u   /* notices waiting for room: releases, forgets */
#define SESSION_MAX_FORGOTTEN 256u

struct gpures_session {
  _Atomic uint32_t refs; /* the owner, the service thread's poll set, each received frame */
  int fd;
  int bell;               /* SEND: the receiver's doorbell, rung after each message (-1: none) */
  uint32_t role;          /* GPURES_SESSION_SEND or _RECEIVE */
  pthread_mutex_t mu;
  bool closed;            /* gpures_session_close() ran: nothing more is sent */
  bool ended;             /* the peer hung up */
  bool bell_given;        /* a doorbell changed hands: RECEIVE gave one, SEND took one (once each) */
  gpures_session_stats stats;
  uint64_t next_serial;    /* SEND: the last serial spent (frames and plain handles alike) */
  led_fence led;           /* SEND: a FENCE on the wire whose message is not (frame 0: none) */
  uint64_t *known; uint32_t num_known, cap_known;           /* SEND: buffers the peer has */
  in_flight *flights; uint32_t num_flights, cap_flights;    /* SEND */
  cached_buffer **cache; uint32_t num_cache, cap_cache;     /* RECEIVE */
  pending_notice *pending; uint32_t num_pending, cap_pending; /* notices waiting for room */
  uint64_t forgotten[SESSION_MAX_FORGOTTEN]; uint32_t num_forgotten; /* RECEIVE, local ids */
  gpures_handle fence;    /* RECEIVE: a FENCE that came, waiting for its frame (0: none) */
  uint64_t fence_buffer, fence_serial; /* the frame it names (0, 0: the next plain handle) */
  bool fence_lost;        /* a FENCE was refused or dropped: the frame it named must be refused too */
  bool lost_unnamed;      /* ... and its header was cut before buffer and serial: the next one is */
  uint64_t lost_buffer, lost_serial;
  struct gpures_fanout *fanout; /* SEND: the fan-out it serves a consumer of (a reference); NULL: none */
  bool join_sent;         /* RECEIVE: gpures_session_subscribe() sent the JOIN */
  bool joined;            /* ... and the producer welcomed it */
};

/* The header of a message without descriptor: a notice, a BELL. */
gpures__wire_header gpures__session_header(uint32_t type, uint64_t buffer, uint64_t serial);
/* Counts a refused message. */
void gpures__session_refused(gpures_session *s);
/* Sends a RELEASE, KEEP or FORGET without waiting; false when the socket is full or gone. */
bool gpures__session_notice(gpures_session *s, uint32_t type, uint64_t buffer, uint64_t serial);
void gpures__session_ref(gpures_session *s);
/* Drops a reference; the last closes the fd and frees the session. */
void gpures__session_unref(gpures_session *s);

/* session.c: a RELEASE came back for (buffer, serial); false when none such is in flight. Locked. */
bool gpures__session_take_flight(gpures_session *s, uint64_t buffer, uint64_t serial,
                                 gpures_handle *out_frame);
/* Lets every frame in flight go (the peer ended, or we close): their releases are not coming. */
void gpures__session_drop_flights(gpures_session *s, bool retire);

/*
** send.c: gpures_session_send() of a frame of `buffer` (not 0) whose message
** gpures__wire_encode() made already, without waiting: a fan-out encodes a
** frame once for all its consumers.
*/
int gpures__session_send_encoded(gpures_session *s, gpures_handle handle, uint64_t buffer,
                                 const gpures__wire_message *msg, uint32_t *out_sent);
/* send.c: the buffer is gone; a sending session that announced it tells its peer (FORGET). */
void gpures__session_forget_buffer(gpures_session *s, uint64_t buffer);
/* send.c: rings the receiver's doorbell, if it gave one. Locked. */
void gpures__session_ring(gpures_session *s);
/* send.c: the doorbell, now the caller's to close (-1: none). Locked. */
int gpures__session_take_bell(gpures_session *s);
/* send.c: reads every message waiting on a sending session (the service thread). */
void gpures__session_read_releases(gpures_session *s);

/*
** session.c: sends a notice now, or queues it for the service thread to send
** when the socket has room; false when it could be neither (the queue is
** full or memory ran out: the caller ends the session). Called with s->mu held.
*/
bool gpures__session_notify(gpures_session *s, uint32_t type, uint64_t buffer, uint64_t serial,
                            bool *queued);
/* session.c: sends the notices that waited for room, in order; called with s->mu held. */
void gpures__session_flush(gpures_session *s);
/* receive.c: tells the sender, as a receiving session closes, which buffers it still holds frames of. */
void gpures__session_keep_held(gpures_session *s);

/*
** Hooks into the fan-out (fanout/deliver.c) a sending session serves: a frame
** came back (a RELEASE, or a KEEP that retired it), the consumer ended. Called
** on the service thread, holding no lock.
*/
void gpures__fanout_ref(struct gpures_fanout *f);
void gpures__fanout_unref(struct gpures_fanout *f);
void gpures__fanout_returned(struct gpures_fanout *f, gpures_session *s, uint64_t buffer);
void gpures__fanout_ended(struct gpures_fanout *f, gpures_session *s);
/*
** subscribe.c: a REFUSE from the fan-out: the session ends, and the call that
** read it fails with the producer's reason (UNSUPPORTED, naming its field).
*/
int gpures__session_refusal(gpures__op op, gpures_session *s, const gpures__wire_header *h,
                            const unsigned char *body);
/* subscribe.c: whether the session sent a JOIN (so a WELCOME or REFUSE may answer it). */
bool gpures__session_subscribed(gpures_session *s);
/* session.c: the fan-out the session serves (a reference is taken; NULL drops it). */
void gpures__session_set_fanout(gpures_session *s, struct gpures_fanout *f);
/* session.c: that fan-out with a reference for the caller, or NULL. */
struct gpures_fanout *gpures__session_fanout(gpures_session *s);

/* service.c: start watching a session (a ref is taken), or look at it again (its wants changed). */
int gpures__service_watch(gpures__op op, gpures_session *s);
void gpures__service_wake(void);
/* Stop watching; returns once the service thread no longer polls its fd. */
void gpures__service_forget(gpures_session *s);

#endif /* GPURES_SESSION_H */
