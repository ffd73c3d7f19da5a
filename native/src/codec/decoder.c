/*
** decoder.c: packets in, pooled frames out. libavcodec asks for each frame's
** memory through get_buffer2, which here takes a slot of the decoder's own
** frame pool: the decoder writes the frame where every process that gets it
** will read it. The pool follows the stream: a new size or format gets a new
** pool (the old one's frames stay valid, each slot going with its frame).
**
** A slot is held twice: by libavcodec, through the AVBufferRef that
** get_buffer2 gives it (a reference picture stays in use long after it was
** output), and by whoever got the frame from gpures_decoder_receive(), through
** the handle. Each holds a reference of the slot's handle, so the slot comes
** home when both let go, in any order, on any thread.
*/
#include "codec.h"

#if defined(__linux__)
#include <stdio.h>
#include <string.h>

#define MAX_THREADS 64u
#define MAX_EXTRADATA (1u << 20)
#define PAD_BYTES 64u /* zeroed after extradata, as libavcodec requires */
/*
** Rows added below a decoder's aligned height: libavcodec's SIMD reads up to
** 16 + 63 bytes past a plane's end, and the last plane has nothing after it.
** Four rows of luma give a 4:2:0 chroma plane two rows, at least 128 bytes.
*/
#define TAIL_ROWS 4u

/* One slot lent to libavcodec: its handle reference and its mapping. */
typedef struct lent_slot {
  struct gpures_decoder *decoder;
  gpures_handle frame;
  gpures__mapped map;
  uint32_t format;           /* the frame's, for the visible rectangle */
  gpures_plane_layout planes[4]; /* its pool's layout: the decoder's may change meanwhile */
  uint32_t num_planes;
} lent_slot;

struct gpures_decoder {
  const gpures__av *av;
  const gpures__av_layout *l;
  AVCodecContext *ctx;
  AVPacket *packet;
  AVFrame *frame;
  gpures__av_rational timebase;
  uint32_t slots;
  int64_t sequence;
  bool draining;
  bool frame_pending;   /* d->frame was received but found no slot for its copy: taken first next time */
  gpures__map_cache maps;

  pthread_mutex_t mu; /* what follows: get_buffer2 runs on libavcodec's threads */
  gpures_pool *pool;
  uint32_t format, width, height; /* the pool's frames */
  gpures_plane_layout planes[4];
  uint32_t num_planes;
  uint64_t frame_size;
  lent_slot **lent; /* every slot libavcodec holds now */
  uint32_t num_lent, lent_capacity;
  int alloc_status;     /* why get_buffer2 last failed, told by the next send */
  char alloc_error[256], alloc_field[32];

  gpures_handle *ready; /* frames decoded while a send made room, or by run, for receive */
  uint32_t num_ready, ready_capacity;
  AVPacket **queued;    /* packets copied by gpures_decoder_queue, for run; NULL: a drain */
  uint32_t num_queued, queued_capacity;
  gpures__run_outcome last_run;
};

static gpures__op decoder_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

/* ------------------------------------------------------------ the pool */

/* A pool for frames of this shape, unless the current one has it. Called locked. */
static int shape_pool(gpures__op op, gpures_decoder *d, uint32_t format, uint32_t width,
                      uint32_t height, uint32_t row_align) {
  if (d->pool && d->format == format && d->width == width && d->height == height) return GPURES_OK;
  gpures_plane_layout planes[4];
  uint64_t size = 0;
  int status = gpures_pixel_format_layout(format, width, height, row_align, planes, &size);
  if (status != GPURES_OK) return gpures__refail(op, status);
  gpures_pool_desc desc = {sizeof desc, 0, format, width, height, d->slots, row_align, 0};
  gpures_pool *pool = NULL;
  if ((status = gpures_pool_create(&desc, &pool)) != GPURES_OK) return gpures__refail(op, status);
  if (d->pool) (void)gpures_pool_close(d->pool);
  d->pool = pool;
  d->format = format;
  d->width = width;
  d->height = height;
  d->num_planes = gpures_pixel_format_info_of(format)->num_planes;
  memcpy(d->planes, planes, sizeof planes);
  d->frame_size = size;
  return GPURES_OK;
}

