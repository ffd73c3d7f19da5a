/*
** test_fanout.c: one stream, many consumers (Linux). Each consumer joins with
** its terms and gets every frame published after it joined, at its own pace:
** BLOCK holds the publish back, DROP_OLDEST and LATEST drop for the slow one
** only, and a stalled consumer under a drop policy never makes the producer
** wait for a slot of a pool as large as the rule says. A consumer that leaves
** or dies gives back what it held; one whose terms are out of range, or whose
** rows do not take the frames' format, is refused with the reason, at its join
** or before the first frame of the new format.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "check.h"
#include "fd_util.h"
#include "pools.h"
#include "wire.h"

typedef struct consumer_end {
  gpures_session *rx;
  uint64_t id;
} consumer_end;

static gpures_fanout *new_fanout(uint32_t slots) {
  gpures_fanout_desc d = {sizeof d, slots, 1, 0, {0, 0, {0}}};
  gpures_fanout *f = NULL;
  CHECK_OK(gpures_fanout_create(&d, &f));
  return f;
}

static gpures_subscription terms(uint32_t policy, uint32_t depth, uint32_t window) {
  gpures_subscription t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.policy = policy;
  t.depth = depth;
  t.window = window;
  return t;
}

/* A consumer in this process: its JOIN sent, read by the fan-out, the answer read. */
static int join(gpures_fanout *f, const gpures_subscription *t, consumer_end *out) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) abort();
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &out->rx));
  CHECK_STATUS(GPURES_E_TIMED_OUT, gpures_session_subscribe(out->rx, t, 0, NULL)); /* JOIN sent */
  out->id = 0;
  int status = gpures_fanout_join(f, sv[0], 1000, &out->id);
  gpures_subscription granted = {.struct_size = sizeof granted};
  int answer = gpures_session_subscribe(out->rx, NULL, 1000, &granted);
  CHECK(answer == status || (status != GPURES_OK && answer != GPURES_OK));
  if (status == GPURES_OK) CHECK_EQ(granted.consumer, out->id);
  return status;
}

static gpures_handle publish_next(gpures_pool *pool, gpures_fanout *f, int64_t sequence) {
  gpures_handle frame = 0;
  CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame)); /* never waits: the pool covers the bound */
  gpures_frame_meta m = {.struct_size = sizeof m, .flags = GPURES_META_HAS_SEQUENCE, .sequence = sequence};
  CHECK_OK(gpures_meta_set(frame, &m));
  CHECK_OK(gpures_fanout_publish(f, frame, 0));
  return frame;
}

/* The next frame a consumer has, its sequence in *seq; 0 when none waits. */
static gpures_handle take(consumer_end *c, int64_t *seq) {
  gpures_handle got = 0;
  for (int tries = 0; tries < 200 && !got; tries++) {
    int status = gpures_session_receive(c->rx, GPURES_CHANNEL_NONBLOCK, &got);
    if (status != GPURES_OK) return 0;
    if (!got) usleep(1000);
  }
  gpures_frame_meta m = {.struct_size = sizeof m};
  if (got) CHECK_OK(gpures_meta_get(got, &m));
  *seq = m.sequence;
  return got;
}

static gpures_consumer_stats stats_of(gpures_fanout *f, uint64_t id) {
  gpures_consumer_stats s = {.struct_size = sizeof s};
  CHECK_OK(gpures_fanout_consumer_stats(f, id, &s));
  return s;
}

static uint32_t consumers_now(gpures_fanout *f) {
  gpures_fanout_stats fs = {.struct_size = sizeof fs};
  CHECK_OK(gpures_fanout_stats_get(f, &fs));
  return fs.consumers;
}

/* Waits up to 2 s for the pool to have `in_use` frames out. */
static bool pool_settles(gpures_pool *pool, uint64_t in_use) {
  for (int i = 0; i < 2000; i++) {
    if (pool_stats(pool).in_use == in_use) return true;
    usleep(1000);
  }
  return false;
}

