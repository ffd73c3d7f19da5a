/*
** test_hostile.c: what a careless or hostile caller cannot do to gpures.
**
**   - Sizes: a struct_size the library cannot know (unset: 0x7fffffff) is
**     refused before it reads or writes one byte past its own struct; a
**     describe writes min(caller's size, own size) bytes and nothing more.
**   - Generations: a stale handle or event queue id never comes back to
**     life, not even after its slot or table entry ran out of generations.
**   - Threads: a queue bound to a thread closes when the thread exits, so
**     hosts whose isolates come and go (Deno Workers) never fill the table.
**   - Messages: a failed fd duplication names its errno (EMFILE, ...).
**
** What would be a crash runs in a fork()ed child (in_child): a signal there
** fails the test instead of ending the suite. Structs that must not be
** overrun end where an unmapped page begins (before_guard), so one byte too
** far faults.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "check.h"
#include "fd_util.h"
#include "fork_util.h"

/* The test hooks of handle_table.c and alloc.c: exported, but not part of gpures.h. */
void gpures__test_set_next_generation(uint32_t generation);
uint32_t gpures__test_retired_slots(void);
void gpures__test_fail_alloc_after(int64_t n);

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ helpers */

/* `size` writable bytes that end where an unmapped page begins. */
static void *before_guard(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (size + page - 1) / page * page;
  unsigned char *base =
      mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED || mprotect(base + span, page, PROT_NONE) != 0) {
    perror("mmap/mprotect");
    abort();
  }
  return base + span - size;
}

/* Runs `body` in a child process; its failed CHECKs, or a signal, fail the test here. */
#define IN_CHILD(body) in_child(body, #body)
static void in_child(void (*body)(void), const char *name) {
  pid_t pid = fork_quietly();
  if (pid == 0) {
    int before = atomic_load(&check_failures);
    body();
    fflush(stderr);
    _exit(atomic_load(&check_failures) != before ? 1 : 0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status))
    fprintf(stderr, "    %s died of signal %d (%s)\n", name, WTERMSIG(status),
            strsignal(WTERMSIG(status)));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static gpures_handle cpu_handle(void) {
  gpures_cpu_bytes_desc d;
  gpures_fixture_fill_cpu_bytes(&d);
  gpures_handle h = 0;
  CHECK_OK(gpures_cpu_bytes_create(&d, NULL, &h));
  return h;
}

/* 1 when the last error's message contains `text`. */
static int error_mentions(const char *text) {
  if (strstr(gpures_last_error(), text)) return 1;
  fprintf(stderr, "    the error \"%s\" does not mention \"%s\"\n", gpures_last_error(), text);
  return 0;
}

/* ------------------------------------------------- sizes from the caller */

static void create_with_unset_struct_size(void) {
  gpures_cpu_bytes_desc *d = before_guard(sizeof *d);
  gpures_fixture_fill_cpu_bytes(d);
  d->struct_size = 0x7fffffff; /* what an uninitialised struct_size may hold */
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_cpu_bytes_create(d, NULL, &h));
  CHECK(error_mentions("2147483647"));
  CHECK_EQ(h, 0);
}

static void create_reads_no_byte_past_its_struct_when_struct_size_is_unset(void) {
  IN_CHILD(create_with_unset_struct_size);
}

static void create_with_unset_options_struct_size(void) {
  gpures_cpu_bytes_desc d;
  gpures_fixture_fill_cpu_bytes(&d);
  gpures_create_options *o = before_guard(sizeof *o);
  memset(o, 0, sizeof *o);
  o->struct_size = 0x7fffffff;
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "options.structSize", gpures_cpu_bytes_create(&d, o, &h));
  CHECK(error_mentions("2147483647"));
  CHECK_EQ(h, 0);
}

static void create_reads_no_byte_past_the_options_when_struct_size_is_unset(void) {
  IN_CHILD(create_with_unset_options_struct_size);
}

