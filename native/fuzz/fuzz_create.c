/*
** fuzz_create.c: a libFuzzer target over create, clone, describe, JSON and
** release of every kind, from fuzzed descriptors.
**
** Build with clang (libFuzzer comes with libclang-rt-14-dev on Debian):
**   CC=clang cmake -S . -B build-fuzz -DGPURES_BUILD_FUZZ=ON && cmake --build build-fuzz -j2
** which compiles this file and the library's sources together with
** -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all. Run:
**   build-fuzz/fuzz_create -max_total_time=30 native/fuzz/corpus
**
** One input is one handle's life. Its first 16 bytes choose the kind, the
** options and the operations; the rest fill the kind's descriptor struct as
** raw bytes. Then the target fixes up only what must stay safe for the
** process that runs it (see fixup()): fd fields name memfds the target owns
** (or -1, or a number that is no open fd), never stdin/stdout/stderr, and
** with TAKE_OWNERSHIP they name fresh duplicates made for this input alone;
** a present slot-release gate points at the target's own 64-bit word. Every
** other field (sizes, counts, flags, enums, pointers, struct_size) stays as
** fuzzed, though a header bit can map enums to named values and drop unknown
** flag bits so that the fuzzer also reaches the paths behind validation.
** The seeds native/fuzz/corpus/fixture-* are every kind's valid descriptor
** (tools/fixtures.ts, written by tools/gen_fixtures.ts) with a header that
** asks for a full life: they start the fuzzer past validation.
**
** Besides the sanitizers' own reports, the target checks what gpures
** promises (SPEC sections 4-6) and aborts when a promise is broken:
**   - create either succeeds or fails with a status and a non-empty message;
**     a failed create leaves the caller's fds open and posts no event;
**   - refcount, kind and describe agree with what was done;
**   - the JSON is well formed, NUL-terminated, and BUFFER_TOO_SMALL reports
**     the length it needs;
**   - a described descriptor is accepted by create again;
**   - a forged handle value (the live one with bits flipped) is never
**     accepted by clone, release or describe, and changes no count;
**   - per-kind entry points refuse a handle of another kind;
**   - the last release runs the keep-alive exactly once, posts exactly one
**     RELEASED event after the MARK_CONSUMED ones, closes every fd the handle
**     owned, and leaves no live handle behind.
**
** native/tests/test_regressions.c includes this file (with its own
** FUZZ_FAIL) and replays native/fuzz/regressions/: the inputs that once broke
** one of these rules. docs/reliability.md has the runs and what they found.
*/
#define FUZZ_NAME "fuzz_create"
#include "fuzz.h"

/* ---------------------------------------------------------- per-kind calls */

typedef struct fuzz_kind_api {
  int (*create)(const void *desc, const gpures_create_options *options, gpures_handle *out);
  int (*clone)(gpures_handle h);
  int (*describe)(gpures_handle h, void *out);
  int (*release)(gpures_handle h);
} fuzz_kind_api;

#define FUZZ_WRAP(id, UPPER, snake, Name, own, os)                                               \
  static int fuzz_create_##snake(const void *d, const gpures_create_options *o,                  \
                                 gpures_handle *out) {                                           \
    return gpures_##snake##_create((const gpures_##snake##_desc *)d, o, out);                    \
  }                                                                                              \
  static int fuzz_describe_##snake(gpures_handle h, void *out) {                                 \
    return gpures_##snake##_describe(h, (gpures_##snake##_desc *)out);                           \
  }
GPURES_EVERY_KIND_LIST(FUZZ_WRAP)
#undef FUZZ_WRAP