static void every_consumer_gets_each_frame_once_and_the_slot_comes_home_after_the_last(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 8);
  gpures_fanout *f = new_fanout(8);
  consumer_end c[3];
  gpures_subscription t[3] = {terms(GPURES_POLICY_BLOCK, 1, 1), terms(GPURES_POLICY_DROP_OLDEST, 1, 1),
                              terms(GPURES_POLICY_LATEST, 0, 1)};
  for (int i = 0; i < 3; i++) CHECK_OK(join(f, &t[i], &c[i]));
  gpures_handle frame = publish_next(pool, f, 7);
  CHECK_OK(gpures_release(frame)); /* the consumers' references hold the slot */
  gpures_handle got[3];
  for (int i = 0; i < 3; i++) {
    int64_t seq = -1;
    got[i] = take(&c[i], &seq);
    CHECK(got[i] != 0);
    CHECK_EQ(seq, 7);
  }
  CHECK_EQ(pool_stats(pool).in_use, 1);
  for (int i = 0; i < 2; i++) CHECK_OK(gpures_release(got[i]));
  usleep(20000);
  CHECK_EQ(pool_stats(pool).in_use, 1); /* the third still holds it */
  CHECK_OK(gpures_release(got[2]));
  CHECK(pool_settles(pool, 0));
  gpures_consumer_stats s = stats_of(f, c[0].id);
  CHECK_EQ(s.delivered, 1);
  CHECK_EQ(s.returned, 1);
  CHECK_EQ(s.in_flight, 0);
  gpures_fanout_stats fs = {.struct_size = sizeof fs};
  CHECK_OK(gpures_fanout_stats_get(f, &fs));
  CHECK_EQ(fs.consumers, 3);
  CHECK_EQ(fs.published, 1);
  CHECK_EQ(fs.bound, 1 + 1 + 3); /* reserve + deepest queue + the windows */
  CHECK_OK(gpures_fanout_close(f));
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_session_close(c[i].rx));
  CHECK_OK(gpures_pool_close(pool));
}

static void a_stalled_drop_oldest_consumer_drops_its_oldest_and_holds_up_nobody(void) {
  /* bound: reserve 1 + depth 2 + windows 2 + 2 = 7 */
  gpures_pool *pool = new_nv12_pool(64, 32, 7);
  gpures_fanout *f = new_fanout(7);
  consumer_end stalled, steady;
  gpures_subscription ts = terms(GPURES_POLICY_DROP_OLDEST, 2, 2), tb = terms(GPURES_POLICY_BLOCK, 2, 2);
  CHECK_OK(join(f, &ts, &stalled));
  CHECK_OK(join(f, &tb, &steady));
  for (int64_t i = 0; i < 20; i++) {
    gpures_handle frame = publish_next(pool, f, i);
    CHECK_OK(gpures_release(frame));
    int64_t seq = -1;
    gpures_handle got = take(&steady, &seq);
    CHECK_EQ(seq, i); /* every frame, in order */
    CHECK_OK(gpures_release(got));
  }
  gpures_consumer_stats s = stats_of(f, stalled.id);
  CHECK_EQ(s.delivered, 2); /* its window */
  CHECK_EQ(s.queued, 2);    /* the newest two: 18, 19 */
  CHECK_EQ(s.dropped, 16);
  CHECK_EQ(stats_of(f, steady.id).delivered, 20);
  /* It wakes: it gets its window, then the newest two, never the dropped ones. */
  int64_t seqs[4];
  gpures_handle held[4];
  for (int i = 0; i < 2; i++) held[i] = take(&stalled, &seqs[i]);
  CHECK_EQ(seqs[0], 0);
  CHECK_EQ(seqs[1], 1);
  CHECK_OK(gpures_release(held[0]));
  CHECK_OK(gpures_release(held[1]));
  for (int i = 2; i < 4; i++) held[i] = take(&stalled, &seqs[i]);
  CHECK_EQ(seqs[2], 18);
  CHECK_EQ(seqs[3], 19);
  for (int i = 2; i < 4; i++) CHECK_OK(gpures_release(held[i]));
  CHECK(pool_settles(pool, 0));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(stalled.rx));
  CHECK_OK(gpures_session_close(steady.rx));
  CHECK_OK(gpures_pool_close(pool));
}

static void a_latest_consumer_gets_the_newest_frame_when_its_window_opens(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 4);
  gpures_fanout *f = new_fanout(4);
  consumer_end c;
  gpures_subscription t = terms(GPURES_POLICY_LATEST, 0, 1);
  CHECK_OK(join(f, &t, &c));
  for (int64_t i = 0; i < 10; i++) CHECK_OK(gpures_release(publish_next(pool, f, i)));
  int64_t seq = -1;
  gpures_handle first = take(&c, &seq);
  CHECK_EQ(seq, 0);
  CHECK_OK(gpures_release(first));
  gpures_handle newest = take(&c, &seq);
  CHECK_EQ(seq, 9);
  CHECK_EQ(stats_of(f, c.id).dropped, 8);
  CHECK_OK(gpures_release(newest));
  CHECK(pool_settles(pool, 0));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(c.rx));
  CHECK_OK(gpures_pool_close(pool));
}

