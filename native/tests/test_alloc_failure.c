/*
** test_alloc_failure.c: every allocation gpures makes can fail, and each
** failure returns GPURES_E_OUT_OF_MEMORY, leaks nothing (run it under
** valgrind: .ci/reliability.sh does) and leaves every other handle intact.
**
** gpures allocates at two points only, both through native/src/alloc.c:
**   - a chunk of 4096 handle slots, when create finds no free slot
**     (handle_table.c: slot_alloc -> ensure_chunk);
**   - an event queue's ring, when it must grow: at create with an event
**     queue (the room for the handle's RELEASED event is reserved then, so
**     the last release never allocates) and at mark_consumed
**     (events.c: grow, from gpures__event_reserve and gpures__event_post).
** alloc.c's test hook gpures__test_fail_alloc_after(n) lets n more
** allocations succeed and fails every later one; the tests below first aim
** at each point, then walk a scenario that reaches all of them, failing the
** first, the second, ... allocation in turn until a run needs no failure.
*/
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "fd_util.h"

/* The test hook of alloc.c: exported, but not part of gpures.h. */
void gpures__test_fail_alloc_after(int64_t n);
uint64_t gpures__test_failed_allocs(void);

static int memory_fd; /* 64 KiB; the fd kinds duplicate it or adopt duplicates of it */

/* ------------------------------------------------------------ helpers */

typedef struct probe {
  int releases, consumed;
} probe;
static void probe_release(void *ctx) { ((probe *)ctx)->releases++; }
static void probe_consumed(void *ctx) { ((probe *)ctx)->consumed++; }

typedef union any_desc {
#define DESC_MEMBER(id, UPPER, snake, Name, own, os) gpures_##snake##_desc snake;
  GPURES_EVERY_KIND_LIST(DESC_MEMBER)
#undef DESC_MEMBER
} any_desc;

/* kind's valid descriptor (fixtures.gen.h) whose fds (if any) are all `fd`. */
static void fill(uint32_t kind, any_desc *u, int fd) {
  int fds[GPURES_FIXTURE_MAX_FDS];
  for (int i = 0; i < GPURES_FIXTURE_MAX_FDS; i++) fds[i] = fd;
  gpures_fixture_fill(kind, u, fds);
}

static int owns_fds(uint32_t kind) {
  return gpures_kind_info_of(kind)->ownership == GPURES_OWNED;
}

/* The fd a kind's fixture takes: a memfd for memory, its own fence fd for a SyncPoint. */
static int fd_for(uint32_t kind, int memory_fd) {
  if (gpures_kind_info_of(kind)->family != GPURES_FAMILY_SYNC || !owns_fds(kind)) return memory_fd;
  int fds[GPURES_FIXTURE_MAX_FDS];
  uint32_t n = gpures_fixture_open_fds(kind, fds, 1);
  for (uint32_t i = 1; i < n; i++) close(fds[i]); /* the changes' fds: not needed here */
  return fds[0];
}

static gpures_create_options options(probe *p, uint32_t queue, uint64_t token, uint32_t flags) {
  gpures_create_options o = {.struct_size = sizeof o,
                             .flags = flags,
                             .event_queue = queue,
                             .event_token = token};
  if (p) o.keep_alive = (gpures_keep_alive){p, probe_release, probe_consumed};
  return o;
}

static gpures_handle create_slot(void) {
  gpures_cpu_shared_slot_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.size = 64;
  d.format = GPURES_PF_RGBA_U8;
  gpures_handle h = 0;
  return gpures_cpu_shared_slot_create(&d, NULL, &h) == GPURES_OK ? h : 0;
}

/* Handles that must come through every failure untouched. */
typedef struct bystanders {
  gpures_handle cpu, dma, queued;
  probe cpu_probe, queued_probe;
  uint32_t queue;
  char json[3][1024];
} bystanders;

static void json_of(gpures_handle h, char *out) {
  size_t n = 0;
  if (gpures_describe_json(h, out, 1024, &n) != GPURES_OK) strcpy(out, "(no JSON)");
}

