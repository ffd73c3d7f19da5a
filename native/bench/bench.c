/*
** bench.c: the native limit of gpures's operations, the same ones the Deno
** benchmarks in bench/ measure, so both can be compared in one run.
**
**   gpures_bench          a table, ns per operation
**   gpures_bench --json   one JSON object {"machine": ..., "results": [...]}, for bench/run.ts
**   gpures_bench --quick  shorter runs (a smoke test)
**
** Each figure is the median of several timed runs of a loop sized to last a
** few tens of milliseconds. Single-threaded figures call the library through
** its exported symbols, exactly as a native consumer would.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpures.h"
#include "../tests/fixtures.gen.h" /* the descriptors: tools/fixtures.ts, as the Deno side uses them */

/* ------------------------------------------------------------------ timing */

static double target_ms = 40.0; /* each timed run lasts about this long */
static int runs = 7;            /* timed runs per figure; the median is reported */
static volatile uint64_t sink;  /* keeps results alive so no loop is optimized away */

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, int status) {
  fprintf(stderr, "gpures_bench: %s failed: %d %s\n", what, status, gpures_last_error());
  exit(1);
}
#define CHECK(call)                        \
  do {                                     \
    int status_ = (call);                  \
    if (status_ != GPURES_OK) die(#call, status_); \
  } while (0)

typedef void (*body_fn)(void *ctx, uint64_t iterations);

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ns per iteration of body: sized by doubling, then the median of `runs` runs. */
static double measure(body_fn body, void *ctx) {
  uint64_t n = 1;
  for (;;) {
    double t0 = now_ns();
    body(ctx, n);
    double dt = now_ns() - t0;
    if (dt > target_ms * 1e6 / 4 || n >= (1ull << 40)) {
      n = (uint64_t)((double)n * (target_ms * 1e6) / (dt > 1 ? dt : 1)) + 1;
      break;
    }
    n *= 2;
  }
  double samples[32];
  int count = runs < 32 ? runs : 32;
  for (int r = 0; r < count; r++) {
    double t0 = now_ns();
    body(ctx, n);
    samples[r] = (now_ns() - t0) / (double)n;
  }
  qsort(samples, (size_t)count, sizeof samples[0], cmp_double);
  return samples[count / 2];
}

/* ----------------------------------------------------------------- results */

typedef struct result {
  const char *group;
  const char *name;
  double ns;
} result;

static result results[64];
static int num_results;

static void record(const char *group, const char *name, double ns) {
  results[num_results++] = (result){group, name, ns};
}

/* ------------------------------------------------------------------- bodies */

static gpures_handle live_handle; /* a VkBufferHandle for the per-handle operations */

static void body_empty(void *ctx, uint64_t n) {
  (void)ctx;
  uint32_t acc = 0;
  for (uint64_t i = 0; i < n; i++) acc += gpures_abi_version();
  sink += acc;
}

static void body_refcount(void *ctx, uint64_t n) {
  (void)ctx;
  uint32_t count = 0, acc = 0;
  for (uint64_t i = 0; i < n; i++) {
    gpures_refcount(live_handle, &count);
    acc += count;
  }
  sink += acc;
}

/* For scale: one system call, the unit DmaBufHandle's create and release pay several of. */
static void body_syscall(void *ctx, uint64_t n) {
  (void)ctx;
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; i++) acc += (uint64_t)getppid();
  sink += acc;
}

static void body_clone_release(void *ctx, uint64_t n) {
  (void)ctx;
  for (uint64_t i = 0; i < n; i++) {
    gpures_clone(live_handle);
    gpures_release(live_handle);
  }
}

/* create + describe + release of one kind, from a filled descriptor. */
typedef struct kind_case {
  const char *name;
  uint32_t kind;
  const void *desc;
  const gpures_create_options *options;
  size_t desc_size;
} kind_case;

static void body_create_describe_release(void *ctx, uint64_t n) {
  const kind_case *c = ctx;
  unsigned char out[512];
  for (uint64_t i = 0; i < n; i++) {
    gpures_handle h;
    CHECK(gpures_create(c->kind, c->desc, c->options, &h));
    CHECK(gpures_describe(h, out, (uint32_t)c->desc_size));
    CHECK(gpures_release(h));
  }
  sink += out[8];
}

static void body_describe(void *ctx, uint64_t n) {
  (void)ctx;
  gpures_vk_image_desc out;
  for (uint64_t i = 0; i < n; i++) gpures_describe(live_handle, &out, sizeof out);
  sink += out.image;
}