static void a_full_block_consumer_holds_the_publish_back_until_it_releases(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 4);
  gpures_fanout *f = new_fanout(4);
  consumer_end c;
  gpures_subscription t = terms(GPURES_POLICY_BLOCK, 1, 1);
  CHECK_OK(join(f, &t, &c));
  CHECK_OK(gpures_release(publish_next(pool, f, 0))); /* sent: its window */
  CHECK_OK(gpures_release(publish_next(pool, f, 1))); /* queued: its depth */
  gpures_handle frame = 0;
  CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
  gpures_frame_meta m = {.struct_size = sizeof m, .flags = GPURES_META_HAS_SEQUENCE, .sequence = 2};
  CHECK_OK(gpures_meta_set(frame, &m));
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_fanout_publish(f, frame, 0));
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_fanout_publish(f, frame, 30));
  CHECK_EQ(stats_of(f, c.id).delivered, 1); /* nothing of the refused publish went */
  int64_t seq = -1;
  CHECK_OK(gpures_release(take(&c, &seq)));
  CHECK_OK(gpures_fanout_publish(f, frame, 2000)); /* the release opened the window */
  CHECK_OK(gpures_release(frame));
  for (int64_t want = 1; want <= 2; want++) { /* the queued frame, then the one that waited */
    gpures_handle got = take(&c, &seq);
    CHECK(got != 0);
    CHECK_EQ(seq, want);
    if (got) CHECK_OK(gpures_release(got));
  }
  CHECK(pool_settles(pool, 0));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(c.rx));
  CHECK_OK(gpures_pool_close(pool));
}

static void joins_out_of_range_or_past_the_pool_are_refused_with_the_reason(void) {
  gpures_fanout *f = new_fanout(4);
  consumer_end c;
  int fds = count_open_fds();
  gpures_subscription bad[] = {terms(9, 1, 1), terms(GPURES_POLICY_LATEST, 3, 1),
                               terms(GPURES_POLICY_BLOCK, 65, 1), terms(GPURES_POLICY_BLOCK, 2, 4)};
  const char *fields[] = {"policy", "depth", "depth", "window"};
  for (int i = 0; i < 4; i++) {
    CHECK(join(f, &bad[i], &c) != GPURES_OK);
    CHECK_STR(gpures_last_error_field(), fields[i]); /* what the consumer heard */
    CHECK_PREFIX(gpures_last_error(), "Cannot subscribe: the producer refused: ");
    CHECK_OK(gpures_session_close(c.rx));
  }
  gpures_subscription caps = terms(GPURES_POLICY_BLOCK, 1, 1);
  caps.num_caps = 1;
  caps.caps[0] = (gpures_format_cap){9999, GPURES_MEMORY_DMA_BUF, 0, 0, 0, 0, 0};
  CHECK(join(f, &caps, &c) != GPURES_OK);
  CHECK_STR(gpures_last_error_field(), "caps[0].format");
  CHECK_OK(gpures_session_close(c.rx));
  gpures_fanout_stats fs = {.struct_size = sizeof fs};
  CHECK_OK(gpures_fanout_stats_get(f, &fs));
  CHECK_EQ(fs.refused, 5);
  CHECK_EQ(fs.consumers, 0);
  CHECK_EQ(count_open_fds(), fds); /* every refused channel closed, on both sides */
  CHECK_OK(gpures_fanout_close(f));
}

static void a_first_message_that_is_no_join_is_refused_and_the_fd_closed(void) {
  gpures_fanout *f = new_fanout(4);
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  uint64_t id = 0;
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_fanout_join(f, sv[0], 0, &id)); /* nothing yet */
  CHECK(fd_is_open(sv[0]));
  wire_header h = header_of(MSG_RELEASE, 1, 1); /* claims a frame it never got */
  CHECK(send(sv[1], &h, sizeof h, 0) == sizeof h);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_fanout_join(f, sv[0], 1000, &id));
  CHECK(fd_is_closed(sv[0]));
  struct { wire_header h; char body[512]; } answer;
  CHECK(recv(sv[1], &answer, sizeof answer, 0) == (ssize_t)sizeof answer); /* the REFUSE */
  CHECK_EQ(answer.h.type, 9);
  CHECK(recv(sv[1], &answer, sizeof answer, 0) == 0); /* then the end */
  close(sv[1]);
  int not_channel[2];
  CHECK(pipe(not_channel) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_fanout_join(f, not_channel[0], 0, &id));
  CHECK(fd_is_open(not_channel[0])); /* not ours to close */
  close(not_channel[0]), close(not_channel[1]);
  CHECK_OK(gpures_fanout_close(f));
}