/* A free slot of the pool, mapped, as a lent_slot. Called locked. */
static int lend_slot(gpures__op op, gpures_decoder *d, lent_slot **out) {
  gpures_handle frame = 0;
  int status = gpures_pool_acquire(d->pool, 0, 0, NULL, &frame);
  if (status == GPURES_E_TIMED_OUT)
    return gpures__fail(op, GPURES_E_TIMED_OUT, "slots",
                        "all %u frames of the decoder's pool are held (by the decoder's "
                        "references and by frames not released yet): release frames sooner, or "
                        "give the decoder more slots",
                        d->slots);
  if (status != GPURES_OK) return gpures__refail(op, status);
  lent_slot *s = gpures__alloc(sizeof *s);
  if (!s || !gpures__grow((void **)&d->lent, &d->lent_capacity, d->num_lent, sizeof s, 8, 1024)) {
    gpures__free(s);
    (void)gpures_release(frame);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a decoder's slot");
  }
  s->decoder = d;
  s->frame = frame;
  s->format = d->format;
  memcpy(s->planes, d->planes, sizeof s->planes);
  s->num_planes = d->num_planes;
  if ((status = gpures__map_cache_get(op, &d->maps, frame, &s->map)) != GPURES_OK) {
    gpures__free(s);
    (void)gpures_release(frame);
    return status;
  }
  d->lent[d->num_lent++] = s;
  *out = s;
  return GPURES_OK;
}

/* libavcodec let a slot go: its handle reference goes, and the slot with it once nobody else holds the frame. */
static void slot_returned(void *opaque, uint8_t *data) {
  (void)data;
  lent_slot *s = opaque;
  gpures_decoder *d = s->decoder;
  pthread_mutex_lock(&d->mu);
  for (uint32_t i = 0; i < d->num_lent; i++)
    if (d->lent[i] == s) {
      d->lent[i] = d->lent[--d->num_lent];
      break;
    }
  pthread_mutex_unlock(&d->mu);
  gpures__map_cache_put(&d->maps, &s->map);
  (void)gpures_release(s->frame);
  gpures__free(s);
}

/* The lent slot whose memory an output frame is in, or NULL (a frame libavcodec allocated). */
static lent_slot *lent_of(gpures_decoder *d, const uint8_t *data) {
  lent_slot *found = NULL;
  pthread_mutex_lock(&d->mu);
  for (uint32_t i = 0; i < d->num_lent && !found; i++) {
    lent_slot *s = d->lent[i];
    if (data >= s->map.ptr && data < s->map.ptr + s->map.size) found = s;
  }
  pthread_mutex_unlock(&d->mu);
  return found;
}

static void point_planes(const lent_slot *s, AVFrame *f) {
  uint8_t **data = &GPURES__AT(f, GPURES__AV_FRAME_DATA, uint8_t *);
  int *linesize = &GPURES__AT(f, GPURES__AV_FRAME_LINESIZE, int);
  for (uint32_t i = 0; i < 8; i++) {
    data[i] = i < s->num_planes ? s->map.ptr + s->planes[i].offset : NULL;
    linesize[i] = i < s->num_planes ? (int)s->planes[i].stride : 0;
  }
  GPURES__AT(f, 96, uint8_t **) = data; /* extended_data: data, for video */
}

/* libavcodec's get_buffer2: the frame's memory is a slot of the pool. */
static int get_buffer(AVCodecContext *ctx, AVFrame *f, int flags) {
  (void)flags;
  gpures_decoder *d = GPURES__AT(ctx, gpures__av_loaded()->layout->ctx_opaque, gpures_decoder *);
  const gpures__av_layout *l = d->l;
  gpures__op op = decoder_op("decode a frame into");
  int pix_fmt = GPURES__AT(f, GPURES__AV_FRAME_FORMAT, int);
  int width = GPURES__AT(f, GPURES__AV_FRAME_WIDTH, int);
  int height = GPURES__AT(f, GPURES__AV_FRAME_HEIGHT, int);
  uint32_t format = gpures__av_format_of(pix_fmt);
  int status;
  pthread_mutex_lock(&d->mu);
  if (!format) {
    const char *name = d->av->pix_fmt_name(pix_fmt);
    status = gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                          "the decoder gives %s frames, which no PixelFormat describes",
                          name ? name : "unnamed");
  } else if (width <= 0 || height <= 0) {
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "packet", "the decoder asks for a %dx%d frame",
                          width, height);
  } else {
    int aligned_w = width, aligned_h = height, align[8] = {0};
    d->av->align_dimensions(ctx, &aligned_w, &aligned_h, align);
    uint32_t row_align = 64;
    for (int i = 0; i < 8; i++)
      while (align[i] > 0 && row_align < (uint32_t)align[i] && row_align < 4096) row_align <<= 1;
    status = shape_pool(op, d, format, (uint32_t)aligned_w, (uint32_t)aligned_h + TAIL_ROWS,
                        row_align);
  }
  lent_slot *s = NULL;
  if (status == GPURES_OK) status = lend_slot(op, d, &s);
  AVBufferRef *buf = NULL;
  if (status == GPURES_OK) {
    buf = d->av->buffer_create(s->map.ptr, (size_t)s->map.size, slot_returned, s, 0);
    if (!buf) status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for an AVBufferRef");
  }
  if (status != GPURES_OK) {
    d->alloc_status = status;
    snprintf(d->alloc_error, sizeof d->alloc_error, "%s", gpures_last_error());
    snprintf(d->alloc_field, sizeof d->alloc_field, "%s", gpures_last_error_field());
  }
  pthread_mutex_unlock(&d->mu);
  if (status != GPURES_OK) {
    if (s) slot_returned(s, NULL);
    return -12; /* AVERROR(ENOMEM) */
  }
  point_planes(s, f);
  memset(&GPURES__AT(f, l->frame_buf, AVBufferRef *), 0, 8 * sizeof(AVBufferRef *));
  GPURES__AT(f, l->frame_buf, AVBufferRef *) = buf;
  return 0;
}

