/*
** test_threads.c: reference counts stay exact under concurrent clone and
** release from many threads, and the keep-alive runs exactly once
** (SPEC section 4.2). Counters are C11 atomics; threads are pthreads.
**
** GPURES_TEST_ITERATIONS overrides the 200000 clone/release pairs per thread
** (e.g. for a quick run under a slow checker).
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "handles.h"

enum { THREADS = 8 };
static long iterations = 200000;

typedef struct probe {
  atomic_int releases;
  atomic_int consumed;
} probe;

static void probe_release(void *ctx) { atomic_fetch_add(&((probe *)ctx)->releases, 1); }
static void probe_consumed(void *ctx) { atomic_fetch_add(&((probe *)ctx)->consumed, 1); }

static gpures_handle create_probed(probe *p) {
  gpures_create_options o = {.struct_size = sizeof o,
                             .keep_alive = {p, probe_release, probe_consumed}};
  return new_cpu_bytes(&o);
}

/* --------------------------------------- clone/release on a shared handle */

typedef struct storm {
  gpures_handle shared;
  pthread_barrier_t start;
  atomic_long own_created;
  probe own; /* the keep-alive of every handle the threads make for themselves */
} storm;

static void *clone_release_storm(void *arg) {
  storm *s = arg;
  int ok = 1;
  gpures_handle held[3] = {0};
  pthread_barrier_wait(&s->start);
  for (long i = 0; i < iterations && ok; i++) {
    ok &= gpures_clone(s->shared) == GPURES_OK;
    ok &= gpures_release(s->shared) == GPURES_OK;
    if (i % 4096 == 0) { /* hold a few references for a while */
      int slot = (int)(i / 4096) % 3;
      if (held[slot]) ok &= gpures_release(held[slot]) == GPURES_OK;
      ok &= gpures_clone(s->shared) == GPURES_OK;
      held[slot] = s->shared;
      ok &= gpures_mark_consumed(s->shared) == GPURES_OK;
    }
    if (i % 16 == 0) { /* meanwhile, handles of its own come and go */
      gpures_handle mine = create_probed(&s->own);
      atomic_fetch_add(&s->own_created, 1);
      ok &= gpures_clone(mine) == GPURES_OK;
      ok &= gpures_release(mine) == GPURES_OK;
      ok &= gpures_release(mine) == GPURES_OK;
      ok &= gpures_release(mine) == GPURES_E_STALE;
    }
  }
  for (int k = 0; k < 3; k++)
    if (held[k]) ok &= gpures_release(held[k]) == GPURES_OK;
  CHECK(ok);
  return NULL;
}

static void eight_threads_cloning_and_releasing_keep_the_count_exact(void) {
  storm s;
  memset(&s, 0, sizeof s);
  probe shared_probe;
  memset(&shared_probe, 0, sizeof shared_probe);
  uint64_t live = gpures_live_handles(0);
  s.shared = create_probed(&shared_probe);
  pthread_barrier_init(&s.start, NULL, THREADS);
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&threads[t], NULL, clone_release_storm, &s) == 0);
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&s.start);

  CHECK_EQ(refcount_of(s.shared), 1);
  CHECK_EQ(atomic_load(&shared_probe.releases), 0);
  CHECK_EQ(atomic_load(&shared_probe.consumed), THREADS * ((iterations + 4095) / 4096));
  CHECK_EQ(atomic_load(&s.own.releases), atomic_load(&s.own_created));
  CHECK_EQ(atomic_load(&s.own_created), THREADS * ((iterations + 15) / 16));
  CHECK_EQ(gpures_live_handles(0), live + 1);
  CHECK_OK(gpures_release(s.shared));
  CHECK_EQ(atomic_load(&shared_probe.releases), 1);
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(s.shared));
  CHECK_EQ(atomic_load(&shared_probe.releases), 1);
  CHECK_EQ(gpures_live_handles(0), live);
}

/* ------------------------------------ the last reference, released at once */

enum { ROUNDS = 2000 };

typedef struct last_release {
  gpures_handle handle; /* this round's handle, refcount THREADS */
  probe p;
  pthread_barrier_t round_start, round_end;
  atomic_int runs_by_thread[THREADS];
} last_release;

typedef struct worker {
  last_release *shared;
  int index;
} worker;

/* Which worker the calling thread is (-1 for the main thread). */
static _Thread_local int worker_index = -1;

static void release_on_worker(void *ctx) {
  last_release *s = ctx;
  atomic_fetch_add(&s->p.releases, 1);
  if (worker_index >= 0) atomic_fetch_add(&s->runs_by_thread[worker_index], 1);
}

/* Each thread drops one of the round's THREADS references at the same moment. */
static void *release_one_reference(void *arg) {
  worker *w = arg;
  last_release *s = w->shared;
  int ok = 1;
  worker_index = w->index;
  for (int round = 0; round < ROUNDS; round++) {
    pthread_barrier_wait(&s->round_start);
    ok &= gpures_release(s->handle) == GPURES_OK;
    pthread_barrier_wait(&s->round_end);
  }
  CHECK(ok);
  return NULL;
}

