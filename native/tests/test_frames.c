/*
** test_frames.c: what a frame carries and where it goes (Linux).
**
** Frame metadata (gpures_meta_*): every group round-trips, each class of bad
** value is refused naming its field, clones share it, NULL clears it.
** Frame pools (gpures_pool_*): sealed memfd slots in the standard layout,
** stable buffer ids, waits that time out, wake, get cancelled or end with
** the pool, and memory that goes only when its last frame comes back.
** Sessions (gpures_session_*) between two real processes: every byte and
** every field of 200 frames arrives, fds cross once per buffer, a slow
** consumer makes the producer wait, a consumer that exits or is killed
** returns its slots, a producer that closes retires the slots still held;
** a fork()ed child streams through a service thread of its own.
** Hostile peers: datagrams built by hand, refused and counted, the session
** going on and no slot freed by a release that was never owed.
*/
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "clock_util.h"
#include "fd_util.h"
#include "fork_util.h"
#include "pools.h"
#include "wire.h"

/* --------------------------------------------------------------- helpers */

static gpures_frame_meta meta_init(uint32_t flags) {
  gpures_frame_meta m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  m.flags = flags;
  return m;
}

/* The pools of these tests: 640x360 NV12 frames. */
static gpures_pool_desc pool_desc(uint32_t slots) { return nv12_pool_desc(640, 360, slots); }
static gpures_pool *nv12_pool(uint32_t slots) { return new_nv12_pool(640, 360, slots); }

static uint64_t buffer_id(gpures_handle h) {
  uint64_t id = 0;
  CHECK_OK(gpures_buffer_id(h, &id));
  return id;
}


/* Frame `n`'s bytes: a pattern of its own, and in the last 8 bytes an FNV-1a checksum of the rest. */
static uint8_t pattern_byte(uint32_t n, uint64_t k) {
  return (uint8_t)(n * 131u + k * 7u + (k >> 9));
}
static uint64_t fnv1a(const uint8_t *p, uint64_t size) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t k = 0; k < size; k++) h = (h ^ p[k]) * 1099511628211ull;
  return h;
}
static void fill_frame(uint8_t *p, uint64_t size, uint32_t n) {
  for (uint64_t k = 0; k < size - 8; k++) p[k] = pattern_byte(n, k);
  uint64_t sum = fnv1a(p, size - 8);
  memcpy(p + size - 8, &sum, 8);
}
static bool frame_intact(const uint8_t *p, uint64_t size, uint32_t n) {
  for (uint64_t k = 0; k < size - 8; k++)
    if (p[k] != pattern_byte(n, k)) return false;
  uint64_t sum;
  memcpy(&sum, p + size - 8, 8);
  return sum == fnv1a(p, size - 8);
}

/* Maps the frame, fills it as frame `n`, unmaps. */
static void write_frame(gpures_handle h, uint32_t n) {
  void *p = NULL;
  uint64_t size = 0;
  if (!CHECK_OK(gpures_map(h, 0, GPURES_MAP_READ | GPURES_MAP_WRITE, &p, &size))) return;
  fill_frame(p, size, n);
  CHECK_OK(gpures_unmap(p));
}

static bool read_frame(gpures_handle h, uint32_t n) {
  void *p = NULL;
  uint64_t size = 0;
  if (!CHECK_OK(gpures_map(h, 0, GPURES_MAP_READ, &p, &size))) return false;
  bool ok = frame_intact(p, size, n);
  CHECK_OK(gpures_unmap(p));
  return ok;
}

/* ----------------------------------------------------------------- meta */

static void every_metadata_group_round_trips(void) {
  gpures_handle h = sealable_rgba_frame();
  gpures_frame_meta m = meta_init(GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_TIMING |
                                  GPURES_META_HAS_VISIBLE | GPURES_META_HAS_COLOR |
                                  GPURES_META_HAS_MASTERING | GPURES_META_HAS_CONTENT_LIGHT |
                                  GPURES_META_HAS_USER_DATA);
  m.sequence = 9007199254740991LL;
  m.pts = -9007199254740991LL;
  m.duration = 1000;
  m.timebase_num = 1;
  m.timebase_den = 1000000;
  m.visible = (gpures_rect){2, 4, 30, 28};
  m.primaries = 9;  /* bt2020 */
  m.transfer = 16;  /* pq */
  m.matrix = 9;     /* bt2020-ncl */
  m.full_range = 1;
  m.mastering = (gpures_mastering_display){35400, 14600, 8500, 39850, 6550, 2300,
                                           15635, 16450, 10000000, 50};
  m.content_light = (gpures_content_light){1000, 400};
  for (int i = 0; i < 16; i++) m.user_data[i] = (uint8_t)(0xa0 + i);
  CHECK_OK(gpures_meta_set(h, &m));
  gpures_frame_meta got = meta_init(0);
  CHECK_OK(gpures_meta_get(h, &got));
  CHECK_EQ(got.struct_size, sizeof got);
  CHECK(memcmp(&got, &m, sizeof m) == 0);

  /* matrix 0 (rgb) and the limited range are values too, not absence. */
  gpures_frame_meta rgb = meta_init(GPURES_META_HAS_COLOR);
  rgb.primaries = 1, rgb.transfer = 13, rgb.matrix = 0, rgb.full_range = 0;
  CHECK_OK(gpures_meta_set(h, &rgb));
  CHECK_OK(gpures_meta_get(h, &got));
  CHECK_EQ(got.flags, GPURES_META_HAS_COLOR);
  CHECK_EQ(got.primaries, 1);
  CHECK_EQ(got.transfer, 13);
  CHECK_EQ(got.sequence, 0); /* absent groups read as zeros */
  CHECK_OK(gpures_release(h));
}

static void an_absent_group_reads_as_zeros_whatever_was_written_in_it(void) {
  gpures_handle h = sealable_rgba_frame();
  gpures_frame_meta m = meta_init(GPURES_META_HAS_SEQUENCE);
  m.sequence = 5;
  m.visible = (gpures_rect){100, 100, 1000, 1000}; /* out of the frame, but not present */
  m.timebase_num = 0;
  m.duration = -4;
  CHECK_OK(gpures_meta_set(h, &m));
  gpures_frame_meta got = meta_init(0);
  CHECK_OK(gpures_meta_get(h, &got));
  CHECK_EQ(got.sequence, 5);
  CHECK_EQ(got.visible.x, 0);
  CHECK_EQ(got.duration, 0);
  CHECK_OK(gpures_release(h));
}

/* Sets m on a fresh frame: it must fail with INVALID_VALUE naming `field`, and store nothing. */
static void refused_naming(gpures_frame_meta m, const char *field, int line) {
  gpures_handle h = sealable_rgba_frame();
  gpures_frame_meta before = meta_init(GPURES_META_HAS_SEQUENCE);
  before.sequence = 77;
  CHECK_OK(gpures_meta_set(h, &before));
  if (!CHECK_FAILS(GPURES_E_INVALID_VALUE, field, gpures_meta_set(h, &m)))
    fprintf(stderr, "    (case at line %d)\n", line);
  gpures_frame_meta got = meta_init(0);
  CHECK_OK(gpures_meta_get(h, &got));
  CHECK_EQ(got.sequence, 77); /* the refused metadata did not replace what was there */
  CHECK_OK(gpures_release(h));
}
#define REFUSED(m, field) refused_naming((m), (field), __LINE__)

