/*
** caps.c: capability rows and the negotiation between a producer's and a
** consumer's. A row says one format in one modifier can travel in some kinds
** of memory; the producer lists its rows in its order of preference, and the
** first one the consumer also takes wins, in the memory that copies least.
*/
#include <stdio.h>
#include <string.h>

#include "interop.h"

int gpures__caps_args(gpures__op op, const gpures_format_cap *out, uint32_t capacity,
                      const uint32_t *out_count) {
  if (!out_count) return gpures__fail(op, GPURES_E_NULL_POINTER, "outCount", "outCount is null");
  if (!out && capacity)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null with capacity %u", capacity);
  return GPURES_OK;
}

void gpures__caps_put(gpures_format_cap *out, uint32_t capacity, uint32_t *count,
                      const gpures_format_cap *cap) {
  if (out && *count < capacity) out[*count] = *cap;
  (*count)++;
}

void gpures__caps_every_format(const gpures_format_cap *like, gpures_format_cap *out,
                               uint32_t capacity, uint32_t *count) {
  uint32_t n = 0;
  const gpures_pixel_format_info *formats = gpures_pixel_format_table(&n);
  for (uint32_t i = 0; i < n; i++) {
    if (!formats[i].drm_fourcc) continue;
    gpures_format_cap cap = *like;
    cap.format = formats[i].id;
    gpures__caps_put(out, capacity, count, &cap);
  }
}

int gpures__caps_end(gpures__op op, uint32_t capacity, uint32_t count, uint32_t *out_count) {
  *out_count = count;
  if (count <= capacity) return GPURES_OK;
  return gpures__fail(op, GPURES_E_BUFFER_TOO_SMALL, "capacity",
                      "%u rows do not fit in capacity %u", count, capacity);
}

int gpures_caps_pool(gpures_format_cap *out, uint32_t capacity, uint32_t *out_count) {
  gpures__op op = {"list the capabilities of", 0};
  int status = gpures__caps_args(op, out, capacity, out_count);
  if (status != GPURES_OK) return status;
  const gpures_format_cap like = {0, GPURES_MEMORY_DMA_BUF | GPURES_MEMORY_HOST,
                                  GPURES_MODIFIER_LINEAR, 0, 0, 1, 0};
  uint32_t count = 0;
  gpures__caps_every_format(&like, out, capacity, &count);
  return gpures__caps_end(op, capacity, count, out_count);
}

/* ---------------------------------------------------------- negotiation */

static uint32_t align_of(uint32_t a) { return a > 1 ? a : 1; }

static bool fits(const gpures_format_cap *c, uint32_t width, uint32_t height) {
  return (!c->max_width || width <= c->max_width) && (!c->max_height || height <= c->max_height);
}

/* The memory both take that copies least: a dma-buf, an opaque fd, a CUDA fd, then an upload. */
static uint32_t best_memory(uint32_t both) {
  static const uint32_t order[] = {GPURES_MEMORY_DMA_BUF, GPURES_MEMORY_OPAQUE_FD,
                                   GPURES_MEMORY_CUDA_VMM_FD, GPURES_MEMORY_HOST};
  for (uint32_t i = 0; i < GPURES__LEN(order); i++)
    if (both & order[i]) return order[i];
  return 0;
}

typedef struct why {
  char text[1024];
  size_t used;
} why;

static void say(why *w, const char *fmt, const char *name, unsigned long long a,
                unsigned long long b) {
  if (w->used >= sizeof w->text - 1) return;
  size_t room = sizeof w->text - w->used;
  int n = snprintf(w->text + w->used, room, fmt, name, a, b);
  if (n > 0) w->used = (size_t)n < room ? w->used + (size_t)n : sizeof w->text - 1; /* cut off */
}