/* ------------------------------------------------------------- frames out */

/* A frame libavcodec allocated itself, copied into a slot: the one copy, counted. */
static int copy_out(gpures__op op, gpures_decoder *d, AVFrame *f, uint32_t format, uint32_t width,
                    uint32_t height, gpures_handle *out) {
  pthread_mutex_lock(&d->mu);
  int status = shape_pool(op, d, format, width, height, 64);
  gpures_handle frame = 0;
  if (status == GPURES_OK && (status = gpures_pool_acquire(d->pool, 0, 0, NULL, &frame)) != GPURES_OK)
    status = status == GPURES_E_TIMED_OUT
                 ? gpures__fail(op, status, "slots", "all %u frames of the decoder's pool are held",
                                d->slots)
                 : gpures__refail(op, status);
  gpures_plane_layout planes[4];
  memcpy(planes, d->planes, sizeof planes);
  uint32_t num_planes = d->num_planes;
  pthread_mutex_unlock(&d->mu);
  gpures__mapped m;
  if (status == GPURES_OK && (status = gpures__map_cache_get(op, &d->maps, frame, &m)) != GPURES_OK)
    (void)gpures_release(frame);
  if (status != GPURES_OK) return status;
  uint64_t copied = 0;
  for (uint32_t p = 0; p < num_planes; p++) {
    const uint8_t *src = GPURES__AT(f, GPURES__AV_FRAME_DATA + 8 * p, const uint8_t *);
    int pitch = GPURES__AT(f, GPURES__AV_FRAME_LINESIZE + 4 * p, int);
    uint32_t rows = 0, cols = 0;
    uint64_t row_bytes = 0;
    (void)gpures_pixel_format_plane_extent(format, p, width, height, &cols, &rows);
    (void)gpures_pixel_format_row_bytes(format, p, width, &row_bytes);
    for (uint32_t y = 0; src && y < rows; y++)
      memcpy(m.ptr + planes[p].offset + (uint64_t)y * planes[p].stride,
             src + (int64_t)y * pitch, row_bytes);
    copied += row_bytes * rows;
  }
  gpures__map_cache_put(&d->maps, &m);
  gpures__codec_count(GPURES__COUNT_COPIED, copied);
  *out = frame;
  return GPURES_OK;
}

/* Where a cropped frame starts in its slot's plane 0. */
static gpures_rect visible_in(const lent_slot *s, const uint8_t *data0, uint32_t width,
                              uint32_t height) {
  uint64_t at = (uint64_t)(data0 - (s->map.ptr + s->planes[0].offset));
  const gpures_pixel_format_info *info = gpures_pixel_format_info_of(s->format);
  uint32_t block = info->planes[0].block_width ? info->planes[0].block_width : 1;
  uint64_t block_bytes = 0;
  (void)gpures_pixel_format_row_bytes(s->format, 0, block, &block_bytes);
  gpures_rect r = {0, (uint32_t)(at / s->planes[0].stride), width, height};
  if (block_bytes) r.x = (uint32_t)((at % s->planes[0].stride) / block_bytes * block);
  return r;
}

static uint32_t chromaticity(gpures__av_rational q) {
  double v = q.den ? (double)q.num / q.den * 50000.0 + 0.5 : 0;
  return v < 0 ? 0 : v > 50000 ? 50000 : (uint32_t)v;
}

static uint32_t luminance(gpures__av_rational q) {
  double v = q.den ? (double)q.num / q.den * 10000.0 + 0.5 : 0;
  return v < 0 ? 0 : v > 4e9 ? 4000000000u : (uint32_t)v;
}