static void bad_metadata_is_refused_naming_its_field(void) {
  gpures_frame_meta m;
  /* The visible rectangle lies within the frame's 32x32. */
  m = meta_init(GPURES_META_HAS_VISIBLE), m.visible = (gpures_rect){16, 0, 17, 8};
  REFUSED(m, "visible.width");
  m = meta_init(GPURES_META_HAS_VISIBLE), m.visible = (gpures_rect){0, 30, 8, 3};
  REFUSED(m, "visible.height");
  m = meta_init(GPURES_META_HAS_VISIBLE), m.visible = (gpures_rect){0xffffffffu, 0, 2, 2};
  REFUSED(m, "visible.width");
  m = meta_init(GPURES_META_HAS_VISIBLE), m.visible = (gpures_rect){0, 0, 0, 4};
  REFUSED(m, "visible.width");
  /* Timing. */
  m = meta_init(GPURES_META_HAS_TIMING), m.timebase_num = 0, m.timebase_den = 90000;
  REFUSED(m, "timing.timebaseNum");
  m = meta_init(GPURES_META_HAS_TIMING), m.timebase_num = 1, m.timebase_den = 0;
  REFUSED(m, "timing.timebaseDen");
  m = meta_init(GPURES_META_HAS_TIMING), m.timebase_num = 1, m.timebase_den = 90000, m.duration = -1;
  REFUSED(m, "timing.duration");
  m = meta_init(GPURES_META_HAS_TIMING), m.timebase_num = 1, m.timebase_den = 1;
  m.pts = 9007199254740992LL;
  REFUSED(m, "timing.pts");
  /* Colour by H.273 codes: 3 is reserved, 0 is no primaries. */
  m = meta_init(GPURES_META_HAS_COLOR), m.primaries = 3, m.transfer = 1, m.matrix = 1;
  REFUSED(m, "color.primaries");
  m = meta_init(GPURES_META_HAS_COLOR), m.primaries = 0, m.transfer = 1, m.matrix = 1;
  REFUSED(m, "color.primaries");
  m = meta_init(GPURES_META_HAS_COLOR), m.primaries = 1, m.transfer = 99, m.matrix = 1;
  REFUSED(m, "color.transfer");
  m = meta_init(GPURES_META_HAS_COLOR), m.primaries = 1, m.transfer = 1, m.matrix = 3;
  REFUSED(m, "color.matrix");
  /* Mastering display. */
  gpures_mastering_display good = {35400, 14600, 8500, 39850, 6550, 2300, 15635, 16450, 10000000, 50};
  m = meta_init(GPURES_META_HAS_MASTERING), m.mastering = good, m.mastering.green_y = 50001;
  REFUSED(m, "mastering.greenY");
  m = meta_init(GPURES_META_HAS_MASTERING), m.mastering = good, m.mastering.white_x = 0xffffffffu;
  REFUSED(m, "mastering.whiteX");
  m = meta_init(GPURES_META_HAS_MASTERING), m.mastering = good;
  m.mastering.min_luminance = m.mastering.max_luminance;
  REFUSED(m, "mastering.minLuminance");
  m = meta_init(GPURES_META_HAS_MASTERING), m.mastering = good, m.mastering.max_luminance = 0;
  m.mastering.min_luminance = 0;
  REFUSED(m, "mastering.maxLuminance");
  /* Content light. */
  m = meta_init(GPURES_META_HAS_CONTENT_LIGHT), m.content_light = (gpures_content_light){400, 401};
  REFUSED(m, "contentLight.maxFall");
  m = meta_init(GPURES_META_HAS_CONTENT_LIGHT), m.content_light = (gpures_content_light){65536, 0};
  REFUSED(m, "contentLight.maxCll");
  /* Sequence: within +-(2^53 - 1), and not negative. */
  m = meta_init(GPURES_META_HAS_SEQUENCE), m.sequence = 9007199254740992LL;
  REFUSED(m, "sequence");
  m = meta_init(GPURES_META_HAS_SEQUENCE), m.sequence = -9007199254740992LL;
  REFUSED(m, "sequence");
  m = meta_init(GPURES_META_HAS_SEQUENCE), m.sequence = -1;
  REFUSED(m, "sequence");
  /* Flags the library does not know. */
  m = meta_init(1u << 7);
  REFUSED(m, "flags");
  m = meta_init(GPURES_META_HAS_SEQUENCE | 0x80000000u);
  REFUSED(m, "flags");
}

static void metadata_is_shared_by_clones_and_cleared_by_null(void) {
  gpures_handle h = sealable_rgba_frame();
  CHECK_OK(gpures_clone(h));
  gpures_frame_meta m = meta_init(GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_USER_DATA);
  m.sequence = 42;
  m.user_data[15] = 0x5a;
  CHECK_OK(gpures_meta_set(h, &m));
  gpures_frame_meta got = meta_init(0);
  CHECK_OK(gpures_meta_get(h, &got)); /* the clone is the same value: read through either */
  CHECK_EQ(got.sequence, 42);
  CHECK_EQ(got.user_data[15], 0x5a);
  CHECK_OK(gpures_meta_set(h, NULL));
  CHECK_OK(gpures_meta_get(h, &got));
  CHECK_EQ(got.flags, 0);
  CHECK_EQ(got.sequence, 0);
  CHECK_OK(gpures_release(h));
  CHECK_OK(gpures_meta_get(h, &got)); /* still one reference */
  CHECK_OK(gpures_release(h));
  CHECK_STATUS(GPURES_E_STALE, gpures_meta_get(h, &got));
  CHECK_STATUS(GPURES_E_STALE, gpures_meta_set(h, &m));
}

static void metadata_fields_are_listed_as_rows(void) {
  uint32_t n = 0;
  const gpures_field_info *rows = gpures_meta_fields(&n);
  CHECK(rows != NULL);
  CHECK(n >= 20);
  bool seen_sequence = false, seen_primaries = false;
  for (uint32_t i = 0; i < n; i++) {
    if (strcmp(rows[i].path, "sequence") == 0) seen_sequence = rows[i].type == GPURES_FIELD_I64;
    if (strcmp(rows[i].path, "color.primaries") == 0) seen_primaries = rows[i].type == GPURES_FIELD_ENUM;
  }
  CHECK(seen_sequence);
  CHECK(seen_primaries);
}

/* ----------------------------------------------------------------- pool */

static void a_pool_frame_is_a_sealed_memfd_in_the_standard_layout(void) {
  gpures_pool *p = nv12_pool(3);
  gpures_plane_layout planes[4];
  uint64_t size = 0;
  CHECK_OK(gpures_pixel_format_layout(GPURES_PF_NV12, 640, 360, 64, planes, &size));
  gpures_handle f = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f));
  uint32_t kind = 0;
  CHECK_OK(gpures_kind(f, &kind));
  CHECK_EQ(kind, GPURES_KIND_DMA_BUF_HANDLE);
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  CHECK_OK(gpures_dma_buf_handle_describe(f, &d));
  CHECK_EQ(d.num_fds, 1);
  CHECK_EQ(d.fourcc, FOURCC('N', 'V', '1', '2'));
  CHECK_EQ(d.width, 640);
  CHECK_EQ(d.height, 360);
  CHECK_EQ(d.num_planes, 2);
  for (uint32_t i = 0; i < 2; i++) {
    CHECK_EQ(d.planes[i].object_index, 0);
    CHECK_EQ(d.planes[i].offset, planes[i].offset);
    CHECK_EQ(d.planes[i].stride, planes[i].stride);
  }
  int fd = -1;
  CHECK_OK(gpures_dup_fd(f, 0, &fd));
  int seals = fcntl(fd, F_GET_SEALS);
  CHECK(seals >= 0);
  CHECK_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
           F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && (uint64_t)st.st_size == size);
  CHECK(ftruncate(fd, 16) != 0); /* nobody may shrink it */
  close(fd);
  gpures_pool_stats s = pool_stats(p);
  CHECK_EQ(s.buffer_size, size);
  CHECK_EQ(s.slots, 3);
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_pool_close(p));
}

static void buffer_ids_are_stable_per_slot_and_distinct_across_slots(void) {
  gpures_pool *p = nv12_pool(3);
  gpures_handle f[3];
  uint64_t ids[3];
  for (int i = 0; i < 3; i++) {
    CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f[i]));
    ids[i] = buffer_id(f[i]);
    CHECK(ids[i] != 0);
  }
  CHECK(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
  for (int round = 0; round < 10; round++) { /* the slot given back comes out again, same id */
    CHECK_OK(gpures_release(f[1]));
    CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f[1]));
    CHECK_EQ(buffer_id(f[1]), ids[1]);
  }
  gpures_handle clone = f[0];
  CHECK_OK(gpures_clone(clone));
  CHECK_EQ(buffer_id(clone), ids[0]);
  CHECK_OK(gpures_release(clone));
  gpures_handle plain = sealable_rgba_frame(); /* a handle of no pool has none */
  CHECK_EQ(buffer_id(plain), 0);
  CHECK_OK(gpures_release(plain));
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_release(f[i]));
  CHECK_OK(gpures_pool_close(p));
}

static void an_acquire_with_no_free_slot_times_out_after_its_timeout(void) {
  gpures_pool *p = nv12_pool(3);
  gpures_handle f[3], extra = 0;
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f[i]));
  double t0 = now_ms();
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_pool_acquire(p, 0, 0, NULL, &extra));
  CHECK(now_ms() - t0 < 20);
  CHECK_EQ(extra, 0);
  t0 = now_ms();
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_pool_acquire(p, 50, 0, NULL, &extra));
  double waited = now_ms() - t0;
  CHECK(waited >= 49 && waited < 500);
  gpures_pool_stats s = pool_stats(p);
  CHECK_EQ(s.timeouts, 1); /* a try (0 ms) that finds none is no timeout */
  CHECK_EQ(s.waits, 1); /* the 0 ms one gave up without waiting */
  CHECK_EQ(s.in_use, 3);
  CHECK_EQ(s.acquired, 3);
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_release(f[i]));
  CHECK_OK(gpures_pool_close(p));
}