static void a_fanout_full_of_consumers_or_a_pool_too_small_refuses_the_next(void) {
  gpures_fanout_desc d = {sizeof d, 16, 1, 2, {0, 0, {0}}};
  gpures_fanout *f = NULL;
  CHECK_OK(gpures_fanout_create(&d, &f));
  consumer_end c[3];
  gpures_subscription t = terms(GPURES_POLICY_DROP_OLDEST, 1, 1);
  CHECK_OK(join(f, &t, &c[0]));
  CHECK_OK(join(f, &t, &c[1]));
  CHECK(join(f, &t, &c[2]) == GPURES_E_UNSUPPORTED);
  CHECK_STR(gpures_last_error_field(), "consumers");
  CHECK_OK(gpures_session_close(c[2].rx));
  CHECK_OK(gpures_session_close(c[1].rx)); /* it leaves: room for one more */
  for (int i = 0; i < 200 && consumers_now(f) != 1; i++) usleep(1000);
  gpures_subscription deep = terms(GPURES_POLICY_DROP_OLDEST, 8, 8); /* 1 + 8 + 1 + 8 = 18 > 16 */
  CHECK(join(f, &deep, &c[1]) == GPURES_E_UNSUPPORTED);
  CHECK_STR(gpures_last_error_field(), "window");
  CHECK_OK(gpures_session_close(c[1].rx));
  CHECK_OK(join(f, &t, &c[1]));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(c[0].rx));
  CHECK_OK(gpures_session_close(c[1].rx));
}

static gpures_format_cap nv12_row(uint32_t max_width, uint32_t max_height) {
  return (gpures_format_cap){GPURES_PF_NV12, GPURES_MEMORY_DMA_BUF, 0, max_width, max_height, 0, 0};
}

static void a_format_its_rows_do_not_take_refuses_the_consumer_after_its_old_frames_before_a_new_one(void) {
  gpures_pool *small = new_nv12_pool(64, 32, 6), *large = new_nv12_pool(128, 64, 6);
  gpures_fanout *f = new_fanout(6);
  consumer_end narrow, any;
  gpures_subscription tn = terms(GPURES_POLICY_BLOCK, 2, 1), ta = terms(GPURES_POLICY_BLOCK, 2, 1);
  tn.num_caps = 1;
  tn.caps[0] = nv12_row(64, 32);
  CHECK_OK(join(f, &tn, &narrow));
  CHECK_OK(join(f, &ta, &any));
  CHECK_OK(gpures_release(publish_next(small, f, 0)));
  CHECK_OK(gpures_release(publish_next(small, f, 1))); /* queued for both */
  CHECK_OK(gpures_release(publish_next(large, f, 2))); /* 128x64: narrow is refused it */
  int64_t seq = -1;
  for (int64_t want = 0; want < 3; want++) {
    gpures_handle got = take(&any, &seq);
    CHECK_EQ(seq, want);
    CHECK_OK(gpures_release(got));
  }
  for (int64_t want = 0; want < 2; want++) { /* every frame of the old format, the queued one too */
    gpures_handle got = take(&narrow, &seq);
    CHECK_EQ(seq, want);
    CHECK_OK(gpures_release(got));
  }
  gpures_handle none = 0;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "caps", gpures_session_receive(narrow.rx, 0, &none));
  CHECK_PREFIX(gpures_last_error(), "Cannot receive: the producer refused: the frames are DmaBufHandle 128x64");
  CHECK_STATUS(GPURES_E_STALE, gpures_session_receive(narrow.rx, 0, &none));
  CHECK_EQ(consumers_now(f), 1);
  /* Joining now, a consumer whose rows do not take 128x64 is refused at once. */
  consumer_end late;
  CHECK(join(f, &tn, &late) == GPURES_E_UNSUPPORTED);
  CHECK_STR(gpures_last_error_field(), "caps");
  CHECK_OK(gpures_session_close(late.rx));
  CHECK(pool_settles(small, 0));
  CHECK(pool_settles(large, 0));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(narrow.rx));
  CHECK_OK(gpures_session_close(any.rx));
  CHECK_OK(gpures_pool_close(small));
  CHECK_OK(gpures_pool_close(large));
}

static void negotiation_picks_the_first_row_every_consumer_takes(void) {
  gpures_fanout *f = new_fanout(16);
  consumer_end a, b;
  gpures_subscription ta = terms(GPURES_POLICY_LATEST, 0, 1), tb = terms(GPURES_POLICY_LATEST, 0, 1);
  ta.num_caps = 2;
  ta.caps[0] = (gpures_format_cap){GPURES_PF_RGBA_U8, GPURES_MEMORY_DMA_BUF, 0, 0, 0, 0, 0};
  ta.caps[1] = nv12_row(0, 0);
  tb.num_caps = 1;
  tb.caps[0] = nv12_row(1920, 1080);
  CHECK_OK(join(f, &ta, &a));
  CHECK_OK(join(f, &tb, &b));
  gpures_format_cap producer[2] = {{GPURES_PF_RGBA_U8, GPURES_MEMORY_DMA_BUF, 0, 0, 0, 0, 0}, nv12_row(0, 0)};
  gpures_negotiated out = {.struct_size = sizeof out};
  CHECK_OK(gpures_fanout_negotiate(f, producer, 2, 1280, 720, &out));
  CHECK_EQ(out.producer_index, 1); /* b takes no RGBA */
  CHECK_EQ(out.format, GPURES_PF_NV12);
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "producer", gpures_fanout_negotiate(f, producer, 2, 3840, 2160, &out));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(a.rx));
  CHECK_OK(gpures_session_close(b.rx));
}