/* A newer struct may have up to GPURES_STRUCT_SIZE_MAX bytes; one more is refused unread. */
static void create_accepts_a_newer_struct_up_to_the_bound_and_no_larger(void) {
  unsigned char *big = calloc(1, GPURES_STRUCT_SIZE_MAX + 1);
  gpures_cpu_bytes_desc d;
  gpures_fixture_fill_cpu_bytes(&d);
  memcpy(big, &d, sizeof d);
  uint32_t size = GPURES_STRUCT_SIZE_MAX;
  memcpy(big, &size, sizeof size);
  gpures_handle h = 0;
  if (CHECK_OK(gpures_cpu_bytes_create((gpures_cpu_bytes_desc *)(void *)big, NULL, &h)))
    CHECK_OK(gpures_release(h));
  size = GPURES_STRUCT_SIZE_MAX + 1;
  memcpy(big, &size, sizeof size);
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize",
              gpures_cpu_bytes_create((gpures_cpu_bytes_desc *)(void *)big, NULL, &h));
  CHECK(error_mentions("4097"));

  gpures_create_options *o = (gpures_create_options *)(void *)big;
  memset(big, 0, GPURES_STRUCT_SIZE_MAX + 1);
  o->struct_size = GPURES_STRUCT_SIZE_MAX;
  if (CHECK_OK(gpures_cpu_bytes_create(&d, o, &h))) CHECK_OK(gpures_release(h));
  o->struct_size = GPURES_STRUCT_SIZE_MAX + 1;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "options.structSize", gpures_cpu_bytes_create(&d, o, &h));
  free(big);
}

static void kind_describe_with_unset_struct_size(void) {
  gpures_handle h = cpu_handle();
  gpures_cpu_bytes_desc *out = before_guard(sizeof *out);
  memset(out, 0xa5, sizeof *out);
  out->struct_size = 0x7fffffff;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_cpu_bytes_describe(h, out));
  CHECK(error_mentions("2147483647"));
  CHECK_EQ(out->struct_size, 0x7fffffff); /* nothing written */
  CHECK_EQ(out->size, 0xa5a5a5a5a5a5a5a5ull);
  CHECK_OK(gpures_release(h));
}

static void kind_describe_writes_nothing_for_an_unset_struct_size(void) {
  IN_CHILD(kind_describe_with_unset_struct_size);
}

static void kind_describe_with_unknowable_struct_sizes(void) {
  gpures_handle h = cpu_handle();
  static const uint32_t unknowable[] = {
      0, 4, 7,                                            /* not even struct_size and flags */
      offsetof(gpures_cpu_bytes_desc, size) + 4,          /* ends inside `size` */
      GPURES_STRUCT_SIZE_MAX + 1, 0x7fffffff, 0xffffffff, /* no struct is that large */
  };
  unsigned char *out = malloc(GPURES_STRUCT_SIZE_MAX + 8);
  for (size_t i = 0; i < LEN(unknowable); i++) {
    memset(out, 0xa5, GPURES_STRUCT_SIZE_MAX + 8);
    memcpy(out, &unknowable[i], 4);
    if (!CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize",
                     gpures_cpu_bytes_describe(h, (gpures_cpu_bytes_desc *)(void *)out)))
      fprintf(stderr, "    ^ struct_size %u\n", unknowable[i]);
    CHECK(out[4] == 0xa5 && out[GPURES_STRUCT_SIZE_MAX] == 0xa5); /* nothing written */
  }
  free(out);
  CHECK_OK(gpures_release(h));
}

static void kind_describe_refuses_struct_sizes_it_cannot_know(void) {
  IN_CHILD(kind_describe_with_unknowable_struct_sizes);
}