static void a_released_frame_returns_its_slot(void) {
  gpures_pool *p = nv12_pool(3);
  gpures_handle a = 0, b = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &a));
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &b));
  CHECK_EQ(pool_stats(p).in_use, 2);
  CHECK_OK(gpures_clone(a)); /* a clone holds the slot too */
  CHECK_OK(gpures_release(a));
  CHECK_EQ(pool_stats(p).in_use, 2);
  CHECK_OK(gpures_release(a));
  gpures_pool_stats s = pool_stats(p);
  CHECK_EQ(s.in_use, 1);
  CHECK_EQ(s.high_water, 2);
  CHECK_EQ(s.acquired, 2);
  CHECK_OK(gpures_release(b));
  s = pool_stats(p);
  CHECK_EQ(s.in_use, 0);
  CHECK_EQ(s.high_water, 2);
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &a));
  CHECK_EQ(pool_stats(p).acquired, 3);
  CHECK_OK(gpures_release(a));
  CHECK_OK(gpures_pool_close(p));
}

typedef struct waiter {
  gpures_pool *pool;
  int32_t timeout_ms;
  uint32_t ticket;
  int status;
  gpures_handle frame;
  atomic_bool done;
} waiter;

static void *wait_for_frame(void *arg) {
  waiter *w = arg;
  w->status = gpures_pool_acquire(w->pool, w->timeout_ms, w->ticket, NULL, &w->frame);
  atomic_store(&w->done, true);
  return NULL;
}

static void start_waiter(pthread_t *t, waiter *w, gpures_pool *p, int32_t timeout_ms,
                         uint32_t ticket) {
  memset(w, 0, sizeof *w);
  w->pool = p, w->timeout_ms = timeout_ms, w->ticket = ticket;
  pthread_create(t, NULL, wait_for_frame, w);
  sleep_ms(30);
  CHECK(!atomic_load(&w->done)); /* it waits */
}

static void an_acquire_on_another_thread_wakes_when_a_frame_is_released(void) {
  gpures_pool *p = nv12_pool(3);
  gpures_handle f[3];
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f[i]));
  uint64_t id = buffer_id(f[2]);
  pthread_t t;
  waiter w;
  start_waiter(&t, &w, p, -1, 0);
  CHECK_OK(gpures_release(f[2]));
  pthread_join(t, NULL);
  CHECK_OK(w.status);
  CHECK_EQ(buffer_id(w.frame), id);
  CHECK_EQ(pool_stats(p).waits, 1);
  CHECK_OK(gpures_release(w.frame));
  CHECK_OK(gpures_release(f[0]));
  CHECK_OK(gpures_release(f[1]));
  CHECK_OK(gpures_pool_close(p));
}

static void a_cancel_ends_the_wait_of_its_ticket_even_before_it_begins(void) {
  gpures_pool *p = nv12_pool(1);
  gpures_handle f = 0, g = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f));
  pthread_t t;
  waiter w;
  start_waiter(&t, &w, p, -1, 7);
  CHECK_OK(gpures_pool_cancel(p, 8)); /* another ticket's cancel wakes nobody for good */
  sleep_ms(20);
  CHECK(!atomic_load(&w.done));
  CHECK_OK(gpures_pool_cancel(p, 7));
  pthread_join(t, NULL);
  CHECK_STATUS(GPURES_E_CANCELLED, w.status);
  CHECK_EQ(w.frame, 0);
  /* A cancel that comes first ends the wait when it begins. */
  CHECK_OK(gpures_pool_cancel(p, 9));
  double t0 = now_ms();
  CHECK_STATUS(GPURES_E_CANCELLED, gpures_pool_acquire(p, 1000, 9, NULL, &g));
  CHECK(now_ms() - t0 < 500);
  /* ... once: the same ticket waits again afterwards. */
  CHECK_STATUS(GPURES_E_TIMED_OUT, gpures_pool_acquire(p, 10, 9, NULL, &g));
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_pool_close(p));
}

static void closing_a_pool_ends_waits_and_keeps_held_frames_readable(void) {
  int base = count_open_fds();
  gpures_pool *p = nv12_pool(3);
  CHECK_EQ(count_open_fds(), base + 3);
  gpures_handle f = 0, g = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f));
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &g));
  write_frame(f, 3);
  gpures_handle h = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &h));
  pthread_t t;
  waiter w;
  start_waiter(&t, &w, p, -1, 0);
  CHECK_OK(gpures_pool_close(p)); /* the waiter ends with STALE; the pool lives on for f, g, h */
  pthread_join(t, NULL);
  CHECK_STATUS(GPURES_E_STALE, w.status);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(count_open_fds(), base + 2); /* a slot that comes back after close goes */
  gpures_handle more = 0;
  CHECK_FAILS(GPURES_E_STALE, "pool", gpures_pool_acquire(p, 0, 0, NULL, &more));
  CHECK(read_frame(f, 3));
  CHECK_OK(gpures_release(g));
  void *ptr = NULL;
  uint64_t size = 0;
  CHECK_OK(gpures_map(f, 0, GPURES_MAP_READ, &ptr, &size));
  CHECK_OK(gpures_release(f)); /* the last frame: its memory and the pool go */
  CHECK_EQ(count_open_fds(), base);
  CHECK(frame_intact(ptr, size, 3)); /* a mapping outlives its handle */
  CHECK_OK(gpures_unmap(ptr));
}

/* The events waiting on `queue`: their count, and the first one in *out. */
static uint32_t take_events(uint32_t queue, gpures_event *out) {
  gpures_event events[64];
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(queue, events, 64, &n));
  if (n) *out = events[0];
  return n;
}

static void a_notice_tells_a_queue_of_a_free_slot_with_no_thread_waiting(void) {
  gpures_pool *p = nv12_pool(1);
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  gpures_event e;
  CHECK_OK(gpures_pool_notify(p, q, 7)); /* a slot is free now: posted at once */
  CHECK_EQ(take_events(q, &e), 1u);
  CHECK(e.type == GPURES_EVENT_SLOT_FREE && e.token == 7 && e.status == GPURES_OK);
  gpures_handle f = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f));
  for (uint64_t t = 10; t < 1010; t++) CHECK_OK(gpures_pool_notify(p, q, t)); /* any number */
  CHECK_OK(gpures_pool_notify(p, q, 10)); /* the same notice twice is one */
  CHECK_OK(gpures_pool_notify_cancel(p, q, 11, GPURES_E_TIMED_OUT));
  CHECK_OK(gpures_pool_notify_cancel(p, q, 11, GPURES_E_TIMED_OUT)); /* withdrawn already: no-op */
  CHECK_EQ(take_events(q, &e), 0u);
  CHECK_OK(gpures_release(f)); /* the slot comes free: every notice hears of it */
  CHECK_EQ(gpures_event_queue_pending(q), 999u);
  CHECK_EQ(take_events(q, &e), 64u);
  CHECK(e.type == GPURES_EVENT_SLOT_FREE && e.status == GPURES_OK);
  while (take_events(q, &e)) {}
  gpures_pool_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(gpures_pool_stats_get(p, &st));
  CHECK_EQ(st.timeouts, 1u);
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f));
  CHECK_OK(gpures_pool_notify(p, q, 2000));
  CHECK_OK(gpures_pool_close(p)); /* a close ends the notices with STALE */
  CHECK_EQ(take_events(q, &e), 1u);
  CHECK(e.token == 2000 && e.status == (uint32_t)GPURES_E_STALE);
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_event_queue_close(q));
  gpures_pool *other = nv12_pool(1);
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_pool_notify(other, q, 1)); /* a closed queue */
  CHECK_FAILS(GPURES_E_NULL_POINTER, "pool", gpures_pool_notify(NULL, q, 1));
  CHECK_OK(gpures_pool_close(other));
}

static void closing_an_idle_pool_frees_every_slot_at_once(void) {
  int base = count_open_fds();
  gpures_pool *p = nv12_pool(4);
  gpures_handle f = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f));
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_pool_close(p));
  CHECK_EQ(count_open_fds(), base);
  CHECK_OK(gpures_pool_close(NULL));
}