/* Why no consumer row takes producer row p, said once per format. */
static void explain(why *w, const gpures_format_cap *p, const gpures_format_cap *consumer,
                    uint32_t num_consumer, uint32_t width, uint32_t height) {
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, p->format);
  if (!name) return;
  const gpures_format_cap *same_format = NULL, *same_modifier = NULL;
  for (uint32_t c = 0; c < num_consumer; c++) {
    if (consumer[c].format != p->format) continue;
    same_format = &consumer[c];
    if (consumer[c].modifier == p->modifier) same_modifier = &consumer[c];
  }
  if (!same_format)
    say(w, "%s: not taken by the consumer; ", name, 0, 0);
  else if (!same_modifier)
    say(w, "%s: the consumer takes modifier 0x%llx, not 0x%llx; ", name, same_format->modifier,
        p->modifier);
  else if (!(same_modifier->memory & p->memory))
    say(w, "%s: no memory kind in common (consumer 0x%llx, producer 0x%llx); ", name,
        same_modifier->memory, p->memory);
  else if (!fits(same_modifier, width, height))
    say(w, "%s: the consumer takes at most %llux%llu; ", name, same_modifier->max_width,
        same_modifier->max_height);
}

static int check_rows(gpures__op op, const char *field, const gpures_format_cap *rows, uint32_t n) {
  if (n && !rows) return gpures__fail(op, GPURES_E_NULL_POINTER, field, "%s is null", field);
  for (uint32_t i = 0; i < n; i++) {
    if (!gpures_pixel_format_info_of(rows[i].format))
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "%s[%u].format %u is no PixelFormat",
                          field, i, rows[i].format);
    uint32_t a = rows[i].row_align;
    if (a > 4096 || (a & (a - 1)))
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                          "%s[%u].rowAlign %u is not a power of two up to 4096", field, i, a);
  }
  return GPURES_OK;
}

static int fill(gpures__op op, const gpures_format_cap *p, const gpures_format_cap *c,
                uint32_t width, uint32_t height, gpures_negotiated *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->format = p->format;
  out->modifier = p->modifier;
  out->memory = best_memory(p->memory & c->memory);
  uint32_t pa = align_of(p->row_align), ca = align_of(c->row_align);
  out->row_align = pa > ca ? pa : ca;
  out->width = width;
  out->height = height;
  if (p->modifier != GPURES_MODIFIER_LINEAR) return GPURES_OK;
  out->num_planes = gpures_pixel_format_info_of(p->format)->num_planes;
  int status = gpures_pixel_format_layout(p->format, width, height, out->row_align, out->planes,
                                          &out->size);
  return status == GPURES_OK ? status : gpures__refail(op, status);
}

int gpures_negotiate(const gpures_format_cap *producer, uint32_t num_producer,
                     const gpures_format_cap *consumer, uint32_t num_consumer, uint32_t width,
                     uint32_t height, gpures_negotiated *out) {
  gpures__op op = {"negotiate", 0};
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = check_rows(op, "producer", producer, num_producer);
  if (status == GPURES_OK) status = check_rows(op, "consumer", consumer, num_consumer);
  if (status != GPURES_OK) return status;
  if (!width || !height)
    return gpures__fail(op, GPURES_E_ZERO_SIZE, width ? "height" : "width", "the extent is %ux%u",
                        width, height);
  for (uint32_t i = 0; i < num_producer; i++) {
    const gpures_format_cap *p = &producer[i];
    for (uint32_t j = 0; j < num_consumer; j++) {
      const gpures_format_cap *c = &consumer[j];
      if (c->format != p->format || c->modifier != p->modifier || !(c->memory & p->memory) ||
          !fits(p, width, height) || !fits(c, width, height))
        continue;
      gpures_negotiated result;
      if ((status = fill(op, p, c, width, height, &result)) != GPURES_OK) return status;
      result.producer_index = i;
      result.consumer_index = j;
      return gpures__copy_out(op, out, &result, sizeof result);
    }
  }
  why w = {{0}, 0};
  for (uint32_t i = 0; i < num_producer; i++) {
    bool said = false; /* once per format: the first row of it says why */
    for (uint32_t k = 0; k < i && !said; k++) said = producer[k].format == producer[i].format;
    if (!said) explain(&w, &producer[i], consumer, num_consumer, width, height);
  }
  if (w.used >= 2) w.text[w.used - 2] = '\0';
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "format", "no format fits both sides: %s",
                      num_producer ? w.text : "the producer offers none");
}
