/*
** fanout.h: what the fan-out sources share; not installed. POSIX only.
**   fanout.c   create, close, the consumer list, stats, leave, negotiation
**   join.c     a consumer's JOIN read and judged: admitted (WELCOME) or refused (REFUSE)
**   deliver.c  publishing: each consumer's queue and window under its policy,
**              the frames sent on as releases come back (the service thread)
**   other_os.c every call refused where sessions do not run
*/
#ifndef GPURES_FANOUT_H
#define GPURES_FANOUT_H

#include "../session/session.h"

/* A frame sent to a consumer and not back yet: when it was published, for the latency. */
typedef struct sent_frame {
  uint64_t buffer;
  uint64_t published_us;
} sent_frame;

/* A frame waiting in a consumer's queue: a reference of the queue's own. */
typedef struct queued_frame {
  gpures_handle frame;
  uint64_t buffer;
  uint64_t published_us;
} queued_frame;

typedef struct consumer {
  uint64_t id;
  gpures_session *session;   /* the fan-out's reference */
  gpures_subscription terms; /* as granted */
  queued_frame queue[GPURES_FANOUT_MAX_DEPTH]; /* oldest first, from `head` */
  uint32_t head, queued;
  sent_frame sent[GPURES_FANOUT_MAX_DEPTH];
  uint32_t in_flight;
  gpures_consumer_stats stats;
  bool refusing;       /* the frames' new format is not one it takes: it gets what it has queued, then this */
  char refusal[300];
} consumer;

/* The frames' format, as the last published frame had it: a change is checked against caps. */
typedef struct frame_format {
  uint32_t kind, format, width, height; /* format: a PixelFormat id, 0 when the kind has none */
  uint64_t modifier;
  gpures_device_id device; /* of the frame's memory (NONE: any importer's) */
} frame_format;

typedef struct room_notice {
  uint32_t queue;
  uint64_t token;
} room_notice;

struct gpures_fanout {
  _Atomic uint32_t refs; /* the owner, each consumer's session, each call inside */
  pthread_mutex_t mu;
  pthread_cond_t room;   /* a BLOCK consumer's queue has room again, or one left */
  bool closed;
  gpures_fanout_desc desc;
  uint64_t next_id;
  frame_format format;   /* kind 0: nothing published yet */
  consumer **consumers;
  uint32_t num_consumers, cap_consumers;
  room_notice *notices;
  uint32_t num_notices, cap_notices;
  gpures_fanout_stats stats;
};

/* Frames to let go once the fan-out's lock is down (their release may bring a slot home). */
typedef struct frame_list {
  gpures_handle *items;
  uint32_t length, capacity;
} frame_list;
void gpures__frames_add(frame_list *list, gpures_handle frame);
void gpures__frames_release(frame_list *list);

/* fanout.c: reserve + max(depth) + sum(window), with `extra` (NULL: none) counted in. Locked. */
uint32_t gpures__fanout_bound(const gpures_fanout *f, const gpures_subscription *extra);
/* fanout.c: takes a consumer off the list (locked); its queue goes to `drop`. */
void gpures__fanout_remove(gpures_fanout *f, consumer *c, frame_list *drop);
/* fanout.c: ends a consumer taken off the list: its session closes, it is freed. Unlocked. */
void gpures__consumer_end(consumer *c);
/* fanout.c: the consumer whose session is s, or NULL. Locked. */
consumer *gpures__fanout_find(const gpures_fanout *f, const gpures_session *s);
/* deliver.c: wakes publishes waiting for room, and posts the notices. Locked. */
void gpures__fanout_wake(gpures_fanout *f);
/* join.c: whether a consumer's rows take format `ff`; when not, why, into why[size]. */
bool gpures__caps_take(const gpures_subscription *terms, const frame_format *ff, char *why, size_t size);
/* join.c: sends a REFUSE (field, reason) on a channel, without waiting: false when it did not go. */
bool gpures__send_refusal(int fd, int status, const char *field, const char *reason);

#endif /* GPURES_FANOUT_H */