static void bad_pool_descriptors_are_refused_naming_the_field(void) {
  uint32_t count = 0, no_fourcc = 0;
  const gpures_pixel_format_info *table = gpures_pixel_format_table(&count);
  for (uint32_t i = 0; i < count && !no_fourcc; i++)
    if (!table[i].drm_fourcc) no_fourcc = table[i].id;
  CHECK(no_fourcc != 0);
  /* A pool of 3 slots with one field spoiled; every field is a uint32_t. */
  const struct {
    const char *field;
    size_t offset;
    uint32_t value;
  } spoiled[] = {
      {"slots", offsetof(gpures_pool_desc, slots), 0},
      {"slots", offsetof(gpures_pool_desc, slots), GPURES_POOL_MAX_SLOTS + 1},
      {"format", offsetof(gpures_pool_desc, format), no_fourcc},
      {"format", offsetof(gpures_pool_desc, format), 0},
      {"width", offsetof(gpures_pool_desc, width), 0},
      {"height", offsetof(gpures_pool_desc, height), 0},
      {"rowAlign", offsetof(gpures_pool_desc, row_align), 3},
      {"flags", offsetof(gpures_pool_desc, flags), 1},
  };
  gpures_pool_desc d;
  for (size_t i = 0; i < sizeof spoiled / sizeof spoiled[0]; i++) {
    gpures_pool *p = (gpures_pool *)1;
    d = pool_desc(3);
    memcpy((char *)&d + spoiled[i].offset, &spoiled[i].value, sizeof spoiled[i].value);
    if (!CHECK_FAILS(GPURES_E_INVALID_VALUE, spoiled[i].field, gpures_pool_create(&d, &p)))
      fprintf(stderr, "    (%s was %u)\n", spoiled[i].field, spoiled[i].value);
    CHECK(p == NULL);
  }
  gpures_pool *p = (gpures_pool *)1;
  d = pool_desc(3), d.struct_size = 0;
  CHECK_STATUS(GPURES_E_ABI_MISMATCH, gpures_pool_create(&d, &p));
  CHECK(p == NULL);
  /* TAKE_OWNERSHIP means nothing for a pool's frame: refused. */
  gpures_pool *q = nv12_pool(1);
  gpures_create_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = GPURES_CREATE_TAKE_OWNERSHIP;
  gpures_handle f = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options.flags", gpures_pool_acquire(q, 0, 0, &o, &f));
  gpures_pool_stats s = pool_stats(q);
  CHECK_EQ(s.in_use, 0); /* the slot came back */
  CHECK_EQ(s.acquired, 0); /* and no frame was handed out */
  CHECK_OK(gpures_pool_acquire(q, 0, 0, NULL, &f));
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_pool_close(q));
}

/* ------------------------------------------------ sessions, two processes */

typedef struct consumer_plan {
  uint32_t frames;    /* to receive and check */
  int delay_ms;       /* slow: sleep this long holding each frame */
  uint32_t hold;      /* keep this many frames (the last ones) instead of releasing */
  int signal_fd;      /* after receiving: write a byte here, then read one before exiting */
  bool kill_self;     /* end by SIGKILL while holding */
} consumer_plan;

/* The consumer process: receives, checks every byte and field, releases; exit status 0 when all held. */
static void consumer(int fd, consumer_plan plan) {
  int failures_before = atomic_load(&check_failures);
  gpures_session *s = NULL;
  if (!CHECK_OK(gpures_session_open(fd, GPURES_SESSION_RECEIVE, &s))) _exit(2);
  uint64_t ids[8] = {0};
  uint32_t num_ids = 0;
  gpures_handle held[8];
  uint32_t seqs[8], num_held = 0;
  for (uint32_t i = 0; i < plan.frames; i++) {
    gpures_handle f = 0;
    if (!CHECK_OK(gpures_session_receive(s, 0, &f))) break;
    gpures_frame_meta m = meta_init(0);
    CHECK_OK(gpures_meta_get(f, &m));
    CHECK_EQ(m.flags, GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_TIMING | GPURES_META_HAS_USER_DATA);
    CHECK_EQ(m.sequence, i);
    CHECK_EQ(m.pts, (int64_t)i * 1000);
    CHECK_EQ(m.timebase_den, 1000000);
    CHECK_EQ(m.user_data[0], (uint8_t)i);
    if (!CHECK(read_frame(f, i))) fprintf(stderr, "    frame %u arrived damaged\n", i);
    uint64_t id = buffer_id(f);
    bool known = false;
    for (uint32_t k = 0; k < num_ids; k++) known |= ids[k] == id;
    if (!known && CHECK(num_ids < 3)) ids[num_ids++] = id;
    if (plan.delay_ms) sleep_ms(plan.delay_ms);
    if (i + plan.hold >= plan.frames) held[num_held] = f, seqs[num_held++] = i;
    else CHECK_OK(gpures_release(f));
  }
  gpures_session_stats st = session_stats(s);
  CHECK_EQ(st.frames, plan.frames);
  CHECK_EQ(st.buffers, num_ids);
  CHECK_EQ(st.announced, num_ids);
  CHECK_EQ(st.refused, 0);
  if (plan.signal_fd >= 0) {
    char c = 1;
    CHECK(write(plan.signal_fd, &c, 1) == 1);
    CHECK(read(plan.signal_fd, &c, 1) == 1);
    for (uint32_t k = 0; k < num_held; k++) /* nobody wrote over what this process holds */
      if (!CHECK(read_frame(held[k], seqs[k]))) fprintf(stderr, "    held frame %u was overwritten\n", seqs[k]);
  }
  if (plan.kill_self) raise(SIGKILL);
  _exit(atomic_load(&check_failures) != failures_before ? 1 : 0);
}

static pid_t start_consumer(int pair[2], consumer_plan plan) {
  pid_t pid = fork_quietly();
  if (pid == 0) {
    close(pair[0]);
    consumer(pair[1], plan);
  }
  close(pair[1]);
  return pid;
}

static int wait_child(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

/* Acquires (waiting), fills as frame n with its metadata, sends, lets go of this side's reference. */
static uint64_t produce(gpures_pool *p, gpures_session *s, uint32_t n) {
  gpures_handle f = 0;
  if (!CHECK_OK(gpures_pool_acquire(p, 5000, 0, NULL, &f))) return 0;
  write_frame(f, n);
  gpures_frame_meta m = meta_init(GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_TIMING |
                                  GPURES_META_HAS_USER_DATA);
  m.sequence = n;
  m.pts = (int64_t)n * 1000;
  m.duration = 1000;
  m.timebase_num = 1, m.timebase_den = 1000000;
  m.user_data[0] = (uint8_t)n;
  CHECK_OK(gpures_meta_set(f, &m));
  uint32_t sent = 0;
  CHECK_OK(gpures_session_send(s, f, 0, &sent));
  CHECK_EQ(sent, 1);
  uint64_t id = buffer_id(f);
  CHECK_OK(gpures_release(f));
  return id;
}

static void stream(consumer_plan plan, uint32_t frames, bool expect_waits) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  gpures_pool *p = nv12_pool(3);
  pid_t pid = start_consumer(pair, plan);
  gpures_session *s = NULL;
  CHECK_OK(gpures_session_open(pair[0], GPURES_SESSION_SEND, &s));
  /* Each buffer is announced once: as many announcements as buffers the stream used (a consumer
     that keeps up may leave a slot unused). */
  uint64_t used[3] = {0, 0, 0};
  uint32_t distinct = 0;
  for (uint32_t i = 0; i < frames; i++) {
    uint64_t id = produce(p, s, i);
    bool seen = false;
    for (uint32_t k = 0; k < distinct; k++) seen |= used[k] == id;
    if (!seen && distinct < 3) used[distinct++] = id;
  }
  CHECK_EQ(wait_child(pid), 0);
  gpures_session_stats st = session_stats(s);
  CHECK_EQ(st.frames, frames);
  CHECK_EQ(st.announced, distinct);
  CHECK(EVENTUALLY(pool_stats(p).in_use == 0, 2000));
  st = session_stats(s);
  CHECK_EQ(st.in_flight, 0);
  CHECK_EQ(st.refused, 0);
  gpures_pool_stats ps = pool_stats(p);
  CHECK_EQ(ps.acquired, frames);
  CHECK(ps.high_water <= 3);
  if (expect_waits) CHECK(ps.waits > 0);
  CHECK_OK(gpures_session_close(s));
  CHECK_OK(gpures_pool_close(p));
}

static void two_hundred_frames_cross_with_every_byte_and_field(void) {
  /* The service thread's wake pipe is made once, by the first sending session, and stays. */
  int warm[2];
  gpures_session *first = NULL;
  CHECK_OK(gpures_channel_pair(warm));
  CHECK_OK(gpures_session_open(warm[0], GPURES_SESSION_SEND, &first));
  CHECK_OK(gpures_session_close(first));
  gpures_channel_close(warm[1]);
  int base = count_open_fds();
  consumer_plan plan = {200, 0, 0, -1, false};
  stream(plan, 200, false);
  CHECK_EQ(count_open_fds(), base);
}

static void a_slow_consumer_makes_the_producer_wait_instead_of_overwrite(void) {
  consumer_plan plan = {60, 3, 0, -1, false};
  stream(plan, 60, true);
}

/* A pool of three slots whose frames a consumer process holds, all three, until told to go on. */
typedef struct held_pool {
  int pair[2], sync[2]; /* sync: the consumer writes a byte once it holds them, then reads one */
  gpures_pool *pool;
  gpures_session *session;
  pid_t consumer;
  uint64_t ids[3]; /* the held frames' buffer ids */
} held_pool;