static void body_describe_json(void *ctx, uint64_t n) {
  (void)ctx;
  char json[1024];
  size_t length = 0;
  for (uint64_t i = 0; i < n; i++) gpures_describe_json(live_handle, json, sizeof json, &length);
  sink += length;
}

/* A frame: the CpuBytes handle over it, against copying it. */
typedef struct frame_case {
  unsigned char *data;
  unsigned char *copy;
  uint32_t width, height;
  uint64_t size;
} frame_case;

static void body_cpu_bytes(void *ctx, uint64_t n) {
  const frame_case *f = ctx;
  gpures_cpu_bytes_desc d = {sizeof d, 0, f->data, f->size, f->width * 4, GPURES_PF_RGBA_U8,
                             f->width, f->height};
  for (uint64_t i = 0; i < n; i++) {
    gpures_handle h;
    CHECK(gpures_create(GPURES_KIND_CPU_BYTES, &d, NULL, &h));
    CHECK(gpures_release(h));
  }
}

static void body_memcpy(void *ctx, uint64_t n) {
  const frame_case *f = ctx;
  for (uint64_t i = 0; i < n; i++) {
    memcpy(f->copy, f->data, f->size);
    __asm__ __volatile__("" : : "r"(f->copy) : "memory");
  }
}

/* ------------------------------------------------------ hand-off to a thread */

/*
** The native counterpart of handing a frame handle to a Worker: the main
** thread clones a handle and passes the raw value through a mailbox; the
** other thread adopts it, releases it and answers. Against that, passing the
** frame's bytes: the other thread copies them out of the mailbox's frame.
*/
typedef struct mailbox {
  _Atomic uint64_t request; /* a handle, or 1 for "copy the frame", 0 when empty */
  _Atomic uint64_t reply;
  _Atomic int stop;
  frame_case *frame;
} mailbox;

static void *handoff_thread(void *arg) {
  mailbox *m = arg;
  for (;;) {
    uint64_t v;
    while ((v = atomic_load_explicit(&m->request, memory_order_acquire)) == 0) {
      if (atomic_load_explicit(&m->stop, memory_order_relaxed)) return NULL;
      sched_yield();
    }
    atomic_store_explicit(&m->request, 0, memory_order_relaxed);
    if (v == 1) {
      memcpy(m->frame->copy, m->frame->data, m->frame->size);
    } else if (gpures_release(v) != GPURES_OK) {
      die("gpures_release in the hand-off thread", gpures_last_status());
    }
    atomic_store_explicit(&m->reply, 1, memory_order_release);
  }
}

static void handoff_round_trip(mailbox *m, uint64_t request) {
  atomic_store_explicit(&m->request, request, memory_order_release);
  while (!atomic_load_explicit(&m->reply, memory_order_acquire)) sched_yield();
  atomic_store_explicit(&m->reply, 0, memory_order_relaxed);
}

static void body_handoff_handle(void *ctx, uint64_t n) {
  mailbox *m = ctx;
  for (uint64_t i = 0; i < n; i++) {
    CHECK(gpures_clone(live_handle));
    handoff_round_trip(m, live_handle);
  }
}

static void body_handoff_bytes(void *ctx, uint64_t n) {
  mailbox *m = ctx;
  for (uint64_t i = 0; i < n; i++) handoff_round_trip(m, 1);
}

/* ------------------------------------------------------ contended clone/release */

#define CONTENDERS 8

typedef struct contender {
  pthread_barrier_t *start;
  uint64_t iterations;
} contender;

static void *contend(void *arg) {
  contender *c = arg;
  pthread_barrier_wait(c->start);
  for (uint64_t i = 0; i < c->iterations; i++) {
    if (gpures_clone(live_handle) != GPURES_OK) die("gpures_clone (contended)", -1);
    if (gpures_release(live_handle) != GPURES_OK) die("gpures_release (contended)", -1);
  }
  return NULL;
}

/* Wall time of CONTENDERS threads each doing `per_thread` clone+release pairs. */
static double contended_run(uint64_t per_thread) {
  pthread_t threads[CONTENDERS];
  contender cs[CONTENDERS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, CONTENDERS + 1);
  for (int t = 0; t < CONTENDERS; t++) {
    cs[t] = (contender){&start, per_thread};
    pthread_create(&threads[t], NULL, contend, &cs[t]);
  }
  pthread_barrier_wait(&start);
  double t0 = now_ns();
  for (int t = 0; t < CONTENDERS; t++) pthread_join(threads[t], NULL);
  double dt = now_ns() - t0;
  pthread_barrier_destroy(&start);
  return dt;
}