static void bystanders_make(bystanders *b) {
  memset(b, 0, sizeof *b);
  any_desc u;
  gpures_create_options o = options(&b->cpu_probe, 0, 0, 0);
  fill(GPURES_KIND_CPU_BYTES, &u, -1);
  CHECK_OK(gpures_create(GPURES_KIND_CPU_BYTES, &u, &o, &b->cpu));
  CHECK_OK(gpures_clone(b->cpu));
  fill(GPURES_KIND_DMA_BUF_HANDLE, &u, memory_fd);
  CHECK_OK(gpures_create(GPURES_KIND_DMA_BUF_HANDLE, &u, NULL, &b->dma));
  CHECK_OK(gpures_event_queue_open(&b->queue));
  o = options(&b->queued_probe, b->queue, 42, 0);
  fill(GPURES_KIND_VK_IMAGE, &u, -1);
  CHECK_OK(gpures_create(GPURES_KIND_VK_IMAGE, &u, &o, &b->queued));
  json_of(b->cpu, b->json[0]);
  json_of(b->dma, b->json[1]);
  json_of(b->queued, b->json[2]);
}

/* They describe as before, clone and release still work (none of it allocates). */
static void bystanders_intact(bystanders *b) {
  char now[1024];
  gpures_handle hs[3] = {b->cpu, b->dma, b->queued};
  for (int i = 0; i < 3; i++) {
    json_of(hs[i], now);
    CHECK_STR(now, b->json[i]);
    CHECK_OK(gpures_clone(hs[i]));
    CHECK_OK(gpures_release(hs[i]));
  }
  uint32_t n = 0;
  CHECK_OK(gpures_refcount(b->cpu, &n));
  CHECK_EQ(n, 2);
  int fd = -1;
  CHECK_OK(gpures_dup_fd(b->dma, 1, &fd));
  CHECK(same_file(fd, memory_fd));
  close(fd);
  CHECK_EQ(b->cpu_probe.releases, 0);
  CHECK_EQ(b->queued_probe.releases, 0);
  CHECK_EQ(gpures_event_queue_pending(b->queue), 0);
}

static void bystanders_release(bystanders *b) {
  CHECK_OK(gpures_release(b->cpu));
  CHECK_OK(gpures_release(b->cpu));
  CHECK_OK(gpures_release(b->dma));
  CHECK_OK(gpures_release(b->queued));
  CHECK_EQ(b->cpu_probe.releases, 1);
  CHECK_EQ(b->queued_probe.releases, 1);
  gpures_event e[2];
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(b->queue, e, 2, &n));
  CHECK(n == 1 && e[0].token == 42 && e[0].type == GPURES_EVENT_RELEASED);
  CHECK_OK(gpures_event_queue_close(b->queue));
}

/* A growable list of handles. */
typedef struct pool {
  gpures_handle *h;
  size_t n, cap;
} pool;

static void pool_add(pool *p, gpures_handle h) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 1024;
    gpures_handle *grown = realloc(p->h, p->cap * sizeof *grown);
    if (!grown) abort();
    p->h = grown;
  }
  p->h[p->n++] = h;
}

static void pool_release(pool *p) {
  int ok = 1;
  for (size_t i = 0; i < p->n; i++) ok &= gpures_release(p->h[i]) == GPURES_OK;
  CHECK(ok);
  free(p->h);
  memset(p, 0, sizeof *p);
}

/*
** Takes every free slot (holding the handles in `p`), so that the next
** create needs a new chunk. With allocation failing, create succeeds exactly
** while a slot is free and fails at the first one that needs memory.
*/
static int fill_table(pool *p) {
  gpures__test_fail_alloc_after(0);
  int status = GPURES_OK;
  for (int i = 0; i < (1 << 20) && status == GPURES_OK; i++) {
    gpures_handle h = 0;
    gpures_cpu_shared_slot_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.size = 64;
    d.format = GPURES_PF_RGBA_U8;
    status = gpures_cpu_shared_slot_create(&d, NULL, &h);
    if (status == GPURES_OK) pool_add(p, h);
  }
  int full = CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", status) &&
             CHECK_EQ(gpures__test_failed_allocs(), 1);
  gpures__test_fail_alloc_after(-1);
  return full;
}