/* An older, shorter struct gets its own fields and nothing past them. */
static void kind_describe_fills_an_older_struct_and_stops_at_its_end(void) {
  gpures_handle h = cpu_handle();
  gpures_cpu_bytes_desc out;
  memset(&out, 0xa5, sizeof out);
  out.struct_size = offsetof(gpures_cpu_bytes_desc, row_pitch);
  CHECK_OK(gpures_cpu_bytes_describe(h, &out));
  CHECK_EQ(out.struct_size, offsetof(gpures_cpu_bytes_desc, row_pitch));
  gpures_cpu_bytes_desc given = gpures_fixture_cpu_bytes();
  CHECK(out.ptr == given.ptr);
  CHECK_EQ(out.size, given.size);
  CHECK_EQ(out.row_pitch, 0xa5a5a5a5u);
  CHECK_EQ(out.height, 0xa5a5a5a5u);
  CHECK_OK(gpures_release(h));
}

/* A newer, longer struct gets the library's fields; the rest is the caller's to read as absent. */
static void kind_describe_fills_a_newer_struct_up_to_its_own_size_only(void) {
  gpures_handle h = cpu_handle();
  unsigned char out[sizeof(gpures_cpu_bytes_desc) + 64];
  memset(out, 0xa5, sizeof out);
  uint32_t size = sizeof out;
  memcpy(out, &size, 4);
  CHECK_OK(gpures_cpu_bytes_describe(h, (gpures_cpu_bytes_desc *)(void *)out));
  memcpy(&size, out, 4);
  CHECK_EQ(size, sizeof(gpures_cpu_bytes_desc));
  size_t untouched = 0;
  for (size_t i = sizeof(gpures_cpu_bytes_desc); i < sizeof out; i++) untouched += out[i] == 0xa5;
  CHECK_EQ(untouched, 64);
  CHECK_OK(gpures_release(h));
}

static void generic_describe_into_a_huge_buffer(void) {
  gpures_handle h = cpu_handle();
  unsigned char *out = before_guard(sizeof(gpures_cpu_bytes_desc));
  /* out_size claims 2 GiB; only the struct the library knows may be written */
  CHECK_OK(gpures_describe(h, out, 0x7fffffff));
  uint32_t size;
  memcpy(&size, out, 4);
  CHECK_EQ(size, sizeof(gpures_cpu_bytes_desc));
  CHECK_OK(gpures_release(h));
}

static void generic_describe_writes_at_most_its_own_size(void) {
  IN_CHILD(generic_describe_into_a_huge_buffer);
  gpures_handle h = cpu_handle();
  unsigned char out[sizeof(gpures_cpu_bytes_desc) + 64];
  memset(out, 0xa5, sizeof out);
  CHECK_OK(gpures_describe(h, out, sizeof out));
  size_t untouched = 0;
  for (size_t i = sizeof(gpures_cpu_bytes_desc); i < sizeof out; i++) untouched += out[i] == 0xa5;
  CHECK_EQ(untouched, 64);
  CHECK_OK(gpures_release(h));
}

static void json_and_poll_write_within_capacity(void) {
  gpures_handle h = cpu_handle();
  char *json = before_guard(16);
  size_t length = 0;
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_describe_json(h, json, 16, &length));
  CHECK(length > 16 && json[15] == '\0');
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_describe_json(h, NULL, 1 << 30, &length));

  uint32_t q = 0, n = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  gpures_cpu_bytes_desc d;
  gpures_fixture_fill_cpu_bytes(&d);
  gpures_create_options o = {.struct_size = sizeof o, .event_queue = q};
  for (int i = 0; i < 3; i++) {
    gpures_handle e = 0;
    CHECK_OK(gpures_cpu_bytes_create(&d, &o, &e));
    CHECK_OK(gpures_mark_consumed(e));
    CHECK_OK(gpures_release(e));
  }
  gpures_event *one = before_guard(sizeof *one);
  CHECK_OK(gpures_event_queue_poll(q, one, 1, &n));
  CHECK_EQ(n, 1);
  CHECK_FAILS(GPURES_E_NULL_POINTER, "events", gpures_event_queue_poll(q, NULL, 5, &n));
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_OK(gpures_release(h));
}