/* HDR static metadata the bitstream carried (SEI, OBU, ...), in gpures's units. */
static void hdr_meta(const gpures_decoder *d, const AVFrame *f, gpures_frame_meta *m) {
  const uint8_t *sd = d->av->frame_side_data(f, GPURES__AV_FRAME_DATA_MASTERING);
  const uint8_t *md = sd ? GPURES__AT(sd, 8, const uint8_t *) : NULL;
  if (md && GPURES__AT(md, 80, int) && GPURES__AT(md, 84, int)) {
    const gpures__av_rational *q = (const gpures__av_rational *)md; /* [3][2] primaries, [2] white, min, max */
    m->flags |= GPURES_META_HAS_MASTERING;
    m->mastering = (gpures_mastering_display){chromaticity(q[0]), chromaticity(q[1]),
                                              chromaticity(q[2]), chromaticity(q[3]),
                                              chromaticity(q[4]), chromaticity(q[5]),
                                              chromaticity(q[6]), chromaticity(q[7]),
                                              luminance(q[9]),    luminance(q[8])};
  }
  sd = d->av->frame_side_data(f, GPURES__AV_FRAME_DATA_CONTENT_LIGHT);
  const unsigned *cl = sd ? GPURES__AT(sd, 8, const unsigned *) : NULL;
  if (cl) {
    m->flags |= GPURES_META_HAS_CONTENT_LIGHT;
    m->content_light = (gpures_content_light){cl[0], cl[1]};
  }
}

static void colour_meta(const gpures_decoder *d, const AVFrame *f, gpures_frame_meta *m) {
  const int *c = &GPURES__AT(f, d->l->frame_color_range, int); /* range, primaries, trc, space */
  if (c[1] == 2 && c[2] == 2 && c[3] == 2 && c[0] == 0) return; /* all unspecified */
  m->flags |= GPURES_META_HAS_COLOR;
  m->primaries = (uint32_t)c[1];
  m->transfer = (uint32_t)c[2];
  m->matrix = (uint32_t)c[3];
  m->full_range = c[0] == 2; /* AVCOL_RANGE_JPEG */
}

/*
** The frame's metadata. What the bitstream says is untrusted: a group that
** gpures_meta_set() refuses (a colour code no table knows, a mastering display
** out of range) is left out rather than losing the frame.
*/
static int set_meta(gpures__op op, const gpures_decoder *d, const AVFrame *f, gpures_handle frame,
                    gpures_rect visible, int64_t sequence) {
  gpures_frame_meta m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  m.flags = GPURES_META_HAS_SEQUENCE | GPURES_META_HAS_VISIBLE;
  m.sequence = sequence;
  m.visible = visible;
  int64_t pts = GPURES__AT(f, d->l->frame_pts, int64_t);
  if (pts == GPURES__AV_NOPTS) pts = GPURES__AT(f, d->l->frame_best_effort, int64_t);
  if (pts != GPURES__AV_NOPTS) {
    int64_t duration = GPURES__AT(f, d->l->frame_duration, int64_t);
    m.flags |= GPURES_META_HAS_TIMING;
    m.pts = pts;
    m.duration = duration > 0 ? duration : 0;
    m.timebase_num = (uint32_t)d->timebase.num;
    m.timebase_den = (uint32_t)d->timebase.den;
  }
  colour_meta(d, f, &m);
  hdr_meta(d, f, &m);
  const uint32_t untrusted[] = {GPURES_META_HAS_MASTERING | GPURES_META_HAS_CONTENT_LIGHT,
                                GPURES_META_HAS_COLOR, GPURES_META_HAS_TIMING};
  int status = gpures_meta_set(frame, &m);
  for (size_t i = 0; status == GPURES_E_INVALID_VALUE && i < GPURES__LEN(untrusted); i++) {
    m.flags &= ~untrusted[i];
    status = gpures_meta_set(frame, &m);
  }
  return status == GPURES_OK ? GPURES_OK : gpures__refail(op, status);
}