static void eight_threads_releasing_eight_references_run_the_keep_alive_once(void) {
  static last_release s;
  memset(&s, 0, sizeof s);
  pthread_barrier_init(&s.round_start, NULL, THREADS + 1);
  pthread_barrier_init(&s.round_end, NULL, THREADS + 1);
  pthread_t threads[THREADS];
  worker workers[THREADS];
  for (int t = 0; t < THREADS; t++) {
    workers[t] = (worker){&s, t};
    CHECK(pthread_create(&threads[t], NULL, release_one_reference, &workers[t]) == 0);
  }
  int ok = 1;
  for (int round = 0; round < ROUNDS && ok; round++) {
    atomic_store(&s.p.releases, 0);
    gpures_create_options o = {.struct_size = sizeof o, .keep_alive = {&s, release_on_worker, NULL}};
    s.handle = new_cpu_bytes(&o);
    ok &= s.handle != 0;
    for (int i = 1; i < THREADS; i++) ok &= CHECK_OK(gpures_clone(s.handle));
    ok &= CHECK_EQ(refcount_of(s.handle), THREADS);
    pthread_barrier_wait(&s.round_start); /* go */
    pthread_barrier_wait(&s.round_end);
    ok &= CHECK_EQ(atomic_load(&s.p.releases), 1);
    ok &= CHECK_STATUS(GPURES_E_STALE, gpures_clone(s.handle));
    if (!ok) fprintf(stderr, "    in round %d\n", round);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&s.round_start);
  pthread_barrier_destroy(&s.round_end);
  /* it ran on whichever worker made the last release, never on the main thread */
  int total = 0;
  for (int t = 0; t < THREADS; t++) total += atomic_load(&s.runs_by_thread[t]);
  if (ok) CHECK_EQ(total, ROUNDS);
}

/* ------------------------------- clones racing the last release of a handle */

typedef struct race {
  gpures_handle handle;
  probe p;
  pthread_barrier_t round_start, round_end;
  atomic_long clones_won, clones_lost;
} race;

/* A clone racing the last release either gets a reference or STALE: never revives it. */
static void *clone_while_it_dies(void *arg) {
  race *r = arg;
  int ok = 1;
  for (int round = 0; round < ROUNDS / 4; round++) {
    pthread_barrier_wait(&r->round_start);
    for (int i = 0; i < 64; i++) {
      int status = gpures_clone(r->handle);
      if (status == GPURES_OK) {
        atomic_fetch_add(&r->clones_won, 1);
        ok &= gpures_release(r->handle) == GPURES_OK;
      } else {
        ok &= status == GPURES_E_STALE;
        atomic_fetch_add(&r->clones_lost, 1);
        break;
      }
    }
    pthread_barrier_wait(&r->round_end);
  }
  CHECK(ok);
  return NULL;
}

static void clones_racing_the_last_release_win_a_reference_or_see_stale(void) {
  static race r;
  memset(&r, 0, sizeof r);
  pthread_barrier_init(&r.round_start, NULL, THREADS);
  pthread_barrier_init(&r.round_end, NULL, THREADS);
  pthread_t threads[THREADS - 1];
  for (int t = 0; t < THREADS - 1; t++)
    CHECK(pthread_create(&threads[t], NULL, clone_while_it_dies, &r) == 0);
  int ok = 1;
  for (int round = 0; round < ROUNDS / 4 && ok; round++) {
    atomic_store(&r.p.releases, 0);
    r.handle = create_probed(&r.p);
    pthread_barrier_wait(&r.round_start);
    ok &= CHECK_OK(gpures_release(r.handle)); /* the owner lets go while they clone */
    pthread_barrier_wait(&r.round_end);
    ok &= CHECK_EQ(atomic_load(&r.p.releases), 1);
    ok &= CHECK_STATUS(GPURES_E_STALE, gpures_release(r.handle));
  }
  for (int t = 0; t < THREADS - 1; t++) pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&r.round_start);
  pthread_barrier_destroy(&r.round_end);
  CHECK(atomic_load(&r.clones_won) + atomic_load(&r.clones_lost) > 0);
}

/* -------------------------------------------- create/release on every thread */

static atomic_long storm_releases;
static void count_storm_release(void *ctx) { (void)ctx; atomic_fetch_add(&storm_releases, 1); }

static void *create_and_release(void *arg) {
  (void)arg;
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  gpures_create_options o = {.struct_size = sizeof o, .keep_alive = {NULL, count_storm_release, NULL}};
  gpures_handle batch[32];
  int ok = 1;
  for (int round = 0; round < 500 && ok; round++) {
    for (int i = 0; i < 32; i++) ok &= gpures_cpu_bytes_create(&d, &o, &batch[i]) == GPURES_OK;
    for (int i = 0; i < 32 && ok; i++) {
      for (int j = 0; j < i; j++) ok &= batch[i] != batch[j]; /* no two live handles alike */
      uint32_t kind = 0;
      ok &= gpures_kind(batch[i], &kind) == GPURES_OK && kind == GPURES_KIND_CPU_BYTES;
    }
    for (int i = 0; i < 32; i++) ok &= gpures_release(batch[i]) == GPURES_OK;
  }
  CHECK(ok);
  return NULL;
}

static void handles_created_on_many_threads_are_distinct_and_all_released(void) {
  uint64_t live = gpures_live_handles(0);
  atomic_store(&storm_releases, 0);
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&threads[t], NULL, create_and_release, NULL) == 0);
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  CHECK_EQ(atomic_load(&storm_releases), THREADS * 500 * 32);
  CHECK_EQ(gpures_live_handles(0), live);
}

int main(void) {
  const char *env = getenv("GPURES_TEST_ITERATIONS");
  if (env && atol(env) > 0) iterations = atol(env);
  RUN(eight_threads_cloning_and_releasing_keep_the_count_exact);
  RUN(eight_threads_releasing_eight_references_run_the_keep_alive_once);
  RUN(clones_racing_the_last_release_win_a_reference_or_see_stale);
  RUN(handles_created_on_many_threads_are_distinct_and_all_released);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_threads");
}