static held_pool start_held_pool(bool killed) {
  held_pool h;
  CHECK_OK(gpures_channel_pair(h.pair));
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, h.sync) == 0);
  h.pool = nv12_pool(3);
  consumer_plan plan = {3, 0, 3, h.sync[1], killed};
  h.consumer = start_consumer(h.pair, plan);
  h.session = NULL;
  CHECK_OK(gpures_session_open(h.pair[0], GPURES_SESSION_SEND, &h.session));
  for (uint32_t i = 0; i < 3; i++) h.ids[i] = produce(h.pool, h.session, i);
  char c;
  CHECK(read(h.sync[0], &c, 1) == 1); /* it holds all three */
  return h;
}

/* Lets the consumer go on (and end); its exit status. */
static int let_consumer_end(held_pool *h) {
  char c = 0;
  CHECK(write(h->sync[0], &c, 1) == 1);
  return wait_child(h->consumer);
}

static void close_held_pool(held_pool *h) {
  CHECK_OK(gpures_pool_close(h->pool));
  close(h->sync[0]), close(h->sync[1]);
}

/* A consumer that ends while holding every slot: they come back within a second. */
static void consumer_ends_holding_frames(bool killed) {
  held_pool h = start_held_pool(killed);
  gpures_pool *p = h.pool;
  gpures_session *s = h.session;
  gpures_handle f[3] = {0};
  CHECK_STATUS(GPURES_E_TIMED_OUT, gpures_pool_acquire(p, 0, 0, NULL, &f[0]));
  CHECK_EQ(session_stats(s).in_flight, 3);
  int status = let_consumer_end(&h);
  if (killed) CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  else CHECK_EQ(status, 0);
  double t0 = now_ms();
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_pool_acquire(p, 1000, 0, NULL, &f[i]));
  CHECK(now_ms() - t0 < 1000);
  gpures_session_stats st = session_stats(s);
  CHECK_EQ(st.in_flight, 0);
  uint32_t sent = 0;
  CHECK_STATUS(GPURES_E_STALE, gpures_session_send(s, f[0], 0, &sent));
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_release(f[i]));
  CHECK_OK(gpures_session_close(s));
  close_held_pool(&h);
}

static void a_consumer_that_exits_holding_frames_returns_every_slot(void) {
  consumer_ends_holding_frames(false);
}

static void a_consumer_killed_holding_frames_returns_every_slot(void) {
  consumer_ends_holding_frames(true);
}

static void a_producer_that_closes_retires_the_slots_the_consumer_holds(void) {
  for (int round = 0; round < 5; round++) { /* the close races the service thread: try it a few times */
    held_pool h = start_held_pool(false);
    CHECK_OK(gpures_session_close(h.session));
    gpures_handle f[3] = {0};
    for (int i = 0; i < 3; i++) {
      if (!CHECK_OK(gpures_pool_acquire(h.pool, 1000, 0, NULL, &f[i]))) continue;
      uint64_t id = buffer_id(f[i]);
      for (int k = 0; k < 3; k++) CHECK(id != h.ids[k]);
      write_frame(f[i], 100 + i); /* the consumer's held frames must not see this */
    }
    CHECK_EQ(let_consumer_end(&h), 0);
    for (int i = 0; i < 3; i++) gpures_release(f[i]);
    close_held_pool(&h);
  }
}

/* --------------------------------------------------------- hostile peers */

/* Sends one header, waiting for room (channel fds are nonblocking). */
static int send_header(int sock, wire_header h) {
  for (;;) {
    if (send(sock, &h, sizeof h, 0) == (ssize_t)sizeof h) return 0;
    struct pollfd pfd = {sock, POLLOUT, 0};
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || poll(&pfd, 1, 5000) != 1) return -1;
  }
}

static void a_receiving_session_refuses_what_a_hostile_sender_makes_up(void) {
  int pair[2];
  int base = count_open_fds();
  CHECK_OK(gpures_channel_pair(pair));
  gpures_session *s = NULL;
  CHECK_OK(gpures_session_open(pair[1], GPURES_SESSION_RECEIVE, &s));
  gpures_handle f = 0, g = 0;
  /* A frame of a buffer never announced. */
  CHECK(send_header(pair[0], header_of(MSG_FRAME, 99, 1)) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "buffer", gpures_session_receive(s, 0, &f));
  CHECK_EQ(f, 0);
  CHECK_EQ(session_stats(s).refused, 1);
  /* The session goes on: an announcement, then a frame by id. */
  int before = count_open_fds();
  CHECK(announce(pair[0], 7, 2) == 0);
  CHECK_OK(gpures_session_receive(s, 0, &f));
  CHECK_EQ(count_open_fds(), before + 1); /* the cached buffer's fd */
  CHECK(send_header(pair[0], header_of(MSG_FRAME, 7, 3)) == 0);
  CHECK_OK(gpures_session_receive(s, 0, &g));
  CHECK_EQ(count_open_fds(), before + 1); /* no new fd for a known buffer */
  CHECK(buffer_id(f) != 0);
  CHECK_EQ(buffer_id(f), buffer_id(g));
  /* A second announcement of the same buffer: refused, its fd closed. */
  CHECK(announce(pair[0], 7, 4) == 0);
  gpures_handle x = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "buffer", gpures_session_receive(s, 0, &x));
  CHECK_EQ(count_open_fds(), before + 1);
  /* fds with a frame that names no descriptor. */
  int extra = make_memfd(4096, 1);
  wire_header h = header_of(MSG_FRAME, 7, 5);
  CHECK(send_with_fds(pair[0], &h, sizeof h, &extra, 1, 0) == (ssize_t)sizeof h);
  close(extra);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fds", gpures_session_receive(s, 0, &x));
  CHECK_EQ(count_open_fds(), before + 1);
  /* A release sent to the receiving side. */
  CHECK(send_header(pair[0], header_of(MSG_RELEASE, 7, 3)) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_session_receive(s, 0, &x));
  /* An unknown type, a lying size. */
  h = header_of(9, 7, 6);
  CHECK(send_header(pair[0], h) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_session_receive(s, 0, &x));
  h = header_of(MSG_FRAME, 7, 6), h.meta_size = 64;
  CHECK(send_header(pair[0], h) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "descSize", gpures_session_receive(s, 0, &x));
  /* Metadata out of range with a frame of a known buffer. */
  struct {
    wire_header h;
    gpures_frame_meta m;
  } fm;
  memset(&fm, 0, sizeof fm);
  fm.h = header_of(MSG_FRAME, 7, 7);
  fm.h.meta_size = sizeof fm.m;
  fm.m = meta_init(GPURES_META_HAS_VISIBLE);
  fm.m.visible = (gpures_rect){0, 0, 33, 1}; /* the frame is 32 wide */
  CHECK(send(pair[0], &fm, sizeof fm, 0) == (ssize_t)sizeof fm);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "visible.width", gpures_session_receive(s, 0, &x));
  fm.h.serial = 8, fm.m.visible.width = 32;
  CHECK(send(pair[0], &fm, sizeof fm, 0) == (ssize_t)sizeof fm);
  CHECK_OK(gpures_session_receive(s, 0, &x));
  gpures_frame_meta got = meta_init(0);
  CHECK_OK(gpures_meta_get(x, &got));
  CHECK_EQ(got.visible.width, 32);
  CHECK_OK(gpures_release(x));
  gpures_session_stats st = session_stats(s);
  CHECK_EQ(st.refused, 7);
  CHECK_EQ(st.buffers, 1);
  CHECK_EQ(st.announced, 1);
  CHECK_EQ(st.frames, 3);
  /* A plain HANDLE message on the session still works. */
  gpures_handle plain = sealable_rgba_frame();
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_send(pair[0], plain, 0, &sent));
  CHECK_OK(gpures_release(plain));
  CHECK_OK(gpures_session_receive(s, 0, &x));
  CHECK_EQ(buffer_id(x), 0);
  CHECK_OK(gpures_release(x));
  /* A FORGET drops the cached buffer: frames over it stay valid, later frames of it are refused. */
  uint64_t local = buffer_id(g);
  CHECK(send_header(pair[0], header_of(MSG_FORGET, 7, 0)) == 0);
  CHECK(send_header(pair[0], header_of(MSG_FRAME, 7, 9)) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "buffer", gpures_session_receive(s, 0, &x));
  uint64_t ids[4] = {0};
  uint32_t n = 0;
  CHECK_OK(gpures_session_forgotten(s, ids, 4, &n));
  CHECK_EQ(n, 1);
  CHECK_EQ(ids[0], local);
  CHECK_OK(gpures_session_forgotten(s, ids, 4, &n));
  CHECK_EQ(n, 0);
  st = session_stats(s);
  CHECK_EQ(st.forgotten, 1);
  CHECK_EQ(st.buffers, 0);
  void *gp = NULL;
  uint64_t gsize = 0;
  CHECK_OK(gpures_map(g, 0, GPURES_MAP_READ, &gp, &gsize));
  CHECK_OK(gpures_unmap(gp));
  CHECK(send_header(pair[0], header_of(MSG_FORGET, 1234, 0)) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "buffer", gpures_session_receive(s, 0, &x));
  /* Releases come back for the frames released, serials as sent. */
  CHECK_OK(gpures_release(f));
  wire_header r;
  CHECK(recv(pair[0], &r, sizeof r, MSG_DONTWAIT) == (ssize_t)sizeof r); /* frame 8's */
  CHECK_EQ(r.type, MSG_RELEASE);
  CHECK_EQ(r.serial, 8);
  CHECK(recv(pair[0], &r, sizeof r, MSG_DONTWAIT) == (ssize_t)sizeof r);
  CHECK_EQ(r.buffer, 7);
  CHECK_EQ(r.serial, 2);
  CHECK_OK(gpures_session_close(s));
  CHECK_OK(gpures_release(g)); /* after close: valid still, its release goes nowhere */
  gpures_channel_close(pair[0]);
  CHECK_EQ(count_open_fds(), base);
}