/* The decoded frame in d->frame as a handle of the caller's. */
static int take_frame(gpures__op op, gpures_decoder *d, gpures_handle *out) {
  AVFrame *f = d->frame;
  const uint8_t *data0 = GPURES__AT(f, GPURES__AV_FRAME_DATA, const uint8_t *);
  uint32_t width = (uint32_t)GPURES__AT(f, GPURES__AV_FRAME_WIDTH, int);
  uint32_t height = (uint32_t)GPURES__AT(f, GPURES__AV_FRAME_HEIGHT, int);
  lent_slot *s = data0 ? lent_of(d, data0) : NULL;
  gpures_handle frame = 0;
  gpures_rect visible = {0, 0, width, height};
  int status = GPURES_OK;
  if (s) {
    frame = s->frame;
    visible = visible_in(s, data0, width, height);
    status = gpures_clone(frame);
    if (status != GPURES_OK) return gpures__refail(op, status);
  } else {
    int pix_fmt = GPURES__AT(f, GPURES__AV_FRAME_FORMAT, int);
    uint32_t format = gpures__av_format_of(pix_fmt);
    if (!format) {
      const char *name = d->av->pix_fmt_name(pix_fmt);
      return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                          "the decoder gives %s frames, which no PixelFormat describes",
                          name ? name : "unnamed");
    }
    if ((status = copy_out(op, d, f, format, width, height, &frame)) != GPURES_OK) return status;
  }
  if ((status = set_meta(op, d, f, frame, visible, d->sequence)) != GPURES_OK) {
    (void)gpures_release(frame);
    return status;
  }
  d->sequence++;
  gpures__codec_count(GPURES__COUNT_DECODED, 0);
  *out = frame;
  return GPURES_OK;
}

/* A failure of libavcodec's, or of get_buffer2 inside it (which libavcodec sees as ENOMEM). */
static int decode_failed(gpures__op op, gpures_decoder *d, const char *what, int err) {
  pthread_mutex_lock(&d->mu);
  int status = d->alloc_status;
  char why[sizeof d->alloc_error], field[sizeof d->alloc_field];
  memcpy(why, d->alloc_error, sizeof why);
  memcpy(field, d->alloc_field, sizeof field);
  d->alloc_status = GPURES_OK;
  pthread_mutex_unlock(&d->mu);
  if (status != GPURES_OK) {
    const char *colon = strstr(why, ": ");
    return gpures__fail(op, status, field, "%s", colon ? colon + 2 : why);
  }
  return gpures__av_fail(op, "packet", what, err);
}

/* One frame out of libavcodec, or *out 0 when it has none now. */
static int decode_one(gpures__op op, gpures_decoder *d, gpures_handle *out) {
  *out = 0;
  if (!d->frame_pending) {
    int r = d->av->receive_frame(d->ctx, d->frame);
    if (r == GPURES__AVERROR_EAGAIN) return GPURES_OK;
    if (r == GPURES__AVERROR_EOF) {
      if (d->draining) d->av->flush_buffers(d->ctx);
      d->draining = false;
      return GPURES_OK;
    }
    if (r < 0) return decode_failed(op, d, "avcodec_receive_frame", r);
  }
  int status = take_frame(op, d, out);
  /* A frame libavcodec no longer has must not be lost to a full pool: kept until a slot is free. */
  d->frame_pending = status == GPURES_E_TIMED_OUT;
  if (!d->frame_pending) d->av->frame_unref(d->frame);
  return status;
}

/* ---------------------------------------------------------------- the API */

int gpures_decoder_receive(gpures_decoder *d, gpures_handle *out_frame) {
  gpures__op op = decoder_op("receive a frame from the decoder");
  if (!out_frame) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFrame", "outFrame is null");
  *out_frame = 0;
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  if (d->num_ready) {
    *out_frame = d->ready[0];
    memmove(d->ready, d->ready + 1, --d->num_ready * sizeof d->ready[0]);
    return GPURES_OK;
  }
  return decode_one(op, d, out_frame);
}

/* Whether a slot is free for the packet's frame. */
static bool slot_free(gpures_decoder *d) {
  pthread_mutex_lock(&d->mu);
  gpures_pool_stats st = {sizeof st};
  bool free_one = !d->pool || gpures_pool_stats_get(d->pool, &st) != GPURES_OK || st.in_use < st.slots;
  pthread_mutex_unlock(&d->mu);
  return free_one;
}

static int check_packet(gpures__op op, const gpures_packet *in, gpures_packet *p) {
  memset(p, 0, sizeof *p);
  int status = gpures__copy_versioned(op, "packet.structSize", in, sizeof *p, p);
  if (status != GPURES_OK) return status;
  if (p->flags & ~(GPURES_PACKET_KEY | GPURES_PACKET_DISCARD))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet.flags",
                        "packet.flags has unknown bits 0x%x",
                        p->flags & ~(GPURES_PACKET_KEY | GPURES_PACKET_DISCARD));
  if (p->size >= (1u << 31))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet.size",
                        "packet.size is %llu; a packet has under 2^31 bytes",
                        (unsigned long long)p->size);
  if (p->size && !p->data)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "packet.data", "packet.data is null");
  if (p->duration < 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet.duration",
                        "packet.duration is %lld; it is at least 0", (long long)p->duration);
  return GPURES_OK;
}