static void a_consumer_that_dies_holding_frames_leaves_and_gives_them_back(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 6);
  gpures_fanout *f = new_fanout(6);
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  pid_t child = fork();
  if (child == 0) { /* joins, takes two frames, dies holding them */
    close(sv[0]);
    gpures_session *rx = NULL;
    gpures_subscription t = terms(GPURES_POLICY_DROP_OLDEST, 2, 2);
    if (gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &rx) != GPURES_OK ||
        gpures_session_subscribe(rx, &t, 2000, NULL) != GPURES_OK)
      _exit(1);
    gpures_handle got = 0;
    for (int n = 0; n < 2;) n += gpures_session_receive(rx, 0, &got) == GPURES_OK && got;
    raise(SIGKILL);
  }
  close(sv[1]);
  uint64_t id = 0;
  CHECK_OK(gpures_fanout_join(f, sv[0], 2000, &id));
  for (int64_t i = 0; i < 4; i++) CHECK_OK(gpures_release(publish_next(pool, f, i)));
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  for (int i = 0; i < 2000 && consumers_now(f); i++) usleep(1000);
  CHECK_EQ(consumers_now(f), 0);
  CHECK(pool_settles(pool, 0)); /* its window and its queue came back */
  gpures_fanout_stats fs = {.struct_size = sizeof fs};
  CHECK_OK(gpures_fanout_stats_get(f, &fs));
  CHECK_EQ(fs.left, 1);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "consumer", gpures_fanout_leave(f, id));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_pool_close(pool));
}

static void a_release_of_a_frame_never_sent_is_refused_and_frees_nothing(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 4);
  gpures_fanout *f = new_fanout(4);
  consumer_end c;
  gpures_subscription t = terms(GPURES_POLICY_BLOCK, 1, 1);
  CHECK_OK(join(f, &t, &c));
  gpures_handle frame = publish_next(pool, f, 0);
  uint64_t buffer = 0;
  CHECK_OK(gpures_buffer_id(frame, &buffer));
  CHECK_OK(gpures_release(frame));
  int fd = gpures_session_fd(c.rx);
  wire_header lies[] = {header_of(MSG_RELEASE, buffer, 99), header_of(MSG_RELEASE, buffer + 1000, 1),
                        header_of(7 /* a second JOIN */, 0, 0)};
  for (int i = 0; i < 3; i++) CHECK(send(fd, &lies[i], sizeof lies[i], 0) == sizeof lies[i]);
  for (int i = 0; i < 2000 && stats_of(f, c.id).refused < 3; i++) usleep(1000);
  gpures_consumer_stats s = stats_of(f, c.id);
  CHECK_EQ(s.refused, 3);
  CHECK_EQ(s.in_flight, 1); /* its frame is still its own */
  CHECK_EQ(pool_stats(pool).in_use, 1);
  int64_t seq = -1;
  CHECK_OK(gpures_release(take(&c, &seq)));
  CHECK(pool_settles(pool, 0));
  CHECK_OK(gpures_fanout_leave(f, c.id));
  CHECK_EQ(consumers_now(f), 0);
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(c.rx));
  CHECK_OK(gpures_pool_close(pool));
}

static void joins_and_leaves_in_a_flood_leak_nothing(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 8);
  gpures_fanout *f = new_fanout(8);
  int fds = count_open_fds();
  for (int round = 0; round < 200; round++) {
    consumer_end c;
    gpures_subscription t = terms(GPURES_POLICY_DROP_OLDEST, 1, 1);
    CHECK_OK(join(f, &t, &c));
    CHECK_OK(gpures_release(publish_next(pool, f, round)));
    if (round % 2) CHECK_OK(gpures_fanout_leave(f, c.id));
    CHECK_OK(gpures_session_close(c.rx));
  }
  for (int i = 0; i < 2000 && consumers_now(f); i++) usleep(1000);
  CHECK_EQ(consumers_now(f), 0);
  CHECK(pool_settles(pool, 0));
  CHECK_EQ(count_open_fds(), fds);
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_pool_close(pool));
}