static void describe_json_and_poll_write_nothing_past_their_capacity(void) {
  IN_CHILD(json_and_poll_write_within_capacity);
}

/* ------------------------------------------------------------ generations */

/*
** Handle h of generation 1 names slot S. Once S has served its last
** generation (2^32 - 1; the hook skips the handles in between), reusing S
** would start again at generation 1 and hand out h itself again.
*/
static void a_stale_handle_stays_stale_after_its_slot_runs_out_of_generations(void) {
  uint64_t live = gpures_live_handles(0);
  uint32_t retired = gpures__test_retired_slots();
  gpures__test_set_next_generation(1);
  gpures_handle h = cpu_handle();
  CHECK_EQ(h >> 32, 1);
  CHECK_OK(gpures_release(h));

  gpures__test_set_next_generation(UINT32_MAX); /* the slot's last generation */
  gpures_handle last = cpu_handle();
  CHECK_EQ((uint32_t)last, (uint32_t)h); /* the same kind and slot */
  CHECK_EQ(last >> 32, UINT32_MAX);
  CHECK_OK(gpures_release(last));
  CHECK_EQ(gpures__test_retired_slots(), retired + 1);

  gpures_handle later[64];
  for (int i = 0; i < 64; i++) {
    later[i] = cpu_handle(); /* creates still succeed, in other slots */
    CHECK(later[i] != 0 && later[i] != h && later[i] != last);
  }
  uint32_t count = 0;
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_refcount(h, &count));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_clone(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_refcount(last, &count));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(last));
  CHECK_EQ(gpures_live_handles(0), live + 64);
  for (int i = 0; i < 64; i++) CHECK_OK(gpures_release(later[i]));
  CHECK_EQ(gpures_live_handles(0), live);
}

/* The queue table entry an id names (ids are generation << 16 | entry + 1). */
static uint32_t queue_entry(uint32_t id) { return id & 0xffffu; }

/*
** Reopening one table entry 65536 times runs through its 16-bit generation;
** an id must not come back, or the stale id would receive the events of
** whoever holds the queue now.
*/
static void a_stale_queue_id_stays_stale_after_its_entry_runs_out_of_generations(void) {
  uint32_t old = 0, id = 0, revived = 0, same_entry = 0;
  CHECK_OK(gpures_event_queue_open(&old));
  CHECK_OK(gpures_event_queue_close(old));
  for (uint32_t i = 0; i < 70000; i++) {
    if (!CHECK_OK(gpures_event_queue_open(&id))) break;
    revived += id == old;
    same_entry += queue_entry(id) == queue_entry(old);
    CHECK_OK(gpures_event_queue_close(id));
  }
  CHECK_EQ(revived, 0);
  CHECK_EQ(same_entry, 0xffffu - (old >> 16)); /* it served up to its last generation, then retired */
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_close(old));
  gpures_cpu_bytes_desc d;
  gpures_fixture_fill_cpu_bytes(&d);
  gpures_create_options o = {.struct_size = sizeof o, .event_queue = old};
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options.eventQueue", gpures_cpu_bytes_create(&d, &o, &h));
}

/* -------------------------------------------------- queues and threads */

typedef struct bind_arg {
  uint32_t queue;
  int status;
  char error[512]; /* the thread's last error: CHECK_STATUS shows only this thread's */
} bind_arg;

static void *open_and_bind(void *p) {
  bind_arg *a = p;
  a->status = gpures_event_queue_open(&a->queue);
  if (a->status == GPURES_OK) a->status = gpures_event_queue_close_on_thread_exit(a->queue);
  snprintf(a->error, sizeof a->error, "%s", a->status ? gpures_last_error() : "");
  return NULL;
}