/* Frames libavcodec has ready move to d->ready, so that it takes the next packet. */
static int make_room(gpures__op op, gpures_decoder *d) {
  for (;;) {
    gpures_handle frame = 0;
    int status = decode_one(op, d, &frame);
    if (status != GPURES_OK || !frame) return status;
    if (!gpures__grow((void **)&d->ready, &d->ready_capacity, d->num_ready, sizeof frame, 8,
                      GPURES_POOL_MAX_SLOTS)) {
      (void)gpures_release(frame);
      return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a decoded frame's place");
    }
    d->ready[d->num_ready++] = frame;
  }
}

static int drain(gpures__op op, gpures_decoder *d) {
  if (d->draining) return GPURES_OK;
  int r = d->av->send_packet(d->ctx, NULL);
  if (r < 0 && r != GPURES__AVERROR_EOF) return decode_failed(op, d, "avcodec_send_packet", r);
  d->draining = true;
  return GPURES_OK;
}

/* Gives libavcodec one packet, taking the frames it has ready when it wants them taken first. */
static int send_avpacket(gpures__op op, gpures_decoder *d, AVPacket *pkt) {
  if (d->draining)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet",
                        "the decoder is draining: receive until it gives no frame, then send");
  if (!slot_free(d))
    return gpures__fail(op, GPURES_E_TIMED_OUT, "slots",
                        "all %u frames of the decoder's pool are held: release frames, then send "
                        "this packet again",
                        d->slots);
  int r, status = GPURES_OK;
  while ((r = d->av->send_packet(d->ctx, pkt)) == GPURES__AVERROR_EAGAIN) {
    uint32_t before = d->num_ready;
    if ((status = make_room(op, d)) != GPURES_OK) return status;
    if (d->num_ready == before) break; /* it wants frames taken and has none: cannot happen */
  }
  return r < 0 ? decode_failed(op, d, "avcodec_send_packet", r) : GPURES_OK;
}

static void fill_avpacket(AVPacket *pkt, const gpures_packet *p) {
  GPURES__AT(pkt, GPURES__AV_PACKET_PTS, int64_t) = p->pts;
  GPURES__AT(pkt, GPURES__AV_PACKET_DTS, int64_t) = GPURES__AV_NOPTS;
  GPURES__AT(pkt, GPURES__AV_PACKET_DURATION, int64_t) = p->duration;
  GPURES__AT(pkt, GPURES__AV_PACKET_FLAGS, int) =
      (p->flags & GPURES_PACKET_KEY ? GPURES__AV_PKT_FLAG_KEY : 0) |
      (p->flags & GPURES_PACKET_DISCARD ? GPURES__AV_PKT_FLAG_DISCARD : 0); /* decoded, not output */
}

int gpures_decoder_send(gpures_decoder *d, const gpures_packet *packet) {
  gpures__op op = decoder_op("send a packet to the decoder");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  gpures_packet p;
  int status = packet ? check_packet(op, packet, &p) : GPURES_OK;
  if (status != GPURES_OK) return status;
  if (!packet || !p.size) return drain(op, d);
  AVPacket *pkt = d->packet;
  fill_avpacket(pkt, &p);
  /* Not reference-counted: libavcodec copies the bytes (with its padding) before it returns. */
  GPURES__AT(pkt, GPURES__AV_PACKET_DATA, const uint8_t *) = p.data;
  GPURES__AT(pkt, GPURES__AV_PACKET_SIZE, int) = (int)p.size;
  status = send_avpacket(op, d, pkt);
  GPURES__AT(pkt, GPURES__AV_PACKET_DATA, const uint8_t *) = NULL;
  GPURES__AT(pkt, GPURES__AV_PACKET_SIZE, int) = 0;
  return status;
}

int gpures_decoder_queue(gpures_decoder *d, const gpures_packet *packet) {
  gpures__op op = decoder_op("queue a packet for the decoder");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  gpures_packet p;
  int status = packet ? check_packet(op, packet, &p) : GPURES_OK;
  if (status != GPURES_OK) return status;
  if (!gpures__grow((void **)&d->queued, &d->queued_capacity, d->num_queued, sizeof(AVPacket *), 8,
                    1u << 16))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no room to queue another packet");
  AVPacket *pkt = NULL;
  if (packet && p.size) {
    pkt = d->av->packet_alloc();
    if (!pkt || d->av->new_packet(pkt, (int)p.size) < 0) {
      d->av->packet_free(&pkt);
      return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "packet", "no memory for a %llu-byte packet",
                          (unsigned long long)p.size);
    }
    memcpy(GPURES__AT(pkt, GPURES__AV_PACKET_DATA, uint8_t *), p.data, p.size);
    fill_avpacket(pkt, &p);
  }
  d->queued[d->num_queued++] = pkt;
  return GPURES_OK;
}