static void a_sending_session_ignores_releases_it_is_not_owed(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  gpures_pool *p = nv12_pool(3);
  gpures_session *s = NULL;
  CHECK_OK(gpures_session_open(pair[0], GPURES_SESSION_SEND, &s));
  produce(p, s, 0);
  produce(p, s, 1);
  wire_header a, b;
  CHECK(read_header(pair[1], &a, 2000));
  CHECK(read_header(pair[1], &b, 2000));
  CHECK_EQ(a.type, MSG_FRAME);
  CHECK(a.buffer != b.buffer);
  CHECK_EQ(pool_stats(p).in_use, 2);
  /* A serial never sent; a real serial of another buffer; a release carrying an fd. */
  CHECK(send_header(pair[1], header_of(MSG_RELEASE, a.buffer, 99)) == 0);
  CHECK(send_header(pair[1], header_of(MSG_RELEASE, b.buffer, a.serial)) == 0);
  int base = count_open_fds();
  int fd = make_memfd(4096, 1);
  wire_header r = header_of(MSG_RELEASE, a.buffer, a.serial);
  CHECK(send_with_fds(pair[1], &r, sizeof r, &fd, 1, 0) == (ssize_t)sizeof r);
  close(fd);
  CHECK(EVENTUALLY(session_stats(s).refused == 3, 2000));
  CHECK_EQ(count_open_fds(), base); /* the fd that came with it was closed */
  CHECK_EQ(pool_stats(p).in_use, 2);
  CHECK_EQ(session_stats(s).in_flight, 2);
  /* A flood. */
  for (uint32_t i = 0; i < 10000; i++)
    CHECK(send_header(pair[1], header_of(MSG_RELEASE, i & 1 ? a.buffer : 12345, 1000 + i)) == 0);
  CHECK(EVENTUALLY(session_stats(s).refused == 10003, 10000));
  CHECK_EQ(pool_stats(p).in_use, 2);
  /* The real release frees the slot; the same release again is refused. */
  CHECK(send_header(pair[1], header_of(MSG_RELEASE, a.buffer, a.serial)) == 0);
  CHECK(EVENTUALLY(pool_stats(p).in_use == 1, 2000));
  CHECK(send_header(pair[1], header_of(MSG_RELEASE, a.buffer, a.serial)) == 0);
  CHECK(EVENTUALLY(session_stats(s).refused == 10004, 2000));
  gpures_session_stats st = session_stats(s);
  CHECK_EQ(st.returned, 1);
  CHECK_EQ(st.in_flight, 1);
  CHECK_EQ(pool_stats(p).in_use, 1);
  /* A second frame of a known buffer carries no fd. */
  produce(p, s, 2);
  wire_header c;
  CHECK(read_header(pair[1], &c, 2000));
  CHECK_EQ(c.buffer, a.buffer); /* the first free slot: a's, which the peer knows */
  CHECK_EQ(c.num_fds, 0);
  CHECK_EQ(c.desc_size, 0);
  CHECK_OK(gpures_session_close(s));
  gpures_channel_close(pair[1]);
  CHECK(EVENTUALLY(pool_stats(p).in_use == 0, 2000));
  CHECK_OK(gpures_pool_close(p));
}

static void a_plain_channel_refuses_session_messages_and_takes_the_old_header(void) {
  int pair[2];
  int base = count_open_fds();
  CHECK_OK(gpures_channel_pair(pair));
  gpures_handle h = 0;
  CHECK(announce(pair[0], 3, 1) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_channel_receive(pair[1], 0, &h));
  CHECK(send_header(pair[0], header_of(MSG_FRAME, 3, 2)) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "type", gpures_channel_receive(pair[1], 0, &h));
  CHECK_EQ(h, 0);
  /* The 24-byte header of ABI 1.2 is a HANDLE. */
  int fd = memfd_create("gpures-test-old", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  CHECK(ftruncate(fd, 4096) == 0);
  struct {
    uint32_t magic, abi, header_size, kind, desc_size, num_fds;
    gpures_dma_buf_handle_desc d;
  } old;
  memset(&old, 0, sizeof old);
  old.magic = WIRE_MAGIC, old.abi = (1u << 16) | 2u, old.header_size = 24;
  old.kind = GPURES_KIND_DMA_BUF_HANDLE, old.desc_size = sizeof old.d, old.num_fds = 1;
  old.d = gpures_fixture_dma_buf_handle_rgba(0);
  old.d.fds[0] = 0;
  for (int i = 1; i < 4; i++) old.d.fds[i] = -1;
  CHECK(send_with_fds(pair[0], &old, sizeof old, &fd, 1, 0) == (ssize_t)sizeof old);
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  gpures_frame_meta m = meta_init(0);
  CHECK_OK(gpures_meta_get(h, &m));
  CHECK_EQ(m.flags, 0);
  CHECK_OK(gpures_release(h));
  /* A handle with metadata crosses a plain channel with it. */
  gpures_handle with = sealable_rgba_frame();
  m = meta_init(GPURES_META_HAS_SEQUENCE), m.sequence = 31;
  CHECK_OK(gpures_meta_set(with, &m));
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_send(pair[0], with, 0, &sent));
  CHECK_OK(gpures_release(with));
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  m = meta_init(0);
  CHECK_OK(gpures_meta_get(h, &m));
  CHECK_EQ(m.sequence, 31);
  CHECK_OK(gpures_release(h));
  close(fd);
  gpures_channel_close(pair[0]);
  gpures_channel_close(pair[1]);
  CHECK_EQ(count_open_fds(), base);
}

/* The header_size field of the next datagram waiting on sock, left in place. */
static uint32_t peeked_header_size(int sock) {
  uint32_t h[3] = {0, 0, 0};
  struct pollfd pfd = {sock, POLLIN, 0};
  if (poll(&pfd, 1, 2000) != 1 || recv(sock, h, sizeof h, MSG_PEEK) != (ssize_t)sizeof h) return 0;
  return h[2];
}

static void a_plain_handle_without_metadata_goes_in_the_form_older_receivers_take(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  gpures_handle f = sealable_rgba_frame(), h = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_send(pair[0], f, 0, &sent));
  CHECK_EQ(peeked_header_size(pair[1]), 24); /* ABI 1.2's header: a receiver not yet upgraded */
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  CHECK_OK(gpures_release(h));
  gpures_frame_meta m = meta_init(GPURES_META_HAS_SEQUENCE);
  m.sequence = 1;
  CHECK_OK(gpures_meta_set(f, &m));
  CHECK_OK(gpures_channel_send(pair[0], f, 0, &sent));
  CHECK_EQ(peeked_header_size(pair[1]), 48); /* metadata needs the new one */
  CHECK_OK(gpures_channel_receive(pair[1], 0, &h));
  CHECK_OK(gpures_release(h));
  CHECK_OK(gpures_release(f));
  gpures_channel_close(pair[0]);
  gpures_channel_close(pair[1]);
}