/* ------------------------------------------- 1: the chunk allocation */

static void a_create_that_needs_a_new_chunk_fails_for_every_kind(void) {
  bystanders b;
  bystanders_make(&b);
  /* An event queue whose ring exists (a ring of 16), so that only the chunk is missing. */
  uint32_t queue = 0;
  CHECK_OK(gpures_event_queue_open(&queue));
  gpures_handle first = 0;
  {
    any_desc u;
    fill(GPURES_KIND_CPU_SHARED_SLOT, &u, -1);
    gpures_create_options o = options(NULL, queue, 1, 0);
    CHECK_OK(gpures_create(GPURES_KIND_CPU_SHARED_SLOT, &u, &o, &first));
  }
  pool p = {0};
  uint64_t live = gpures_live_handles(0);
  if (!fill_table(&p)) return;
  live += p.n;
  CHECK_EQ(gpures_live_handles(0), live);
  int fds = count_open_fds();

  gpures__test_fail_alloc_after(0);
  uint32_t tried = 0;
  for (uint32_t kind = 1; kind <= GPURES_KIND_MAX; kind++) {
    if (!gpures_kind_supported(kind)) continue;
    int before = atomic_load(&check_failures);
    int kind_fd = fd_for(kind, memory_fd);
    int open_before = count_open_fds();
    for (int adopt = 0; adopt <= owns_fds(kind); adopt++) {
      /* adopting: fds of the caller's own, without FD_CLOEXEC */
      int caller_fd = adopt ? fcntl(kind_fd, F_DUPFD, 3) : kind_fd;
      any_desc u;
      fill(kind, &u, caller_fd);
      probe pr = {0, 0};
      gpures_create_options o =
          options(&pr, queue, 7, adopt ? GPURES_CREATE_TAKE_OWNERSHIP : 0);
      gpures_handle h = 99;
      CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_create(kind, &u, &o, &h));
      CHECK_EQ(h, 0);
      CHECK_EQ(gpures_live_handles(0), live);
      CHECK_EQ(pr.releases, 0);
      CHECK_EQ(gpures_event_queue_pending(queue), 0);
      if (adopt) { /* on failure the caller's fds stay the caller's */
        CHECK(fd_is_open(caller_fd));
        close(caller_fd);
      }
      CHECK_EQ(count_open_fds(), open_before); /* every duplicate gpures made was closed */
      tried++;
    }
    if (kind_fd != memory_fd) close(kind_fd);
    if (atomic_load(&check_failures) != before)
      fprintf(stderr, "    ^ in kind %s\n", gpures_kind_info_of(kind)->name);
  }
  CHECK(tried >= 10);
  CHECK_EQ(gpures__test_failed_allocs(), tried); /* each failed at the chunk, nowhere else */
  bystanders_intact(&b);
  /* Without memory, a released slot can still be reused: no allocation needed. */
  CHECK_OK(gpures_release(p.h[--p.n]));
  gpures_handle reuse = create_slot(), none = create_slot();
  CHECK(reuse != 0);
  CHECK_EQ(none, 0);
  CHECK_EQ(gpures_last_status(), GPURES_E_OUT_OF_MEMORY);

  /*
  ** Each failed create gave back the event room it reserved: with memory still
  ** failing, 15 more handles fit the queue's ring of 16 next to the first.
  */
  pool on_queue = {0};
  for (int i = 0; i < 15; i++) {
    CHECK_OK(gpures_release(p.h[--p.n])); /* a free slot, so no chunk is needed */
    any_desc u;
    fill(GPURES_KIND_CPU_SHARED_SLOT, &u, -1);
    gpures_create_options o = options(NULL, queue, 2, 0);
    gpures_handle h = 0;
    CHECK_OK(gpures_create(GPURES_KIND_CPU_SHARED_SLOT, &u, &o, &h));
    pool_add(&on_queue, h);
  }
  CHECK_EQ(gpures__test_failed_allocs(), tried + 1);
  gpures__test_fail_alloc_after(-1);

  /* Memory back: the next create makes its chunk. */
  gpures_handle more = create_slot();
  CHECK(more != 0);
  CHECK_OK(gpures_release(more));
  CHECK_OK(gpures_release(reuse));
  pool_release(&on_queue);
  CHECK_OK(gpures_release(first));
  CHECK_EQ(gpures_event_queue_pending(queue), 16);
  CHECK_OK(gpures_event_queue_close(queue));
  pool_release(&p);
  CHECK_EQ(count_open_fds(), fds);
  bystanders_release(&b);
}