/* Takes every frame libavcodec has, to the end of a drain when one runs. */
static int take_all(gpures__op op, gpures_decoder *d) {
  int status;
  uint32_t before;
  do {
    before = d->num_ready;
    status = make_room(op, d);
  } while (status == GPURES_OK && d->draining && d->num_ready != before);
  return status;
}

int gpures_decoder_run(gpures_decoder *d) {
  gpures__op op = decoder_op("decode queued packets");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  int status = d->frame_pending ? make_room(op, d) : GPURES_OK; /* the kept frame before any other */
  uint32_t done = 0;
  for (; done < d->num_queued && status == GPURES_OK; done++) {
    AVPacket *pkt = d->queued[done];
    status = pkt ? send_avpacket(op, d, pkt) : drain(op, d);
    if (status == GPURES_E_TIMED_OUT) break; /* stays queued: run again once slots are free */
    d->av->packet_free(&pkt);
    if (status == GPURES_OK) status = take_all(op, d);
  }
  memmove(d->queued, d->queued + done, (d->num_queued - done) * sizeof d->queued[0]);
  d->num_queued -= done;
  gpures__run_outcome_keep(&d->last_run, status);
  return status;
}

int gpures_decoder_last_run(gpures_decoder *d) {
  gpures__op op = decoder_op("decode queued packets");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  return gpures__run_outcome_tell(op, &d->last_run);
}

static int check_desc(gpures__op op, const gpures_decoder_desc *desc) {
  if (desc->flags)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x",
                        desc->flags);
  if (!desc->codec) return gpures__fail(op, GPURES_E_NULL_POINTER, "codec", "codec is null");
  if (desc->extradata_size > MAX_EXTRADATA)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "extradataSize",
                        "extradataSize is %u; at most %u", desc->extradata_size, MAX_EXTRADATA);
  if (desc->extradata_size && !desc->extradata)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "extradata", "extradata is null");
  if (desc->threads > MAX_THREADS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "threads", "threads is %u; at most %u",
                        desc->threads, MAX_THREADS);
  if (desc->slots == 1 || desc->slots > GPURES_POOL_MAX_SLOTS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "slots", "slots is %u; 0, or 2 to %u",
                        desc->slots, GPURES_POOL_MAX_SLOTS);
  if (!desc->timebase_num != !desc->timebase_den || desc->timebase_num > INT32_MAX ||
      desc->timebase_den > INT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, desc->timebase_num ? "timebaseDen" : "timebaseNum",
                        "the timebase is %u/%u; both 0, or both 1 to 2^31 - 1", desc->timebase_num,
                        desc->timebase_den);
  return GPURES_OK;
}

/* The context's settings before avcodec_open2; each is an AVOption, so no offset is needed. */
static int configure(gpures__op op, gpures_decoder *d, const gpures_decoder_desc *desc,
                     const AVCodec *codec) {
  const gpures__av *a = d->av;
  AVCodecContext *ctx = d->ctx;
  GPURES__AT(ctx, d->l->ctx_opaque, gpures_decoder *) = d;
  if (GPURES__AT(codec, GPURES__AV_CODEC_CAPABILITIES, int) & GPURES__AV_CODEC_CAP_DR1) {
    GPURES__AT(ctx, d->l->ctx_get_buffer2, void *) = (void *)get_buffer;
    /* It is: the pool and the decoder's lists are locked, frame threads or not. */
    if (d->l->ctx_thread_safe_callbacks) GPURES__AT(ctx, d->l->ctx_thread_safe_callbacks, int) = 1;
  }
  if (desc->extradata_size) {
    uint8_t *copy = a->malloc(desc->extradata_size + PAD_BYTES);
    if (!copy) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "extradata", "no memory for extradata");
    memcpy(copy, desc->extradata, desc->extradata_size);
    memset(copy + desc->extradata_size, 0, PAD_BYTES);
    GPURES__AT(ctx, d->l->ctx_extradata, uint8_t *) = copy; /* avcodec_free_context frees it */
    GPURES__AT(ctx, d->l->ctx_extradata_size, int) = (int)desc->extradata_size;
  }
  int r = a->opt_set_int(ctx, "threads", desc->threads ? desc->threads : 1, 0);
  if (r >= 0) r = a->opt_set_q(ctx, "pkt_timebase", d->timebase, 0);
  /* A crop is applied exactly (the visible rectangle), even where its left edge is not aligned. */
  if (r >= 0) r = a->opt_set(ctx, "flags", "+unaligned", 0);
  return r < 0 ? gpures__av_fail(op, "", "setting the decoder's options", r) : GPURES_OK;
}