static void a_frame_without_a_buffer_identity_or_a_desc_out_of_range_is_refused(void) {
  gpures_fanout *f = new_fanout(4);
  gpures_handle plain = sealable_rgba_frame();
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "frame", gpures_fanout_publish(f, plain, 0));
  CHECK_OK(gpures_release(plain));
  gpures_fanout_desc bad = {sizeof bad, 4, 4, 0, {0, 0, {0}}};
  gpures_fanout *g = NULL;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "reserve", gpures_fanout_create(&bad, &g));
  bad = (gpures_fanout_desc){sizeof bad, 0, 0, 0, {0, 0, {0}}};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "slots", gpures_fanout_create(&bad, &g));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_fanout_close(NULL));
}

/* A JOIN written by hand: `size` bytes of subscription (its struct_size says `claimed`), `fd` attached when >= 0. */
static int raw_join(gpures_fanout *f, const gpures_subscription *t, uint32_t size, uint32_t claimed, int fd) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) abort();
  struct { wire_header h; gpures_subscription t; } msg;
  memset(&msg, 0, sizeof msg);
  msg.h = header_of(7 /* JOIN */, 0, 0);
  msg.h.desc_size = size;
  msg.t = *t;
  msg.t.struct_size = claimed;
  ssize_t sent = fd >= 0 ? send_with_fds(sv[1], &msg, sizeof msg.h + size, &fd, 1, 0)
                         : send(sv[1], &msg, sizeof msg.h + size, 0);
  CHECK(sent == (ssize_t)(sizeof msg.h + size));
  uint64_t id = 0;
  int status = gpures_fanout_join(f, sv[0], 1000, &id);
  struct { wire_header h; char body[512]; } answer;
  CHECK(recv(sv[1], &answer, sizeof answer, 0) > 0);
  CHECK_EQ(answer.h.type, status == GPURES_OK ? 8 : 9); /* WELCOME or REFUSE */
  close(sv[1]);
  if (status == GPURES_OK) CHECK_OK(gpures_fanout_leave(f, id));
  return status;
}

static void joins_whose_sizes_and_counts_lie_are_refused_naming_the_field(void) {
  gpures_fanout *f = new_fanout(8);
  int fds = count_open_fds();
  gpures_subscription t = terms(GPURES_POLICY_LATEST, 0, 1);
  uint32_t head = (uint32_t)offsetof(gpures_subscription, caps);
  CHECK_OK(raw_join(f, &t, head, head, -1)); /* no rows: as short as a subscription may be */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "structSize", raw_join(f, &t, head, head + 32, -1));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "structSize", raw_join(f, &t, 8, 8, -1));
  t.num_caps = 24; /* 24 rows claimed, one carried */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "numCaps", raw_join(f, &t, head + 32, head + 32, -1));
  t.num_caps = 1;
  t.caps[0] = (gpures_format_cap){GPURES_PF_NV12, 0x80, 0, 0, 0, 0, 0}; /* memory bits that mean nothing */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "caps[0].memory", raw_join(f, &t, head + 32, head + 32, -1));
  t = terms(GPURES_POLICY_BLOCK, 1, 1);
  t.reserved = 5;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "reserved", raw_join(f, &t, sizeof t, sizeof t, -1));
  t.reserved = 0;
  t.consumer = 3; /* claims an id */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "consumer", raw_join(f, &t, sizeof t, sizeof t, -1));
  t.consumer = 0;
  int memfd = make_memfd(4096, 1);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fds", raw_join(f, &t, sizeof t, sizeof t, memfd)); /* an fd along */
  close(memfd);
  gpures_fanout_stats fs = {.struct_size = sizeof fs};
  CHECK_OK(gpures_fanout_stats_get(f, &fs));
  CHECK_EQ(fs.refused, 7);
  CHECK_EQ(fs.joined, 1);
  CHECK_EQ(count_open_fds(), fds); /* the attached fd was closed with the refused JOIN */
  CHECK_OK(gpures_fanout_close(f));
}

static void an_answer_to_a_join_never_sent_is_refused_and_ends_nothing(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  gpures_session *rx = NULL;
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &rx));
  struct { wire_header h; char body[512]; } refuse;
  memset(&refuse, 0, sizeof refuse);
  refuse.h = header_of(9 /* REFUSE */, 0, 0);
  refuse.h.desc_size = sizeof refuse.body;
  snprintf(refuse.body + 32, 480, "go away");
  CHECK(send(sv[0], &refuse, sizeof refuse, 0) == (ssize_t)sizeof refuse);
  wire_header welcome = header_of(8 /* WELCOME */, 0, 0);
  CHECK(send(sv[0], &welcome, sizeof welcome, 0) == (ssize_t)sizeof welcome);
  gpures_handle got = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_session_receive(rx, 0, &got));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_session_receive(rx, 0, &got));
  gpures_handle frame = sealable_rgba_frame(); /* the session goes on */
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_send(sv[0], frame, 0, &sent));
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK(got != 0);
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_release(frame));
  CHECK_EQ(session_stats(rx).refused, 2);
  CHECK_OK(gpures_session_close(rx));
  close(sv[0]);
}