/* ------------------------------------------ 2: the event ring at create */

static void a_create_whose_event_queue_cannot_grow_fails_and_leaves_the_queue_alone(void) {
  bystanders b;
  bystanders_make(&b);
  int fds = count_open_fds();
  uint64_t live = gpures_live_handles(0);
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  any_desc u;
  gpures_handle h = 5;

  /* The first handle on a queue makes its ring. */
  gpures__test_fail_alloc_after(0);
  fill(GPURES_KIND_CPU_BYTES, &u, -1);
  probe pr = {0, 0};
  gpures_create_options o = options(&pr, q, 1, 0);
  CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_create(GPURES_KIND_CPU_BYTES, &u, &o, &h));
  CHECK_EQ(h, 0);
  gpures__test_fail_alloc_after(-1);

  /* Sixteen handles fill a ring of sixteen; the seventeenth needs it to grow. */
  gpures_handle held[16];
  probe probes[16];
  memset(probes, 0, sizeof probes);
  for (int i = 0; i < 16; i++) {
    o = options(&probes[i], q, 100 + (uint64_t)i, 0);
    CHECK_OK(gpures_create(GPURES_KIND_CPU_BYTES, &u, &o, &held[i]));
  }
  gpures__test_fail_alloc_after(0);
  /* of every kind; adopting fds, the caller's fd is not even marked close-on-exec */
  uint32_t kinds = 0;
  for (uint32_t kind = 1; kind <= GPURES_KIND_MAX; kind++) {
    if (!gpures_kind_supported(kind)) continue;
    kinds++;
    int adopt = owns_fds(kind);
    int kind_fd = fd_for(kind, memory_fd);
    int caller_fd = adopt ? fcntl(kind_fd, F_DUPFD, 3) : kind_fd;
    fill(kind, &u, caller_fd);
    o = options(&pr, q, 999, adopt ? GPURES_CREATE_TAKE_OWNERSHIP : 0);
    CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_create(kind, &u, &o, &h));
    if (adopt) {
      CHECK(fd_is_open(caller_fd) && !fd_is_cloexec(caller_fd));
      close(caller_fd);
    }
    if (kind_fd != memory_fd) close(kind_fd);
  }
  CHECK_EQ(pr.releases, 0);
  CHECK_EQ(gpures_live_handles(0), live + 16);
  CHECK_EQ(count_open_fds(), fds);

  /* mark_consumed needs room for one more event: it fails, and has no effect at all */
  CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_mark_consumed(held[3]));
  CHECK_EQ(probes[3].consumed, 0);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  uint32_t n = 0;
  CHECK_OK(gpures_refcount(held[3], &n));
  CHECK_EQ(n, 1);

  /* The last releases need no memory: their events were reserved at create. */
  for (int i = 0; i < 16; i++) CHECK_OK(gpures_release(held[i]));
  CHECK_EQ(gpures__test_failed_allocs(), kinds + 1); /* each create, and mark_consumed */
  gpures__test_fail_alloc_after(-1);
  gpures_event e[32];
  CHECK_OK(gpures_event_queue_poll(q, e, 32, &n));
  CHECK_EQ(n, 16);
  for (uint32_t i = 0; i < n && i < 16; i++) {
    CHECK_EQ(e[i].token, 100 + i);
    CHECK_EQ(e[i].type, GPURES_EVENT_RELEASED);
    CHECK_EQ(probes[i].releases, 1);
  }
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_EQ(gpures_live_handles(0), live);
  bystanders_intact(&b);
  bystanders_release(&b);
}