/* ---------------------------------------------------------------- machine */

/* Whether the space-separated `list` holds `word`. */
static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0)) return 1;
  return 0;
}

/* The CPU model and cores, and whether every system call flushes the TLB. */
static void machine(char *out, size_t cap) {
  char model[256] = "unknown CPU";
  int pti = 0, pcid = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    static char line[8192];
    int have_model = 0, have_flags = 0;
    while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
      char *colon = strchr(line, ':');
      if (!colon) continue;
      if (!have_model && strncmp(line, "model name", 10) == 0) {
        snprintf(model, sizeof model, "%s", colon + 2);
        model[strcspn(model, "\n")] = 0;
        have_model = 1;
      } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
        pti = has_word(colon + 1, "pti");
        pcid = has_word(colon + 1, "pcid");
        have_flags = 1;
      }
    }
    fclose(f);
  }
  snprintf(out, cap, "%s, %ld cores%s", model, sysconf(_SC_NPROCESSORS_ONLN),
           pti && !pcid ? " (page-table isolation without PCID: every system call flushes the TLB)"
                        : "");
}

static void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    putchar(*s);
  }
  putchar('"');
}

/* --------------------------------------------------------------------- main */

static unsigned char *frame_alloc(uint64_t size) {
  unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap", -1);
  memset(p, 0x5a, size); /* touch every page so no copy pays for page faults */
  return p;
}

int main(int argc, char **argv) {
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = 1;
    else if (strcmp(argv[i], "--quick") == 0) target_ms = 5.0, runs = 3;
    else {
      fprintf(stderr, "usage: %s [--json] [--quick]\n", argv[0]);
      return 2;
    }
  }
  if (gpures_abi_version() >> 16 != GPURES_ABI_MAJOR) die("ABI version check", GPURES_E_ABI_MISMATCH);

  /* ---- the floor and per-handle operations, on one live VkBufferHandle */
  gpures_vk_buffer_handle_desc vk_buffer = gpures_fixture_vk_buffer_handle();
  CHECK(gpures_create(GPURES_KIND_VK_BUFFER_HANDLE, &vk_buffer, NULL, &live_handle));
  record("floor", "empty call (gpures_abi_version)", measure(body_empty, NULL));
  record("floor", "empty call, one u64 arg (gpures_refcount)", measure(body_refcount, NULL));
  record("floor", "one system call (getppid)", measure(body_syscall, NULL));
  record("clone+release", "clone+release", measure(body_clone_release, NULL));

  /* ---- create + describe + release, one case per family */
  gpures_cpu_bytes_desc cpu = gpures_fixture_cpu_bytes();
  gpures_vk_image_desc vk_image = gpures_fixture_vk_image();
  gpures_gl_texture_handle_desc gl = gpures_fixture_gl_texture_handle();
  int memfd = -1; /* DmaBufHandle exists on Linux and Android only */
#if defined(__linux__)
  memfd = memfd_create("gpures-bench", MFD_CLOEXEC);
  if (memfd < 0 || ftruncate(memfd, GPURES_FIXTURE_DMA_BUF_HANDLE_ONE_OBJECT_FD0_SIZE) != 0)
    die("memfd_create", -1);