static const fuzz_kind_api fuzz_apis[GPURES_KIND_MAX + 1] = {
#define FUZZ_API_ROW(id, UPPER, snake, Name, own, os)                                            \
  [id] = {fuzz_create_##snake, gpures_##snake##_clone, fuzz_describe_##snake, gpures_##snake##_release},
    GPURES_EVERY_KIND_LIST(FUZZ_API_ROW)
#undef FUZZ_API_ROW
};

/* ----------------------------------------------------------------- state */

enum { FUZZ_DESC_MAX = 512 }; /* room for a "newer" struct: more bytes than the library knows */

static struct {
  int ready;
  int small_fd, big_fd, empty_fd, pipe_fds[2]; /* the target's own fds; gpures only duplicates them */
  uint32_t queue;
  uint64_t token;
  _Alignas(8) unsigned char gate_words[16]; /* word 0: the gate; +1 byte: a misaligned one */
} fz;

static void fuzz_setup(void) {
  if (fz.ready) return;
  fz.small_fd = make_memfd(4096, 1);
  fz.big_fd = make_memfd(1 << 20, 1);
  fz.empty_fd = make_memfd(0, 1);
  if (pipe2(fz.pipe_fds, O_CLOEXEC) != 0) abort();
  if (gpures_event_queue_open(&fz.queue) != GPURES_OK) abort();
  fz.ready = 1;
}

/* Closes what fuzz_setup() opened (the C tests that replay inputs call it at the end). */
void fuzz_teardown(void);
void fuzz_teardown(void) {
  if (!fz.ready) return;
  close(fz.small_fd);
  close(fz.big_fd);
  close(fz.empty_fd);
  close(fz.pipe_fds[0]);
  close(fz.pipe_fds[1]);
  gpures_event_queue_close(fz.queue);
  fz.ready = 0;
}


/* ------------------------------------------------------------- the input */

/* Header bytes. */
enum {
  H_KIND, H_OPTIONS, H_OPS, H_JSON_CAP, H_OUT_SIZE, H_MISC,
  H_FORGE, /* 8 bytes: xor mask of the forged handle */
  H_STRUCT_SIZE = H_FORGE + 8, /* 2 bytes: a raw struct_size */
  H_SIZE = H_STRUCT_SIZE + 2
};

/* H_OPTIONS bits */
#define O_TAKE_OWNERSHIP 0x01u
#define O_KEEP_ALIVE 0x02u
#define O_EVENT_QUEUE 0x04u
#define O_NO_OPTIONS 0x08u
#define O_RAW_STRUCT_SIZE 0x10u
#define O_SANITIZE 0x20u /* enums to named values, only known flag bits */
#define O_PER_KIND 0x40u
#define O_RAW_OPTION_FLAGS 0x80u

/* H_OPS bits */
#define P_CLONES 0x03u
#define P_MARK_CONSUMED 0x04u
#define P_SLOT_RELEASE 0x08u
#define P_DUP_FD 0x10u
#define P_FORGE 0x20u
#define P_RECREATE 0x40u
#define P_WRONG_KIND 0x80u

/* The kind an input names: 1..20 mostly, sometimes an id that names none. */
static uint32_t fuzz_kind_of(uint8_t b) { return b < 240 ? 1u + b % 20u : (b == 255 ? 0u : b - 240u + 21u); }

static uint64_t get_le(const unsigned char *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void put_u32(unsigned char *desc, uint32_t offset, uint32_t v) { memcpy(desc + offset, &v, 4); }
static uint32_t read_u32(const unsigned char *desc, uint32_t offset) {
  uint32_t v;
  memcpy(&v, desc + offset, 4);
  return v;
}

typedef struct fresh_fds {
  int fd[8];
  int n;
} fresh_fds;

/* With TAKE_OWNERSHIP: a new fd of one of ours, made for this input only. */
static int fresh_dup(fresh_fds *fresh, int of) {
  int fd = fcntl(of, F_DUPFD, 3); /* without FD_CLOEXEC, so adopting has to set it */
  if (fd < 0) abort();
  fresh->fd[fresh->n++] = fd;
  return fd;
}

/* What the fuzzed low bits of an fd field name. */
static int32_t pick_fd(uint32_t raw, int adopt, fresh_fds *fresh) {
  static const int32_t invalid[] = {-1, INT32_MIN, 1 << 20 /* no open fd */, INT32_MAX};
  uint32_t sel = raw & 7u;
  int ours[4] = {fz.small_fd, fz.big_fd, fz.empty_fd, fz.pipe_fds[0]};
  if (sel >= 4 && sel < 7) return invalid[(raw >> 3) % 4u];
  if (sel == 7) { /* the same fresh fd again (one fd named twice), else the small memfd */
    if (adopt && fresh->n) return fresh->fd[fresh->n - 1];
    sel = 0;
  }
  return adopt ? fresh_dup(fresh, ours[sel]) : ours[sel];
}

/* Makes the fuzzed descriptor safe for this process (see the top of the file). */
static void fixup(uint32_t kind, unsigned char *desc, uint32_t desc_len, uint8_t options,
                  fresh_fds *fresh) {
  uint32_t n_rows = 0;
  const gpures_field_info *rows = gpures_kind_fields(kind, &n_rows);
  if (!rows) return;
  uint32_t known_flags = 0;
  for (uint32_t r = 0; r < n_rows; r++) known_flags |= rows[r].present_bit;
  if (options & O_SANITIZE) put_u32(desc, 4, read_u32(desc, 4) & known_flags);
  uint32_t enum_count = 0;
  const gpures_enum_value *enums = gpures_enum_table(&enum_count);
  for (uint32_t r = 0; r < n_rows; r++) {
    const gpures_field_info *f = &rows[r];
    for (uint32_t i = 0; i < f->count; i++) {
      uint32_t at = f->offset + i * f->stride;
      if (at + f->size > desc_len) break;
      if (f->type == GPURES_FIELD_FD) {
        put_u32(desc, at, (uint32_t)pick_fd(read_u32(desc, at), options & O_TAKE_OWNERSHIP, fresh));
      } else if (f->type == GPURES_FIELD_ENUM && (options & O_SANITIZE)) {
        uint32_t raw = read_u32(desc, at), n = 0, first = 0;
        for (uint32_t e = 0; e < enum_count; e++)
          if (enums[e].set == f->enum_set && n++ == 0) first = e;
        if (n) put_u32(desc, at, enums[first + raw % n].value);
      } else if ((options & O_SANITIZE) && kind == GPURES_KIND_DMA_BUF_HANDLE &&
                 strcmp(f->path, "fourcc") == 0) {
        /* a fourcc gpures knows, so that the plane checks of linear layouts run */
        uint32_t raw = read_u32(desc, at), n = 0, count = 0;
        const gpures_pixel_format_info *formats = gpures_pixel_format_table(&count);
        for (uint32_t e = 0; e < count; e++) n += formats[e].drm_fourcc != 0;
        for (uint32_t e = 0, pick = n ? raw % n : 0; e < count && n; e++)
          if (formats[e].drm_fourcc && pick-- == 0) put_u32(desc, at, formats[e].drm_fourcc);
      } else if ((options & O_SANITIZE) && kind == GPURES_KIND_DMA_BUF_HANDLE &&
                 strcmp(f->path, "modifier") == 0) {
        uint64_t raw;
        memcpy(&raw, desc + at, 8);
        if ((raw & 3u) != 3u) raw = (raw & 3u) == 2u ? 0x00ffffffffffffffull /* INVALID */ : 0;
        memcpy(desc + at, &raw, 8);
      } else if (f->type == GPURES_FIELD_PTR && strcmp(f->path, "slotRelease.gate") == 0) {
        uint64_t raw;
        memcpy(&raw, desc + at, 8);
        void *gate = (raw & 3u) == 3u ? (void *)(fz.gate_words + 1) /* misaligned */
                     : (raw & 3u) == 2u ? NULL
                                        : (void *)fz.gate_words;
        memcpy(desc + at, &gate, sizeof gate);
      }
    }
  }
}

/* ------------------------------------------------------------------- JSON */

/* A strict JSON checker: 1 when [*p, end) starts with one well-formed value. */
static int json_value(const char **p, const char *end, int depth);

static void json_ws(const char **p, const char *end) {
  while (*p < end && (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r')) (*p)++;
}

static int json_string(const char **p, const char *end) {
  if (*p >= end || **p != '"') return 0;
  for ((*p)++; *p < end; (*p)++) {
    unsigned char c = (unsigned char)**p;
    if (c == '"') {
      (*p)++;
      return 1;
    }
    if (c < 0x20) return 0;
    if (c == '\\') {
      (*p)++;
      if (*p >= end) return 0;
      if (**p == 'u') {
        for (int k = 0; k < 4; k++) {
          (*p)++;
          if (*p >= end || !strchr("0123456789abcdefABCDEF", **p)) return 0;
        }
      } else if (!strchr("\"\\/bfnrt", **p)) {
        return 0;
      }
    }
  }
  return 0;
}

static int json_number(const char **p, const char *end) {
  const char *s = *p;
  if (*p < end && **p == '-') (*p)++;
  if (*p >= end || **p < '0' || **p > '9') return 0;
  if (**p == '0') (*p)++;
  else while (*p < end && **p >= '0' && **p <= '9') (*p)++;
  return *p > s;
}

static int json_value(const char **p, const char *end, int depth) {
  if (depth > 16) return 0;
  json_ws(p, end);
  if (*p >= end) return 0;
  char c = **p;
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    (*p)++;
    json_ws(p, end);
    if (*p < end && **p == close) {
      (*p)++;
      return 1;
    }
    for (;;) {
      if (c == '{') {
        json_ws(p, end);
        if (!json_string(p, end)) return 0;
        json_ws(p, end);
        if (*p >= end || **p != ':') return 0;
        (*p)++;
      }
      if (!json_value(p, end, depth + 1)) return 0;
      json_ws(p, end);
      if (*p < end && **p == ',') {
        (*p)++;
        continue;
      }
      if (*p < end && **p == close) {
        (*p)++;
        return 1;
      }
      return 0;
    }
  }
  if (c == '"') return json_string(p, end);
  if (c == '-' || (c >= '0' && c <= '9')) return json_number(p, end);
  static const char *words[] = {"true", "false", "null"};
  for (int w = 0; w < 3; w++) {
    size_t n = strlen(words[w]);
    if ((size_t)(end - *p) >= n && memcmp(*p, words[w], n) == 0) {
      *p += n;
      return 1;
    }
  }
  return 0;
}

/* The JSON of a live handle, checked; its refcount must be `refcount`. */
static void check_json(gpures_handle h, uint32_t kind, uint32_t refcount, uint8_t cap_byte) {
  char full[4096];
  size_t length = 0;
  int status = gpures_describe_json(h, full, sizeof full, &length);
  FUZZ_EXPECT(status == GPURES_OK, "describe_json: %d", status);
  FUZZ_EXPECT(length < sizeof full && strlen(full) == length, "JSON length %zu", length);
  const char *p = full;
  FUZZ_EXPECT(json_value(&p, full + length, 0), "malformed JSON: %s", full);
  json_ws(&p, full + length);
  FUZZ_EXPECT(p == full + length, "trailing bytes after the JSON: %s", full);
  char head[160];
  const gpures_kind_info *info = gpures_kind_info_of(kind);
  snprintf(head, sizeof head, "{\"kind\":\"%s\",\"kindId\":%u,\"refcount\":%u", info->name, kind,
           refcount);
  FUZZ_EXPECT(strncmp(full, head, strlen(head)) == 0, "JSON %s does not begin %s", full, head);

  /* A short buffer: BUFFER_TOO_SMALL, the same length, a NUL-terminated prefix. */
  size_t cap = cap_byte == 255 ? length + 1 : (size_t)cap_byte * 2u;
  char *small = cap ? malloc(cap) : NULL; /* exactly cap bytes, so ASan sees any overrun */
  size_t small_length = 0;
  status = gpures_describe_json(h, small, cap, &small_length);
  FUZZ_EXPECT(small_length == length, "length %zu with capacity %zu, %zu with room", small_length,
              cap, length);
  if (cap > length) {
    FUZZ_EXPECT(status == GPURES_OK && strcmp(small, full) == 0, "JSON with capacity %zu", cap);
  } else {
    FUZZ_EXPECT(status == GPURES_E_BUFFER_TOO_SMALL, "capacity %zu of %zu: %d", cap, length,
                status);
    if (cap) FUZZ_EXPECT(strlen(small) == cap - 1 && memcmp(small, full, cap - 1) == 0,
                         "truncated JSON is not a prefix");
  }
  free(small);
  FUZZ_EXPECT(gpures_describe_json(h, NULL, 0, &small_length) == GPURES_E_BUFFER_TOO_SMALL &&
                  small_length == length,
              "describe_json(NULL, 0) must report the length");
}

/* ----------------------------------------------------------- keep-alives */

typedef struct fuzz_probe {
  int releases, consumed;
} fuzz_probe;
static void probe_release(void *ctx) { ((fuzz_probe *)ctx)->releases++; }
static void probe_consumed(void *ctx) { ((fuzz_probe *)ctx)->consumed++; }

/* The handle's owned fds (used elements of its FD rows), from a described copy. */
static int owned_fds(uint32_t kind, const unsigned char *desc, int *out) {
  uint32_t n_rows = 0, n = 0;
  const gpures_field_info *rows = gpures_kind_fields(kind, &n_rows);
  for (uint32_t r = 0; r < n_rows; r++) {
    const gpures_field_info *f = &rows[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t used = f->count_offset ? read_u32(desc, f->count_offset) : 1;
    if (used > f->count) used = f->count;
    for (uint32_t i = 0; i < used; i++) out[n++] = (int)read_u32(desc, f->offset + i * f->stride);
  }
  return (int)n;
}

static uint32_t refcount_of(gpures_handle h) {
  uint32_t n = 0;
  return gpures_refcount(h, &n) == GPURES_OK ? n : 0;
}

/* ---------------------------------------------------------- pixel formats */

/* The pixel-format arithmetic create relies on, over fuzzed formats and extents. */
static void fuzz_pixel_formats(const uint8_t *body, size_t size) {
  if (size < 20) return;
  uint32_t format = (uint32_t)get_le(body, 4) % 64u, plane = (uint32_t)get_le(body + 4, 4) % 6u;
  uint32_t width = (uint32_t)get_le(body + 8, 4), height = (uint32_t)get_le(body + 12, 4);
  uint32_t row_pitch = (uint32_t)get_le(body + 16, 4);
  const gpures_pixel_format_info *info = gpures_pixel_format_info_of(format);
  uint32_t w = 0, h = 0;
  uint64_t bytes = 0, pitch = 0, frame = 0;
  int known = info && plane < info->num_planes;
  int status = gpures_pixel_format_plane_extent(format, plane, width, height, &w, &h);
  FUZZ_EXPECT((status == GPURES_OK) == known, "plane_extent(%u, %u): %d", format, plane, status);
  if (known) FUZZ_EXPECT(w <= width && h <= height && (!width || w) && (!height || h),
                         "plane %u of %ux%u is %ux%u", plane, width, height, w, h);
  status = gpures_pixel_format_row_bytes(format, plane, width, &bytes);
  FUZZ_EXPECT((status == GPURES_OK) == known, "row_bytes: %d", status);
  status = gpures_pixel_format_plane_pitch(format, plane, row_pitch, &pitch);
  FUZZ_EXPECT((status == GPURES_OK) == known, "plane_pitch: %d", status);
  status = gpures_pixel_format_frame_size(format, width, height, row_pitch, &frame);
  if (status == GPURES_OK && known && plane == 0)
    FUZZ_EXPECT(frame >= (uint64_t)row_pitch * h || frame == UINT64_MAX,
                "frame of %llu bytes below plane 0's", (unsigned long long)frame);
}

/* ------------------------------------------------------------ the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  if (size < H_SIZE) return 0;
  const uint8_t *head = data;
  const uint8_t *body = data + H_SIZE;
  size_t body_size = size - H_SIZE;
  uint32_t kind = fuzz_kind_of(head[H_KIND]);
  uint8_t options = head[H_OPTIONS], ops = head[H_OPS];
  const gpures_kind_info *info = gpures_kind_info_of(kind);
  uint32_t own_size = info ? info->desc_size : 64;
  int adopt = (options & O_TAKE_OWNERSHIP) && !(options & O_NO_OPTIONS);

  /* The descriptor: exactly struct_size bytes (the library reads that many). */
  uint32_t struct_size = own_size;
  if ((options & O_RAW_STRUCT_SIZE) && !adopt) /* a short struct would zero the fds: fd 0 */
    struct_size = (uint32_t)get_le(head + H_STRUCT_SIZE, 2) % (FUZZ_DESC_MAX + 1);
  uint32_t desc_len = struct_size < 8 ? 8 : struct_size;
  unsigned char *desc = calloc(1, desc_len);
  if (!desc) abort();
  memcpy(desc, body, body_size < desc_len ? body_size : desc_len);
  if (!(options & O_RAW_STRUCT_SIZE) || adopt) {
    /* bytes past the struct the library knows: zero, as a newer caller built by an older header */
    if (desc_len > own_size) memset(desc + own_size, 0, desc_len - own_size);
  }
  put_u32(desc, 0, struct_size);
  fresh_fds fresh = {{0}, 0};
  if (info) fixup(kind, desc, desc_len < own_size ? desc_len : own_size, options, &fresh);

  fuzz_probe probe = {0, 0};
  /* The options, in a larger zeroed buffer: their struct_size may be fuzzed too. */
  union {
    gpures_create_options o;
    unsigned char bytes[64];
  } ob;
  memset(&ob, 0, sizeof ob);
  gpures_create_options *opts = &ob.o;
  opts->struct_size = sizeof *opts;
  if (adopt) opts->flags |= GPURES_CREATE_TAKE_OWNERSHIP;
  int raw_options_size = (options & O_RAW_OPTION_FLAGS) && (head[H_MISC] & 0x30u) == 0x30u;
  if ((options & O_RAW_OPTION_FLAGS) && !raw_options_size)
    opts->flags = (uint32_t)head[H_MISC] << 24 | (opts->flags & 1u);
  if (options & O_KEEP_ALIVE) {
    opts->keep_alive.ctx = &probe;
    opts->keep_alive.release = probe_release;
    opts->keep_alive.mark_consumed = probe_consumed;
  }
  uint64_t token = ++fz.token;
  if (options & O_EVENT_QUEUE) {
    opts->event_queue = fz.queue;
    opts->event_token = token;
    if ((head[H_MISC] & 0xc0u) == 0xc0u) /* a queue id that is not open, mostly */
      opts->event_queue = (uint32_t)get_le(head + H_FORGE, 4);
  }
  if (raw_options_size) opts->struct_size = head[H_OUT_SIZE] % sizeof ob;
  const gpures_create_options *opts_arg = (options & O_NO_OPTIONS) ? NULL : opts;
  /* What the library sees of them: the fields wholly inside struct_size (an older caller's). */
  gpures_create_options seen;
  memset(&seen, 0, sizeof seen);
  if (opts_arg) {
    memcpy(&seen, opts, sizeof seen);
    if (opts->struct_size < sizeof seen)
      memset((unsigned char *)&seen + opts->struct_size, 0, sizeof seen - opts->struct_size);
  }
  int keep = seen.keep_alive.release != NULL, keep_consumed = seen.keep_alive.mark_consumed != NULL;
  token = seen.event_token;

  if (head[H_MISC] & 0x08u) fuzz_pixel_formats(body, body_size);
  uint64_t live_before = gpures_live_handles(0);
  gpures_handle h = 0xdeadbeef;
  int status = (options & O_PER_KIND) && kind >= 1 && kind <= GPURES_KIND_MAX
                   ? fuzz_apis[kind].create(desc, opts_arg, &h)
                   : gpures_create(kind, desc, opts_arg, &h);
  uint32_t pending = gpures_event_queue_pending(fz.queue);

  if (status != GPURES_OK) {
    FUZZ_EXPECT(gpures_status_name(status) != NULL, "unknown status %d", status);
    FUZZ_EXPECT(h == 0, "a failed create left handle 0x%llx", (unsigned long long)h);
    FUZZ_EXPECT(gpures_last_status() == status && gpures_last_error()[0] != '\0',
                "a failed create must say why");
    FUZZ_EXPECT(gpures_live_handles(0) == live_before, "a failed create changed the live count");
    FUZZ_EXPECT(pending == 0, "a failed create posted %u events", pending);
    FUZZ_EXPECT(probe.releases == 0, "a failed create ran the keep-alive");
    for (int i = 0; i < fresh.n; i++) {
      FUZZ_EXPECT(fd_is_open(fresh.fd[i]), "a failed create closed the caller's fd %d", fresh.fd[i]);
      close(fresh.fd[i]);
    }
    free(desc);
    return 0;
  }
  FUZZ_EXPECT(h != 0, "create returned OK and handle 0");
  FUZZ_EXPECT(gpures_live_handles(0) == live_before + 1, "live count after create");

  /* What the handle holds. */
  _Alignas(8) unsigned char held[FUZZ_DESC_MAX];
  memset(held, 0xa5, sizeof held);
  FUZZ_EXPECT(gpures_describe(h, held, sizeof held) == GPURES_OK, "describe of a live handle");
  FUZZ_EXPECT(read_u32(held, 0) == own_size, "described struct_size %u", read_u32(held, 0));
  for (uint32_t i = own_size; i < sizeof held; i++)
    FUZZ_EXPECT(held[i] == 0xa5, "describe must not write past the struct (byte %u)", i);
  int handle_fds[8];
  int n_handle_fds = owned_fds(kind, held, handle_fds);
  for (int i = 0; i < n_handle_fds; i++) {
    int fd = handle_fds[i];
    FUZZ_EXPECT(fd > 2 && fd_is_open(fd) && (fcntl(fd, F_GETFD) & FD_CLOEXEC),
                "the handle's fd %d must be open, close-on-exec, not stdio", fd);
  }
  /* Fresh fds the handle adopted are its own now; the rest stay ours. */
  for (int i = 0; i < fresh.n; i++) {
    int taken = 0;
    for (int j = 0; j < n_handle_fds; j++) taken |= handle_fds[j] == fresh.fd[i];
    if (!taken) close(fresh.fd[i]);
    else fresh.fd[i] = -1 - fresh.fd[i]; /* remember it: it must be closed by the last release */
  }
  uint32_t k = 0;
  FUZZ_EXPECT(gpures_kind(h, &k) == GPURES_OK && k == kind, "gpures_kind: %u, not %u", k, kind);
  FUZZ_EXPECT(refcount_of(h) == 1, "refcount after create: %u", refcount_of(h));

  /* describe into a caller buffer of a fuzzed size, exactly that big. */
  uint32_t out_size = head[H_OUT_SIZE];
  unsigned char *out = malloc(out_size ? out_size : 1);
  status = gpures_describe(h, out_size ? out : NULL, out_size);
  if (out_size < 8) {
    FUZZ_EXPECT(status == GPURES_E_BUFFER_TOO_SMALL, "describe into %u bytes: %d", out_size, status);
  } else {
    uint32_t n = out_size < own_size ? out_size : own_size;
    FUZZ_EXPECT(status == GPURES_OK && read_u32(out, 0) == n && memcmp(out + 4, held + 4, n - 4) == 0,
                "describe into %u bytes", out_size);
  }
  free(out);
  if (kind <= GPURES_KIND_MAX) {
    _Alignas(8) unsigned char typed[FUZZ_DESC_MAX];
    memset(typed, 0, sizeof typed);
    put_u32(typed, 0, own_size);
    FUZZ_EXPECT(fuzz_apis[kind].describe(h, typed) == GPURES_OK &&
                    memcmp(typed, held, own_size) == 0,
                "the per-kind describe differs from describe");
  }

  /* Clones. */
  uint32_t clones = ops & P_CLONES;
  for (uint32_t i = 0; i < clones; i++) {
    status = (options & O_PER_KIND) ? fuzz_apis[kind].clone(h) : gpures_clone(h);
    FUZZ_EXPECT(status == GPURES_OK, "clone: %d", status);
  }
  uint32_t refs = 1 + clones;
  FUZZ_EXPECT(refcount_of(h) == refs, "refcount %u after %u clones", refcount_of(h), clones);
  check_json(h, kind, refs, head[H_JSON_CAP]);

  int consumed = 0;
  if (ops & P_MARK_CONSUMED) {
    FUZZ_EXPECT(gpures_mark_consumed(h) == GPURES_OK, "mark_consumed");
    consumed = 1;
    FUZZ_EXPECT(probe.consumed == keep_consumed, "mark_consumed ran %d times",
                probe.consumed);
  }
  if (ops & P_SLOT_RELEASE) {
    memset(fz.gate_words, 0, sizeof fz.gate_words);
    status = gpures_slot_release(h);
    int has = kind == GPURES_KIND_VK_IMAGE || kind == GPURES_KIND_VK_OPAQUE_FD;
    FUZZ_EXPECT(status == (has ? GPURES_OK : GPURES_E_WRONG_KIND), "slot_release: %d", status);
    if (has && (read_u32(held, 4) & GPURES_HAS_SLOT_RELEASE)) {
      uint64_t want, got;
      size_t at = kind == GPURES_KIND_VK_IMAGE ? offsetof(gpures_vk_image_desc, slot_release)
                                               : offsetof(gpures_vk_opaque_fd_desc, slot_release);
      memcpy(&want, held + at + sizeof(void *), 8);
      memcpy(&got, fz.gate_words, 8);
      FUZZ_EXPECT(got == want, "the gate holds %llu, not %llu", (unsigned long long)got,
                  (unsigned long long)want);
    }
  }
  if (ops & P_DUP_FD) {
    uint32_t index = (head[H_MISC] & 7u) % 5u;
    int fd = -7;
    status = gpures_dup_fd(h, index, &fd);
    if (n_handle_fds == 0) {
      FUZZ_EXPECT(status == GPURES_E_WRONG_KIND && fd == -1, "dup_fd of a kind without fds: %d", status);
    } else if ((int)index >= n_handle_fds) {
      FUZZ_EXPECT(status == GPURES_E_INVALID_VALUE && fd == -1, "dup_fd(%u) of %d fds", index,
                  n_handle_fds);
    } else {
      FUZZ_EXPECT(status == GPURES_OK && fd > 2 && fd != handle_fds[index] &&
                      (fcntl(fd, F_GETFD) & FD_CLOEXEC),
                  "dup_fd(%u): %d, fd %d", index, status, fd);
      close(fd);
    }
  }
  if (ops & P_FORGE) {
    uint64_t mask = get_le(head + H_FORGE, 8);
    gpures_handle forged = h ^ mask;
    if (forged != h) {
      uint32_t n = 0;
      char json[8];
      size_t length = 0;
      _Alignas(8) unsigned char sink[FUZZ_DESC_MAX];
      FUZZ_EXPECT(gpures_clone(forged) != GPURES_OK, "clone of forged 0x%llx (of 0x%llx) succeeded",
                  (unsigned long long)forged, (unsigned long long)h);
      FUZZ_EXPECT((gpures_release(forged) == GPURES_OK) == (forged == 0), /* release(0): no-op */
                  "release of forged 0x%llx: wrong status", (unsigned long long)forged);
      FUZZ_EXPECT(gpures_refcount(forged, &n) != GPURES_OK, "refcount of a forged handle");
      FUZZ_EXPECT(gpures_describe(forged, sink, sizeof sink) != GPURES_OK, "describe of forged");
      FUZZ_EXPECT(gpures_describe_json(forged, json, sizeof json, &length) != GPURES_OK,
                  "describe_json of forged");
      FUZZ_EXPECT(gpures_mark_consumed(forged) != GPURES_OK, "mark_consumed of forged");
      FUZZ_EXPECT(refcount_of(h) == refs, "a forged value changed the real refcount");
    }
  }
  if (ops & P_WRONG_KIND) {
    uint32_t other = kind % GPURES_KIND_MAX + 1;
    _Alignas(8) unsigned char sink[FUZZ_DESC_MAX];
    memset(sink, 0, sizeof sink);
    put_u32(sink, 0, gpures_kind_info_of(other)->desc_size);
    FUZZ_EXPECT(fuzz_apis[other].clone(h) == GPURES_E_WRONG_KIND, "clone as %u", other);
    FUZZ_EXPECT(fuzz_apis[other].release(h) == GPURES_E_WRONG_KIND, "release as %u", other);
    FUZZ_EXPECT(fuzz_apis[other].describe(h, sink) == GPURES_E_WRONG_KIND, "describe as %u", other);
    FUZZ_EXPECT(refcount_of(h) == refs, "a wrong-kind call changed the refcount");
  }
  if (ops & P_RECREATE) {
    /* What describe gives is a descriptor create accepts (duplicating the handle's fds). */
    gpures_handle again = 0;
    status = gpures_create(kind, held, NULL, &again);
    FUZZ_EXPECT(status == GPURES_OK, "create from the described descriptor: %d", status);
    if (status == GPURES_OK) {
      _Alignas(8) unsigned char copy[FUZZ_DESC_MAX];
      memset(copy, 0, sizeof copy);
      FUZZ_EXPECT(gpures_describe(again, copy, sizeof copy) == GPURES_OK, "describe of the copy");
      int copy_fds[8];
      int n_copy = owned_fds(kind, copy, copy_fds);
      for (int i = 0; i < n_handle_fds; i++) { /* the copy has fds of its own, else the same bytes */
        FUZZ_EXPECT(copy_fds[i] != handle_fds[i], "the copy shares fd %d", handle_fds[i]);
      }
      FUZZ_EXPECT(n_copy == n_handle_fds, "the copy has %d fds, not %d", n_copy, n_handle_fds);
      FUZZ_EXPECT(gpures_release(again) == GPURES_OK, "release of the copy");
      for (int i = 0; i < n_copy; i++)
        FUZZ_EXPECT(fd_is_closed(copy_fds[i]), "the copy's fd %d outlived it", copy_fds[i]);
    }
  }

  /* Release every reference; the last one ends it all, exactly once. */
  for (uint32_t i = 0; i < refs; i++) {
    FUZZ_EXPECT(probe.releases == 0, "keep-alive ran with %u references left", refs - i);
    status = (options & O_PER_KIND) ? fuzz_apis[kind].release(h) : gpures_release(h);
    FUZZ_EXPECT(status == GPURES_OK, "release %u of %u: %d", i + 1, refs, status);
  }
  FUZZ_EXPECT(probe.releases == keep, "keep-alive ran %d times",
              probe.releases);
  FUZZ_EXPECT(gpures_release(h) == GPURES_E_STALE, "release after the last");
  FUZZ_EXPECT(gpures_clone(h) == GPURES_E_STALE, "clone after the last release");
  FUZZ_EXPECT(gpures_live_handles(0) == live_before, "live count after the last release");
  for (int i = 0; i < n_handle_fds; i++)
    FUZZ_EXPECT(fd_is_closed(handle_fds[i]), "fd %d outlived its handle", handle_fds[i]);
  for (int i = 0; i < fresh.n; i++)
    if (fresh.fd[i] < 0) FUZZ_EXPECT(fd_is_closed(-1 - fresh.fd[i]), "an adopted fd outlived its handle");

  gpures_event events[4];
  uint32_t n_events = 0;
  FUZZ_EXPECT(gpures_event_queue_poll(fz.queue, events, 4, &n_events) == GPURES_OK, "poll");
  if (seen.event_queue && seen.event_queue == fz.queue) {
    FUZZ_EXPECT(n_events == (uint32_t)consumed + 1, "%u events, not %d", n_events, consumed + 1);
    for (uint32_t i = 0; i < n_events; i++) {
      uint32_t type = i + 1 == n_events ? GPURES_EVENT_RELEASED : GPURES_EVENT_MARK_CONSUMED;
      FUZZ_EXPECT(events[i].token == token && events[i].type == type, "event %u", i);
    }
  } else {
    FUZZ_EXPECT(n_events == 0, "%u events without a queue", n_events);
  }
  free(desc);
  return 0;
}