/* --------------------------------------- 3: mark_consumed alone */

static void mark_consumed_that_cannot_queue_its_event_fails_without_effect(void) {
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  any_desc u;
  fill(GPURES_KIND_VK_IMAGE, &u, -1);
  probe pr = {0, 0};
  gpures_create_options o = options(&pr, q, 5, 0);
  gpures_handle h = 0;
  CHECK_OK(gpures_create(GPURES_KIND_VK_IMAGE, &u, &o, &h)); /* ring of 16, one reserved */
  for (int i = 0; i < 15; i++) CHECK_OK(gpures_mark_consumed(h));
  CHECK_EQ(pr.consumed, 15);
  gpures__test_fail_alloc_after(0);
  CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_mark_consumed(h));
  CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_mark_consumed(h));
  CHECK_EQ(gpures__test_failed_allocs(), 2);
  CHECK_EQ(pr.consumed, 15);
  CHECK_EQ(gpures_event_queue_pending(q), 15);
  CHECK_OK(gpures_slot_release(h)); /* the rest of the handle works */
  CHECK_EQ(gpures_fixture_gate, gpures_fixture_vk_image().slot_release.value);
  gpures_fixture_gate = 0;
  CHECK_OK(gpures_release(h)); /* and its last release still posts its event */
  gpures__test_fail_alloc_after(-1);
  CHECK_EQ(pr.releases, 1);
  gpures_event e[20];
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(q, e, 20, &n));
  CHECK_EQ(n, 16);
  CHECK(n == 16 && e[15].type == GPURES_EVENT_RELEASED && e[14].type == GPURES_EVENT_MARK_CONSUMED);
  CHECK_OK(gpures_event_queue_close(q));
}

/* ----------------------------------- 4: every allocation point in turn */

typedef struct scenario_result {
  int created, failed_creates, consumed, failed_consumes;
} scenario_result;