#endif
  gpures_dma_buf_handle_desc dma = gpures_fixture_dma_buf_handle_one_object(memfd);
  gpures_cuda_ptr_2d_desc cuda = gpures_fixture_cuda_ptr_2d();
  gpures_wgpu_texture_desc wgpu = gpures_fixture_wgpu_texture();
  kind_case kinds[] = {
      {"CpuBytes", GPURES_KIND_CPU_BYTES, &cpu, NULL, sizeof cpu},
      {"VkImage", GPURES_KIND_VK_IMAGE, &vk_image, NULL, sizeof vk_image},
      {"VkBufferHandle", GPURES_KIND_VK_BUFFER_HANDLE, &vk_buffer, NULL, sizeof vk_buffer},
      {"GlTextureHandle", GPURES_KIND_GL_TEXTURE_HANDLE, &gl, NULL, sizeof gl},
      {"DmaBufHandle", GPURES_KIND_DMA_BUF_HANDLE, &dma, NULL, sizeof dma},
      {"CudaPtr2D", GPURES_KIND_CUDA_PTR_2D, &cuda, NULL, sizeof cuda},
      {"WgpuTexture", GPURES_KIND_WGPU_TEXTURE, &wgpu, NULL, sizeof wgpu},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (gpures_kind_supported(kinds[i].kind))
      record("create+describe+release", kinds[i].name, measure(body_create_describe_release, &kinds[i]));

  /* ---- typed describe against JSON, on a VkImage */
  gpures_handle buffer_handle = live_handle;
  CHECK(gpures_create(GPURES_KIND_VK_IMAGE, &vk_image, NULL, &live_handle));
  record("describe", "typed describe (gpures_describe)", measure(body_describe, NULL));
  record("describe", "JSON describe (gpures_describe_json)", measure(body_describe_json, NULL));
  CHECK(gpures_release(live_handle));
  live_handle = buffer_handle;

  /* ---- CpuBytes over a frame against copying it */
  frame_case frames[] = {{NULL, NULL, 1920, 1080, 0}, {NULL, NULL, 3840, 2160, 0}};
  const char *frame_names[] = {"1080p", "4K"};
  for (int i = 0; i < 2; i++) {
    frame_case *f = &frames[i];
    f->size = (uint64_t)f->width * f->height * 4;
    f->data = frame_alloc(f->size);
    f->copy = frame_alloc(f->size);
    static char names[4][64];
    snprintf(names[i * 2], sizeof names[0], "CpuBytes create+release, %s RGBA", frame_names[i]);
    record("frame", names[i * 2], measure(body_cpu_bytes, f));
    snprintf(names[i * 2 + 1], sizeof names[0], "memcpy, %s RGBA", frame_names[i]);
    record("frame", names[i * 2 + 1], measure(body_memcpy, f));
  }

  /* ---- hand-off to another thread */
  mailbox m;
  atomic_init(&m.request, 0);
  atomic_init(&m.reply, 0);
  atomic_init(&m.stop, 0);
  m.frame = &frames[0];
  pthread_t other;
  pthread_create(&other, NULL, handoff_thread, &m);
  record("hand-off", "hand-off of a handle to a thread, round trip", measure(body_handoff_handle, &m));
  record("hand-off", "hand-off of a 1080p frame's bytes to a thread, round trip",
         measure(body_handoff_bytes, &m));
  atomic_store(&m.stop, 1);
  pthread_join(other, NULL);

  /* ---- 8 threads contending on one handle */
  uint64_t per_thread = 1000;
  while (contended_run(per_thread) < target_ms * 1e6 / 2 && per_thread < (1ull << 30)) per_thread *= 2;
  double samples[32];
  int count = runs < 32 ? runs : 32;
  for (int r = 0; r < count; r++) samples[r] = contended_run(per_thread);
  qsort(samples, (size_t)count, sizeof samples[0], cmp_double);
  double wall = samples[count / 2];
  record("contended", "8 threads clone+release one handle: wall time per pair",
         wall / (double)(per_thread * CONTENDERS));
  record("contended", "8 threads clone+release one handle: each thread's time per pair",
         wall / (double)per_thread);

  uint32_t refs = 0;
  CHECK(gpures_refcount(live_handle, &refs));
  if (refs != 1) die("refcount after the contended run is not 1", (int)refs);
  CHECK(gpures_release(live_handle));
  if (memfd >= 0) close(memfd);
  if (gpures_live_handles(0) != 0) die("live handles at the end", (int)gpures_live_handles(0));

  char where[320];
  machine(where, sizeof where);
  if (json) {
    printf("{\"machine\": ");
    json_string(where);
    printf(", \"results\": [");
    for (int i = 0; i < num_results; i++) {
      printf("%s\n  {\"group\": ", i ? "," : "");
      json_string(results[i].group);
      printf(", \"name\": ");
      json_string(results[i].name);
      printf(", \"ns\": %.3f}", results[i].ns);
    }
    printf("\n]}\n");
  } else {
    printf("gpures C benchmark on %s (median of %d runs)\n\n", where, runs);
    printf("%-26s %-62s %12s\n", "group", "operation", "ns/op");
    for (int i = 0; i < num_results; i++)
      printf("%-26s %-62s %12.1f\n", results[i].group, results[i].name, results[i].ns);
  }
  return 0;
}