/* Runs open_and_bind on a new thread until it exits; 0 when the thread could not start. */
static int bind_on_a_thread(bind_arg *a) {
  pthread_t t;
  memset(a, 0, sizeof *a);
  a->status = -1;
  if (!CHECK(pthread_create(&t, NULL, open_and_bind, a) == 0)) return 0;
  pthread_join(t, NULL);
  if (!CHECK_STATUS(GPURES_OK, a->status)) fprintf(stderr, "    the thread's error: \"%s\"\n", a->error);
  return a->status == GPURES_OK;
}

/* The queue a thread opened and bound before it exited; 0 on failure. */
static uint32_t queue_of_a_thread(void) {
  bind_arg a;
  return bind_on_a_thread(&a) ? a.queue : 0;
}

static void a_bound_queue_is_closed_when_its_thread_exits(void) {
  uint32_t q = queue_of_a_thread();
  gpures_event e;
  uint32_t n = 7;
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_poll(q, &e, 1, &n));
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_close(q));
  uint32_t again = 0;
  CHECK_OK(gpures_event_queue_open(&again)); /* its entry is free again */
  CHECK_EQ(queue_entry(again), queue_entry(q));
  CHECK(again != q);
  CHECK_OK(gpures_event_queue_close(again));
}

static void queues_of_5000_thread_lifetimes_do_not_fill_the_table(void) {
  for (int i = 0; i < 5000; i++) {
    bind_arg a;
    if (!bind_on_a_thread(&a)) {
      fprintf(stderr, "    ^ thread %d\n", i);
      break;
    }
  }
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  CHECK_OK(gpures_event_queue_close(q));
}

static void binding_needs_an_open_queue_and_happens_once(void) {
  uint32_t q = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_close_on_thread_exit(0));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_close_on_thread_exit(0x10000u | 5000u));
  CHECK_OK(gpures_event_queue_open(&q));
  CHECK_OK(gpures_event_queue_close_on_thread_exit(q));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_close_on_thread_exit(q));
  CHECK_OK(gpures_event_queue_close(q)); /* by hand: this thread's exit then does nothing */
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_close_on_thread_exit(q));
}

/* The first bind on a thread allocates the thread's list; without memory nothing is bound. */
static void *bind_without_memory(void *p) {
  bind_arg *a = p;
  CHECK_OK(gpures_event_queue_open(&a->queue));
  gpures__test_fail_alloc_after(0);
  CHECK_FAILS(GPURES_E_OUT_OF_MEMORY, "", gpures_event_queue_close_on_thread_exit(a->queue));
  gpures__test_fail_alloc_after(-1);
  CHECK_OK(gpures_event_queue_close_on_thread_exit(a->queue)); /* it was not bound */
  return NULL;
}

static void a_bind_that_runs_out_of_memory_binds_nothing(void) {
  bind_arg a;
  memset(&a, 0, sizeof a);
  pthread_t t;
  if (!CHECK(pthread_create(&t, NULL, bind_without_memory, &a) == 0)) return;
  pthread_join(t, NULL);
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_close(a.queue)); /* closed at exit */
}

typedef struct rebind_arg {
  uint32_t first, second;
} rebind_arg;

/* Binds a queue, closes it by hand, and leaves a new queue on the same entry open. */
static void *bind_close_reopen(void *p) {
  rebind_arg *a = p;
  CHECK_OK(gpures_event_queue_open(&a->first));
  CHECK_OK(gpures_event_queue_close_on_thread_exit(a->first));
  CHECK_OK(gpures_event_queue_close(a->first));
  CHECK_OK(gpures_event_queue_open(&a->second));
  return NULL;
}

static void a_queue_closed_by_hand_is_not_closed_again_at_thread_exit(void) {
  rebind_arg a = {0, 0};
  pthread_t t;
  if (!CHECK(pthread_create(&t, NULL, bind_close_reopen, &a) == 0)) return;
  pthread_join(t, NULL);
  CHECK_EQ(queue_entry(a.second), queue_entry(a.first));
  uint32_t n = 9;
  gpures_event e;
  CHECK_OK(gpures_event_queue_poll(a.second, &e, 1, &n)); /* the newer queue is untouched */
  CHECK_OK(gpures_event_queue_close(a.second));
}