int gpures_decoder_create(const gpures_decoder_desc *desc, gpures_decoder **out) {
  gpures__op op = decoder_op("create a decoder");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  *out = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_decoder_desc dd;
  memset(&dd, 0, sizeof dd);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof dd, &dd);
  if (status == GPURES_OK) status = check_desc(op, &dd);
  const gpures__av *a = NULL;
  if (status == GPURES_OK) status = gpures__av_ready(op, &a);
  if (status == GPURES_OK) status = gpures_codec_find(dd.codec, GPURES_CODEC_DECODER);
  if (status != GPURES_OK) return status == GPURES_E_UNSUPPORTED ? gpures__refail(op, status) : status;
  gpures_decoder *d = gpures__alloc(sizeof *d);
  if (!d) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a decoder");
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->mu, NULL);
  gpures__map_cache_init(&d->maps, GPURES_POOL_MAX_SLOTS, GPURES_MAP_READ | GPURES_MAP_WRITE);
  d->av = a;
  d->l = a->layout;
  d->slots = dd.slots ? dd.slots : 16 + (dd.threads ? dd.threads : 1) + 8;
  if (d->slots > GPURES_POOL_MAX_SLOTS) d->slots = GPURES_POOL_MAX_SLOTS;
  d->timebase = dd.timebase_num ? (gpures__av_rational){(int)dd.timebase_num, (int)dd.timebase_den}
                                : (gpures__av_rational){1, 1000000};
  const AVCodec *codec = a->find_decoder(dd.codec);
  d->ctx = a->alloc_context(codec);
  d->packet = a->packet_alloc();
  d->frame = a->frame_alloc();
  if (!d->ctx || !d->packet || !d->frame)
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for libavcodec's objects");
  if (status == GPURES_OK) status = configure(op, d, &dd, codec);
  int r = status == GPURES_OK ? a->open(d->ctx, codec, NULL) : 0;
  if (r < 0) status = gpures__av_fail(op, "codec", "avcodec_open2", r);
  if (status != GPURES_OK) {
    (void)gpures_decoder_destroy(d);
    return status;
  }
  *out = d;
  return GPURES_OK;
}

int gpures_decoder_notify(gpures_decoder *d, uint32_t queue, uint64_t token) {
  gpures__op op = decoder_op("ask the decoder for a free slot");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  pthread_mutex_lock(&d->mu); /* the pool may change under libavcodec's threads */
  int status = d->pool ? gpures_pool_notify(d->pool, queue, token)
                       : gpures__fail(op, GPURES_E_INVALID_VALUE, "decoder",
                                      "the decoder has no frames yet, so no slot to wait for");
  pthread_mutex_unlock(&d->mu);
  return status;
}

int gpures_decoder_notify_cancel(gpures_decoder *d, uint32_t queue, uint64_t token, int why) {
  gpures__op op = decoder_op("withdraw the decoder's slot notice");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "decoder", "decoder is null");
  pthread_mutex_lock(&d->mu);
  /* A notice of a pool since replaced was posted (STALE) when it closed: nothing to withdraw. */
  int status = d->pool ? gpures_pool_notify_cancel(d->pool, queue, token, why) : GPURES_OK;
  pthread_mutex_unlock(&d->mu);
  return status;
}

int gpures_decoder_destroy(gpures_decoder *d) {
  if (!d) return GPURES_OK;
  const gpures__av *a = d->av;
  a->free_context(&d->ctx); /* libavcodec lets every slot go: slot_returned runs for each */
  a->packet_free(&d->packet);
  a->frame_free(&d->frame);
  for (uint32_t i = 0; i < d->num_ready; i++) (void)gpures_release(d->ready[i]);
  for (uint32_t i = 0; i < d->num_queued; i++) a->packet_free(&d->queued[i]);
  gpures__free(d->queued);
  if (d->pool) (void)gpures_pool_close(d->pool);
  gpures__map_cache_free(&d->maps);
  gpures__free(d->ready);
  gpures__free(d->lent);
  pthread_mutex_destroy(&d->mu);
  gpures__free(d);
  return GPURES_OK;
}

#endif /* __linux__ */