/*
** A receiver whose releases find the socket full keeps them and sends them
** when it has room; closing it closes its channel.
*/
static void releases_that_find_the_socket_full_are_sent_later(void) {
  int pair[2];
  int base = count_open_fds();
  CHECK_OK(gpures_channel_pair(pair));
  gpures_session *s = NULL;
  CHECK_OK(gpures_session_open(pair[1], GPURES_SESSION_RECEIVE, &s));
  CHECK(announce(pair[0], 5, 1) == 0);
  gpures_handle first = 0;
  CHECK_OK(gpures_session_receive(s, 0, &first));
  CHECK_OK(gpures_release(first));
  const uint32_t frames = 3000;
  for (uint32_t i = 0; i < frames; i++) { /* the sender never reads: its socket fills */
    CHECK(send_header(pair[0], header_of(MSG_FRAME, 5, 2 + i)) == 0);
    gpures_handle f = 0;
    if (!CHECK_OK(gpures_session_receive(s, 0, &f))) break;
    CHECK_OK(gpures_release(f));
  }
  uint32_t got = 0;
  uint64_t last = 0;
  bool in_order = true;
  for (;;) {
    struct pollfd pfd = {pair[0], POLLIN, 0};
    if (poll(&pfd, 1, 1000) != 1) break;
    wire_header r;
    if (recv(pair[0], &r, sizeof r, 0) != (ssize_t)sizeof r) break;
    in_order &= r.serial > last;
    last = r.serial;
    got++;
  }
  CHECK_EQ(got, frames + 1);
  CHECK(in_order);
  int fd = gpures_session_fd(s);
  CHECK_OK(gpures_session_close(s));
  CHECK(EVENTUALLY(fd_is_closed(fd), 1000));
  gpures_channel_close(pair[0]);
  CHECK(EVENTUALLY(count_open_fds() == base, 1000));
}

static void sessions_refuse_bad_arguments(void) {
  int pair[2];
  CHECK_OK(gpures_channel_pair(pair));
  gpures_session *s = NULL;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_session_open(pair[0], 0, &s));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags",
              gpures_session_open(pair[0], GPURES_SESSION_SEND | GPURES_SESSION_RECEIVE, &s));
  int pipefd[2];
  CHECK(pipe(pipefd) == 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_session_open(pipefd[0], GPURES_SESSION_SEND, &s));
  CHECK(fd_is_open(pipefd[0])); /* a refused open leaves the fd the caller's */
  close(pipefd[0]), close(pipefd[1]);
  CHECK_OK(gpures_session_open(pair[0], GPURES_SESSION_SEND, &s));
  gpures_handle cpu = 0, h = 0;
  gpures_cpu_bytes_desc cd = gpures_fixture_cpu_bytes();
  CHECK_OK(gpures_cpu_bytes_create(&cd, NULL, &cpu));
  uint32_t sent = 0;
  CHECK_FAILS(GPURES_E_WRONG_KIND, "resource", gpures_session_send(s, cpu, 0, &sent));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "session", gpures_session_receive(s, 0, &h));
  CHECK_OK(gpures_release(cpu));
  CHECK_OK(gpures_session_close(s));
  gpures_channel_close(pair[1]);
}


/* ------------------------------------ a receiver's KEEP lost to a full socket */

static sem_t callback_entered, callback_may_return;

/* A keep-alive release that holds the service thread (it runs the frame's last release) a while. */
static void hold_the_service_thread(void *ctx) {
  (void)ctx;
  sem_post(&callback_entered);
  sem_wait(&callback_may_return);
}

static ino_t inode_of(gpures_handle h) {
  int fd = -1;
  struct stat st;
  CHECK_OK(gpures_dup_fd(h, 0, &fd));
  CHECK(fstat(fd, &st) == 0);
  close(fd);
  return st.st_ino;
}

/* The consumer: holds frame 1, fills its socket so no KEEP fits, closes, keeps reading frame 1. */
_Noreturn static void fill_and_close(int sock, int go, int done) {
  gpures_session *r = NULL;
  gpures_handle f0 = 0, f1 = 0;
  char c;
  if (gpures_session_open(sock, GPURES_SESSION_RECEIVE, &r) || gpures_session_receive(r, 0, &f0) ||
      gpures_session_receive(r, 0, &f1))
    _exit(2);
  if (read(go, &c, 1) != 1) _exit(3); /* the sender let go of frame 0: this release is the last */
  gpures_release(f0); /* its RELEASE reaches the sender, whose service thread then stays busy */
  if (read(go, &c, 1) != 1) _exit(3);
  for (uint32_t sent = 1; sent;) /* whole handles, back up the socket, until it is full */
    if (gpures_channel_send(sock, f1, GPURES_CHANNEL_NONBLOCK, &sent)) break;
  gpures_session_close(r); /* its KEEP for frame 1's buffer finds no room */
  if (write(done, "x", 1) != 1) _exit(4);
  sleep(2);
  _exit(0);
}

static void a_closed_receiver_whose_keep_is_lost_still_never_sees_its_frame_overwritten(void) {
  int pair[2], go[2], done[2];
  char c;
  CHECK_OK(gpures_channel_pair(pair));
  CHECK(pipe(go) == 0 && pipe(done) == 0);
  pid_t child = fork_quietly();
  if (child == 0) fill_and_close(pair[1], go[0], done[1]);
  close(pair[1]);
  sem_init(&callback_entered, 0, 0);
  sem_init(&callback_may_return, 0, 0);
  gpures_pool *p = nv12_pool(2);
  gpures_session *s = NULL;
  CHECK_OK(gpures_session_open(pair[0], GPURES_SESSION_SEND, &s));
  gpures_create_options o = {.struct_size = sizeof o, .keep_alive = {.release = hold_the_service_thread}};
  gpures_handle f0 = 0, f1 = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, &o, &f0));
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f1));
  ino_t held = inode_of(f1);
  CHECK_OK(gpures_session_send(s, f0, 0, &sent));
  CHECK_OK(gpures_session_send(s, f1, 0, &sent));
  CHECK_OK(gpures_release(f0));
  CHECK_OK(gpures_release(f1));
  CHECK(write(go[1], "x", 1) == 1);
  sem_wait(&callback_entered); /* the service thread is in frame 0's keep-alive */
  CHECK(write(go[1], "x", 1) == 1 && read(done[0], &c, 1) == 1);
  sem_post(&callback_may_return);
  gpures_session_stats st = {.struct_size = sizeof st};
  for (int i = 0; i < 200 && (gpures_session_stats_get(s, &st), st.in_flight); i++) usleep(10000);
  CHECK_EQ(st.in_flight, 0); /* the end came, and with it every frame in flight */
  gpures_handle a = 0, b = 0;
  CHECK_OK(gpures_pool_acquire(p, 1000, 0, NULL, &a));
  CHECK_OK(gpures_pool_acquire(p, 1000, 0, NULL, &b));
  CHECK(inode_of(a) != held && inode_of(b) != held); /* that slot got new memory */
  CHECK_OK(gpures_release(a));
  CHECK_OK(gpures_release(b));
  CHECK_OK(gpures_session_close(s));
  CHECK_OK(gpures_pool_close(p));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  close(go[0]), close(go[1]), close(done[0]), close(done[1]);
}

/* ------------------------------------------------ sessions in a forked child */

/* The child's own stream, producer and consumer in one process: a slot comes back only through a
   service thread that reads the release, which must be the child's own. */
static void stream_to_itself(void) {
  int pair[2];
  gpures_pool *p = nv12_pool(1);
  gpures_session *out = NULL, *in = NULL;
  gpures_handle f = 0, g = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_channel_pair(pair));
  CHECK_OK(gpures_session_open(pair[0], GPURES_SESSION_SEND, &out));
  CHECK_OK(gpures_session_open(pair[1], GPURES_SESSION_RECEIVE, &in));
  for (uint32_t i = 0; i < 20; i++) {
    if (!CHECK_OK(gpures_pool_acquire(p, 2000, 0, NULL, &f))) break;
    write_frame(f, i);
    CHECK_OK(gpures_session_send(out, f, 0, &sent));
    CHECK_OK(gpures_release(f));
    if (!CHECK_OK(gpures_session_receive(in, 0, &g))) break;
    CHECK(read_frame(g, i));
    CHECK_OK(gpures_release(g));
  }
  CHECK_OK(gpures_session_close(in));
  CHECK_OK(gpures_session_close(out));
  CHECK_OK(gpures_pool_close(p));
}

/* fork() while this process's service thread watches a session of its own, and again after it
   ended: the child starts its own thread, and neither side steals the other's wake-ups. */