/* A thread that publishes with no time limit while a BLOCK consumer is full. */
static void *publish_forever(void *arg) {
  void **args = arg;
  intptr_t status = gpures_fanout_publish(args[0], (gpures_handle)(uintptr_t)args[1], -1);
  return (void *)status;
}

static void a_close_ends_a_publish_waiting_on_another_thread_with_stale(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 4);
  gpures_fanout *f = new_fanout(4);
  consumer_end c;
  gpures_subscription t = terms(GPURES_POLICY_BLOCK, 1, 1);
  CHECK_OK(join(f, &t, &c));
  CHECK_OK(gpures_release(publish_next(pool, f, 0)));
  CHECK_OK(gpures_release(publish_next(pool, f, 1))); /* window and queue full */
  gpures_handle frame = 0;
  CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
  void *args[2] = {f, (void *)(uintptr_t)frame};
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, publish_forever, args) == 0);
  usleep(50000); /* it waits */
  CHECK_OK(gpures_fanout_close(f));
  void *status = NULL;
  CHECK(pthread_join(thread, &status) == 0);
  CHECK_EQ((intptr_t)status, GPURES_E_STALE);
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_session_close(c.rx));
  CHECK(pool_settles(pool, 0));
  CHECK_OK(gpures_pool_close(pool));
}

static void a_publish_that_times_out_changes_no_format(void) {
  gpures_pool *small = new_nv12_pool(64, 32, 6), *large = new_nv12_pool(128, 64, 6);
  gpures_fanout *f = new_fanout(6);
  consumer_end narrow, full;
  gpures_subscription tn = terms(GPURES_POLICY_DROP_OLDEST, 1, 1), tf = terms(GPURES_POLICY_BLOCK, 1, 1);
  tn.num_caps = 1;
  tn.caps[0] = nv12_row(64, 32);
  CHECK_OK(join(f, &tn, &narrow));
  CHECK_OK(join(f, &tf, &full));
  CHECK_OK(gpures_release(publish_next(small, f, 0)));
  CHECK_OK(gpures_release(publish_next(small, f, 1))); /* the BLOCK consumer is full now */
  gpures_handle big = 0;
  CHECK_OK(gpures_pool_acquire(large, 0, 0, NULL, &big));
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_fanout_publish(f, big, 0));
  CHECK_OK(gpures_release(big));
  int64_t seq = -1;
  CHECK_OK(gpures_release(take(&full, &seq))); /* room again: the stream is still 64x32 */
  gpures_handle frame = 0;
  CHECK_OK(gpures_pool_acquire(small, 0, 0, NULL, &frame));
  gpures_frame_meta m = {.struct_size = sizeof m, .flags = GPURES_META_HAS_SEQUENCE, .sequence = 2};
  CHECK_OK(gpures_meta_set(frame, &m));
  CHECK_OK(gpures_fanout_publish(f, frame, 1000));
  CHECK_OK(gpures_release(frame));
  for (int64_t want = 0; want < 3; want += 2) { /* the narrow one: its window, then the newest */
    gpures_handle got = take(&narrow, &seq);
    CHECK_EQ(seq, want);
    if (got) CHECK_OK(gpures_release(got));
  }
  CHECK_EQ(consumers_now(f), 2); /* nobody was refused a format that never went out */
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(narrow.rx));
  CHECK_OK(gpures_session_close(full.rx));
  CHECK(pool_settles(small, 0));
  CHECK(pool_settles(large, 0));
  CHECK_OK(gpures_pool_close(small));
  CHECK_OK(gpures_pool_close(large));
}