/*
** Creates 40 handles of four kinds (two owning fds) on one event queue,
** marks every third consumed, then releases them all. With allocations
** failing, some calls fail with OUT_OF_MEMORY; every other call must still
** succeed, and at the end every event that is owed has arrived, every
** keep-alive ran once, and no fd and no handle is left.
*/
static scenario_result scenario(void) {
  enum { N = 40 };
  static const uint32_t kinds[] = {GPURES_KIND_CPU_BYTES, GPURES_KIND_DMA_BUF_HANDLE,
                                   GPURES_KIND_VK_OPAQUE_FD, GPURES_KIND_GL_TEXTURE_HANDLE};
  scenario_result r = {0, 0, 0, 0};
  int fds = count_open_fds();
  uint64_t live = gpures_live_handles(0);
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q)); /* opening allocates nothing */
  gpures_handle h[N];
  probe probes[N];
  int consumed[N];
  memset(probes, 0, sizeof probes);
  memset(consumed, 0, sizeof consumed);
  for (int i = 0; i < N; i++) {
    uint32_t kind = kinds[i % 4];
    int adopt = kind == GPURES_KIND_VK_OPAQUE_FD;
    int caller_fd = adopt ? fcntl(memory_fd, F_DUPFD_CLOEXEC, 3) : memory_fd;
    any_desc u;
    fill(kind, &u, caller_fd);
    gpures_create_options o =
        options(&probes[i], q, (uint64_t)i + 1, adopt ? GPURES_CREATE_TAKE_OWNERSHIP : 0);
    int status = gpures_create(kind, &u, &o, &h[i]);
    if (status == GPURES_OK) {
      r.created++;
    } else {
      CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", status);
      CHECK_EQ(h[i], 0);
      r.failed_creates++;
      if (adopt) {
        CHECK(fd_is_open(caller_fd));
        close(caller_fd);
      }
    }
  }
  for (int i = 0; i < N; i += 3) {
    if (!h[i]) continue;
    int status = gpures_mark_consumed(h[i]);
    if (status == GPURES_OK) {
      consumed[i] = 1;
      r.consumed++;
    } else {
      CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", status);
      r.failed_consumes++;
    }
  }
  CHECK_EQ(gpures_live_handles(0), live + (uint64_t)r.created);
  for (int i = 0; i < N; i++) {
    if (!h[i]) continue;
    uint32_t n = 0;
    CHECK_OK(gpures_refcount(h[i], &n));
    CHECK_EQ(n, 1);
    CHECK_EQ(probes[i].consumed, consumed[i]);
    CHECK_OK(gpures_release(h[i]));
    CHECK_EQ(probes[i].releases, 1);
  }
  /* Every event owed, in order: MARK_CONSUMED ones as they came, then the RELEASED ones. */
  gpures_event e[2 * N];
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(q, e, 2 * N, &n));
  CHECK_EQ(n, (uint32_t)(r.created + r.consumed));
  uint32_t released = 0, marked = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t t = e[i].token;
    int ok = t >= 1 && t <= N && h[t - 1] != 0;
    if (e[i].type == GPURES_EVENT_RELEASED) released++;
    else ok &= consumed[t - 1] && ++marked > 0;
    CHECK(ok);
  }
  CHECK_EQ(released, (uint32_t)r.created);
  CHECK_EQ(marked, (uint32_t)r.consumed);
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_EQ(gpures_live_handles(0), live);
  CHECK_EQ(count_open_fds(), fds);
  return r;
}

static void every_allocation_point_fails_in_turn(void) {
  bystanders b;
  bystanders_make(&b);
  pool p = {0};
  int points = 0;
  for (int64_t k = 0; k < 32; k++) {
    /* A full table, so that the scenario's first create needs a new chunk. */
    if (!fill_table(&p)) break;
    gpures__test_fail_alloc_after(k);
    int before = atomic_load(&check_failures);
    scenario_result r = scenario();
    uint64_t injected = gpures__test_failed_allocs();
    gpures__test_fail_alloc_after(-1);
    if (atomic_load(&check_failures) != before)
      fprintf(stderr, "    ^ with allocation %lld failing\n", (long long)k + 1);
    if (injected == 0) { /* the scenario needs only k allocations: all were walked */
      CHECK_EQ(r.failed_creates + r.failed_consumes, 0);
      CHECK_EQ(r.created, 40);
      points = (int)k;
      break;
    }
    CHECK(r.failed_creates + r.failed_consumes > 0);
    if (k == 0) CHECK_EQ(r.created, 0); /* no chunk: no create can succeed */
    bystanders_intact(&b);
  }
  /* one chunk and the ring's growth from 0 to 16, 32 and 64 events */
  CHECK_EQ(points, 4);
  printf("     walked %d allocation points\n", points);
  pool_release(&p);
  bystanders_intact(&b);
  bystanders_release(&b);
}

int main(void) {
  memory_fd = make_memfd(65536, 1);
  int fds = count_open_fds();
  RUN(a_create_that_needs_a_new_chunk_fails_for_every_kind);
  RUN(a_create_whose_event_queue_cannot_grow_fails_and_leaves_the_queue_alone);
  RUN(mark_consumed_that_cannot_queue_its_event_fails_without_effect);
  RUN(every_allocation_point_fails_in_turn);
  CHECK_EQ(count_open_fds(), fds);
  CHECK_EQ(gpures_live_handles(0), 0);
  close(memory_fd);
  return check_finish("test_alloc_failure");
}