/* ------------------------------------------------------------ fd errors */

static int dma_buf_fd; /* a 4096-byte memfd */

/* Uses every fd the process may have, so that the next dup fails with EMFILE. */
static void exhaust_fds(void) {
  struct rlimit r;
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = 64;
  CHECK(setrlimit(RLIMIT_NOFILE, &r) == 0);
  while (dup(0) >= 0) continue;
  CHECK(errno == EMFILE);
}

static void create_without_fds(void) {
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(dma_buf_fd);
  gpures_handle h = 0;
  exhaust_fds();
  CHECK_FAILS(GPURES_E_OS_ERROR, "fds[0]", gpures_dma_buf_handle_create(&d, NULL, &h));
  char expected[200];
  snprintf(expected, sizeof expected,
           "Cannot create DmaBufHandle: fds[0] (fd %d) could not be duplicated: EMFILE (the "
           "process has no free file descriptors)",
           dma_buf_fd);
  CHECK_STR(gpures_last_error(), expected);
}

static void a_failed_fd_duplication_at_create_names_its_errno(void) {
  IN_CHILD(create_without_fds);
}

static void dup_fd_without_fds(void) {
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(dma_buf_fd);
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h))) return;
  gpures_dma_buf_handle_desc own;
  own.struct_size = sizeof own;
  CHECK_OK(gpures_dma_buf_handle_describe(h, &own));
  exhaust_fds();
  int fd = 0;
  CHECK_FAILS(GPURES_E_OS_ERROR, "index", gpures_dup_fd(h, 0, &fd));
  CHECK_EQ(fd, -1);
  char expected[200];
  snprintf(expected, sizeof expected,
           "Cannot duplicate fd of DmaBufHandle: fds[0] (fd %d) could not be duplicated: EMFILE "
           "(the process has no free file descriptors)",
           own.fds[0]);
  CHECK_STR(gpures_last_error(), expected);
}

static void a_failed_dup_fd_names_its_errno(void) { IN_CHILD(dup_fd_without_fds); }

int main(void) {
  dma_buf_fd = make_memfd(4096, 1);

  RUN(create_reads_no_byte_past_its_struct_when_struct_size_is_unset);
  RUN(create_reads_no_byte_past_the_options_when_struct_size_is_unset);
  RUN(create_accepts_a_newer_struct_up_to_the_bound_and_no_larger);
  RUN(kind_describe_writes_nothing_for_an_unset_struct_size);
  RUN(kind_describe_refuses_struct_sizes_it_cannot_know);
  RUN(kind_describe_fills_an_older_struct_and_stops_at_its_end);
  RUN(kind_describe_fills_a_newer_struct_up_to_its_own_size_only);
  RUN(generic_describe_writes_at_most_its_own_size);
  RUN(describe_json_and_poll_write_nothing_past_their_capacity);

  RUN(a_stale_handle_stays_stale_after_its_slot_runs_out_of_generations);
  RUN(a_stale_queue_id_stays_stale_after_its_entry_runs_out_of_generations);

  RUN(a_bound_queue_is_closed_when_its_thread_exits);
  RUN(queues_of_5000_thread_lifetimes_do_not_fill_the_table);
  RUN(binding_needs_an_open_queue_and_happens_once);
  RUN(a_queue_closed_by_hand_is_not_closed_again_at_thread_exit);
  RUN(a_bind_that_runs_out_of_memory_binds_nothing);

  RUN(a_failed_fd_duplication_at_create_names_its_errno);
  RUN(a_failed_dup_fd_names_its_errno);

  close(dma_buf_fd);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_hostile");
}