static void a_frame_whose_fence_cannot_cross_is_refused_before_any_consumer_gets_it(void) {
  gpures_pool *pool = new_nv12_pool(64, 32, 4);
  gpures_fanout *f = new_fanout(4);
  consumer_end a, b;
  gpures_subscription t = terms(GPURES_POLICY_BLOCK, 1, 1);
  CHECK_OK(join(f, &t, &a));
  CHECK_OK(join(f, &t, &b));
  gpures_handle frame = 0, local = 0;
  CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
  gpures_vk_semaphore_desc v = {.struct_size = sizeof v, .semaphore = 5}; /* process-local */
  CHECK_OK(gpures_vk_semaphore_create(&v, NULL, &local));
  CHECK_OK(gpures_fences_set(frame, local, 0));
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "acquire", gpures_fanout_publish(f, frame, 0));
  CHECK_EQ(consumers_now(f), 2); /* nobody left over the frame's fence */
  CHECK_EQ(stats_of(f, a.id).delivered + stats_of(f, b.id).delivered, 0);
  gpures_fanout_stats fs = {.struct_size = sizeof fs};
  CHECK_OK(gpures_fanout_stats_get(f, &fs));
  CHECK_EQ(fs.published, 0);
  CHECK_OK(gpures_fences_set(frame, 0, 0)); /* without it, the frame goes to both */
  CHECK_OK(gpures_fanout_publish(f, frame, 0));
  CHECK_EQ(stats_of(f, a.id).delivered + stats_of(f, b.id).delivered, 2);
  CHECK_OK(gpures_release(local));
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_fanout_close(f));
  CHECK_OK(gpures_session_close(a.rx));
  CHECK_OK(gpures_session_close(b.rx));
  CHECK_OK(gpures_pool_close(pool));
}

/* xorshift64: the same lies every run. */
static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
  return *state;
}

static void two_thousand_random_joins_are_judged_without_a_leak(void) {
  gpures_fanout *f = new_fanout(64);
  int fds = count_open_fds();
  uint64_t state = 0x9e3779b97f4a7c15ull;
  uint32_t admitted = 0;
  for (int round = 0; round < 2000; round++) {
    gpures_subscription t = terms(1 + next_random(&state) % 4, next_random(&state) % 70, next_random(&state) % 70);
    t.num_caps = next_random(&state) % 30;
    for (uint32_t i = 0; i < GPURES_FANOUT_MAX_CAPS; i++) {
      uint64_t r = next_random(&state);
      t.caps[i] = (gpures_format_cap){(uint32_t)(r % 60), (uint32_t)(r >> 8) % 9, r >> 16 & 1,
                                      (uint32_t)(r >> 20) % 5000, (uint32_t)(r >> 32) % 5000,
                                      (uint32_t)(r >> 40) % 130, (uint32_t)(r >> 50) % 3};
    }
    if (next_random(&state) % 8 == 0) t.reserved = 1;
    uint32_t size = (uint32_t)(next_random(&state) % (sizeof t + 1));
    uint32_t claimed = next_random(&state) % 4 ? size : (uint32_t)(next_random(&state) % 1000);
    int status = raw_join(f, &t, size, claimed, -1);
    CHECK(status == GPURES_OK || status == GPURES_E_INVALID_VALUE || status == GPURES_E_UNSUPPORTED);
    admitted += status == GPURES_OK;
  }
  CHECK(admitted > 0); /* some lies are the truth */
  CHECK_EQ(consumers_now(f), 0); /* raw_join takes each admitted one off again */
  CHECK_EQ(count_open_fds(), fds);
  CHECK_OK(gpures_fanout_close(f));
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  RUN(every_consumer_gets_each_frame_once_and_the_slot_comes_home_after_the_last);
  RUN(a_stalled_drop_oldest_consumer_drops_its_oldest_and_holds_up_nobody);
  RUN(a_latest_consumer_gets_the_newest_frame_when_its_window_opens);
  RUN(a_full_block_consumer_holds_the_publish_back_until_it_releases);
  RUN(joins_out_of_range_or_past_the_pool_are_refused_with_the_reason);
  RUN(a_first_message_that_is_no_join_is_refused_and_the_fd_closed);
  RUN(a_fanout_full_of_consumers_or_a_pool_too_small_refuses_the_next);
  RUN(a_format_its_rows_do_not_take_refuses_the_consumer_after_its_old_frames_before_a_new_one);
  RUN(negotiation_picks_the_first_row_every_consumer_takes);
  RUN(a_consumer_that_dies_holding_frames_leaves_and_gives_them_back);
  RUN(a_release_of_a_frame_never_sent_is_refused_and_frees_nothing);
  RUN(joins_and_leaves_in_a_flood_leak_nothing);
  RUN(a_frame_without_a_buffer_identity_or_a_desc_out_of_range_is_refused);
  RUN(joins_whose_sizes_and_counts_lie_are_refused_naming_the_field);
  RUN(two_thousand_random_joins_are_judged_without_a_leak);
  RUN(an_answer_to_a_join_never_sent_is_refused_and_ends_nothing);
  RUN(a_close_ends_a_publish_waiting_on_another_thread_with_stale);
  RUN(a_publish_that_times_out_changes_no_format);
  RUN(a_frame_whose_fence_cannot_cross_is_refused_before_any_consumer_gets_it);
  return check_finish("test_fanout");
}