static void a_forked_child_streams_through_a_service_thread_of_its_own(void) {
  int pair[2];
  gpures_session *s = NULL;
  CHECK_OK(gpures_channel_pair(pair));
  CHECK_OK(gpures_session_open(pair[0], GPURES_SESSION_SEND, &s));
  for (int round = 0; round < 2; round++) {
    int result[2];
    CHECK(pipe(result) == 0);
    pid_t child = fork_quietly();
    if (child == 0) {
      int before = atomic_load(&check_failures);
      stream_to_itself();
      fflush(stderr);
      char verdict = atomic_load(&check_failures) == before ? 'k' : 'x';
      if (write(result[1], &verdict, 1) != 1) _exit(1);
      raise(SIGKILL);
    }
    /* The verdict comes through a pipe, and the child ends by SIGKILL: under valgrind its exit
       would report the parent's thread, whose stack it inherited, as possibly lost. */
    close(result[1]);
    struct pollfd pfd = {result[0], POLLIN, 0};
    char verdict = 0;
    CHECK(poll(&pfd, 1, 10000) == 1 && read(result[0], &verdict, 1) == 1 && verdict == 'k');
    close(result[0]);
    if (verdict != 'k') kill(child, SIGKILL);
    CHECK(waitpid(child, NULL, 0) == child);
    if (round == 0) CHECK_OK(gpures_session_close(s)); /* the thread ends with its last session */
  }
  gpures_channel_close(pair[1]);
  stream_to_itself(); /* and this process still gets its own wake-ups */
}

/* ------------------------------------------------ fork() amid other threads' calls */

enum { AMID_FRAMES = 64 }; /* consecutive slots: every metadata lock */

typedef struct amid {
  gpures_handle frames[AMID_FRAMES];
  atomic_bool stop;
  atomic_uint rounds; /* of each thread's loop, added up */
} amid;

/*
** The threads below keep the library's locks busy. Nothing they call allocates: gcc 12's ASan
** allocator is not fork-safe (fork_util.h), and the test forks amid them.
*/
static void *set_metadata_until_stopped(void *arg) { /* user data: 8 copies of the sequence */
  amid *a = arg;
  gpures_frame_meta m = meta_init(GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_USER_DATA);
  for (uint32_t n = 0; !atomic_load(&a->stop); n++) {
    m.sequence = n;
    memset(m.user_data, (uint8_t)n, 8);
    (void)gpures_meta_set(a->frames[n % AMID_FRAMES], &m);
    if (n % AMID_FRAMES == 0) atomic_fetch_add(&a->rounds, 1);
  }
  return NULL;
}

static void *open_queues_until_stopped(void *arg) { /* the queue table's lock and a queue's */
  amid *a = arg;
  for (uint32_t q = 0; !atomic_load(&a->stop);) {
    if (gpures_event_queue_open(&q) == GPURES_OK) (void)gpures_event_queue_close(q);
    atomic_fetch_add(&a->rounds, 1);
  }
  return NULL;
}

/* In the child: every frame's metadata whole (as one set wrote it), a mapping, an event queue. */
static bool child_uses_what_the_threads_held(amid *a) {
  bool whole = true;
  for (uint32_t i = 0; i < AMID_FRAMES; i++) {
    gpures_frame_meta m = meta_init(0);
    whole &= gpures_meta_get(a->frames[i], &m) == GPURES_OK;
    for (int k = 0; k < 8; k++) whole &= !m.flags || m.user_data[k] == (uint8_t)m.sequence;
  }
  void *p = NULL;
  uint64_t size = 0;
  whole &= gpures_map(a->frames[0], 0, GPURES_MAP_READ | GPURES_MAP_ALLOW_UNSEALED, &p, &size) ==
           GPURES_OK && gpures_unmap(p) == GPURES_OK;
  uint32_t q = 0;
  whole &= gpures_event_queue_open(&q) == GPURES_OK && gpures_event_queue_close(q) == GPURES_OK;
  return whole;
}

/* Threads keep the metadata and event queue locks busy; a child forked amid them (without
   waiting) takes every lock of the library, and finds what each guards whole, up to 200 times. */
static void a_child_forked_amid_other_threads_calls_finds_every_lock_free(void) {
  static amid a;
  for (uint32_t i = 0; i < AMID_FRAMES; i++) a.frames[i] = sealable_rgba_frame();
  atomic_store(&a.stop, false);
  atomic_store(&a.rounds, 0);
  wait_for_quiet(); /* the last test's service thread may still be ending */
  pthread_t threads[3];
  pthread_create(&threads[0], NULL, set_metadata_until_stopped, &a);
  pthread_create(&threads[1], NULL, set_metadata_until_stopped, &a);
  pthread_create(&threads[2], NULL, open_queues_until_stopped, &a);
  CHECK(EVENTUALLY(atomic_load(&a.rounds) >= 100, 5000)); /* past their own start-up */
  uint32_t hung = 0, broken = 0, rounds = 0;
  /* 200 forks, or as many as 3 seconds allow (valgrind runs the threads one at a time), 20 at least */
  for (double until = now_ms() + 3000; rounds < 200 && (rounds < 20 || now_ms() < until); rounds++) {
    int result[2];
    CHECK(pipe(result) == 0);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) { /* ends by SIGKILL: valgrind would report the threads it did not inherit */
      char verdict = child_uses_what_the_threads_held(&a) ? 'k' : 'x';
      if (write(result[1], &verdict, 1) != 1) _exit(1);
      raise(SIGKILL);
    }
    close(result[1]);
    struct pollfd pfd = {result[0], POLLIN, 0};
    char verdict = 0;
    if (poll(&pfd, 1, 5000) != 1 || read(result[0], &verdict, 1) != 1) hung++, kill(child, SIGKILL);
    else broken += verdict != 'k';
    close(result[0]);
    waitpid(child, NULL, 0);
    sleep_ms(1);
  }
  atomic_store(&a.stop, true);
  for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
  CHECK(rounds >= 20);
  CHECK_EQ(hung, 0);
  CHECK_EQ(broken, 0);
  for (uint32_t i = 0; i < AMID_FRAMES; i++) CHECK_OK(gpures_release(a.frames[i]));
}

static void a_new_handle_shows_nothing_of_the_metadata_its_slot_held_before(void) {
  gpures_pool *p = new_nv12_pool(64, 32, 1);
  gpures_handle a = 0, b = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &a));
  gpures_frame_meta m = {.struct_size = sizeof m, .flags = GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_USER_DATA,
                         .sequence = 7, .user_data = {0xab}};
  CHECK_OK(gpures_meta_set(a, &m));
  CHECK_OK(gpures_release(a));
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &b)); /* the table's freed slot, most likely */
  gpures_frame_meta got;
  memset(&got, 0x5a, sizeof got);
  got.struct_size = sizeof got;
  CHECK_OK(gpures_meta_get(b, &got));
  CHECK_EQ(got.flags, 0);
  CHECK_EQ(got.sequence, 0);
  CHECK_EQ(got.user_data[0], 0);
  CHECK_OK(gpures_release(b));
  CHECK_OK(gpures_pool_close(p));
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  RUN(every_metadata_group_round_trips);
  RUN(an_absent_group_reads_as_zeros_whatever_was_written_in_it);
  RUN(a_new_handle_shows_nothing_of_the_metadata_its_slot_held_before);
  RUN(bad_metadata_is_refused_naming_its_field);
  RUN(metadata_is_shared_by_clones_and_cleared_by_null);
  RUN(metadata_fields_are_listed_as_rows);
  RUN(a_pool_frame_is_a_sealed_memfd_in_the_standard_layout);
  RUN(buffer_ids_are_stable_per_slot_and_distinct_across_slots);
  RUN(an_acquire_with_no_free_slot_times_out_after_its_timeout);
  RUN(a_released_frame_returns_its_slot);
  RUN(an_acquire_on_another_thread_wakes_when_a_frame_is_released);
  RUN(a_cancel_ends_the_wait_of_its_ticket_even_before_it_begins);
  RUN(closing_a_pool_ends_waits_and_keeps_held_frames_readable);
  RUN(a_notice_tells_a_queue_of_a_free_slot_with_no_thread_waiting);
  RUN(closing_an_idle_pool_frees_every_slot_at_once);
  RUN(bad_pool_descriptors_are_refused_naming_the_field);
  RUN(two_hundred_frames_cross_with_every_byte_and_field);
  RUN(a_slow_consumer_makes_the_producer_wait_instead_of_overwrite);
  RUN(a_consumer_that_exits_holding_frames_returns_every_slot);
  RUN(a_consumer_killed_holding_frames_returns_every_slot);
  RUN(a_producer_that_closes_retires_the_slots_the_consumer_holds);
  RUN(a_receiving_session_refuses_what_a_hostile_sender_makes_up);
  RUN(a_sending_session_ignores_releases_it_is_not_owed);
  RUN(a_plain_channel_refuses_session_messages_and_takes_the_old_header);
  RUN(a_plain_handle_without_metadata_goes_in_the_form_older_receivers_take);
  RUN(releases_that_find_the_socket_full_are_sent_later);
  RUN(sessions_refuse_bad_arguments);
  RUN(a_closed_receiver_whose_keep_is_lost_still_never_sees_its_frame_overwritten);
  RUN(a_forked_child_streams_through_a_service_thread_of_its_own);
  RUN(a_child_forked_amid_other_threads_calls_finds_every_lock_free);
  return check_finish("test_frames");
}
