/*
** encoder.c: frames in, packets out. A frame is given to libavcodec as an
** AVFrame over the frame's own mapping, reference-counted: libavcodec reads
** the memory where the producer wrote it (here or in another process), and
** the frame's handle is held until libavcodec lets the AVFrame go, so a
** pooled slot comes home only once the encoder is done with it.
*/
#include "codec.h"

#if defined(__linux__)
#include <string.h>

#define MAX_B_FRAMES 16u
#define AV_BUFFER_FLAG_READONLY 1
#define AV_DICT_IGNORE_SUFFIX 2

struct gpures_encoder {
  const gpures__av *av;
  const gpures__av_layout *l;
  AVCodecContext *ctx;
  AVPacket *packet;
  AVFrame *frame;
  const gpures_pixel_format_info *format;
  int pix_fmt;
  uint32_t width, height;
  gpures__av_rational timebase;
  int64_t sent;
  bool draining, drain_queued;
  gpures__map_cache maps;
  struct queued_frame { gpures_handle frame; uint32_t flags; bool timed; int64_t pts; } *queued; /* for run; frame 0: drain */
  uint32_t num_queued, queued_capacity;
  AVPacket **out;       /* packets run took, for receive */
  uint32_t num_out, out_capacity;
  gpures__run_outcome last_run;
};

/* A frame libavcodec holds: its handle reference and its mapping. */
typedef struct held_frame {
  gpures_encoder *encoder;
  gpures_handle frame;
  gpures__mapped map;
} held_frame;

static gpures__op encoder_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

static void frame_let_go(void *opaque, uint8_t *data) {
  (void)data;
  held_frame *h = opaque;
  gpures__map_cache_put(&h->encoder->maps, &h->map);
  (void)gpures_release(h->frame);
  gpures__free(h);
}

/*
** A frame of the encoder's size is read whole; a larger one (a decoder's,
** whose coded frame is aligned) is read from its visible rectangle when that
** has the encoder's size: the planes are moved to the rectangle's corner.
*/
static int crop_to_visible(gpures__op op, const gpures_encoder *e, gpures_handle frame,
                           gpures_dma_buf_handle_desc *d) {
  if (d->width == e->width && d->height == e->height) return GPURES_OK;
  gpures_frame_meta m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  if (gpures_meta_get(frame, &m) != GPURES_OK || !(m.flags & GPURES_META_HAS_VISIBLE) ||
      m.visible.width != e->width || m.visible.height != e->height)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame.width",
                        "the frame is %ux%u (visible %ux%u); the encoder takes %ux%u", d->width,
                        d->height, m.flags & GPURES_META_HAS_VISIBLE ? m.visible.width : d->width,
                        m.flags & GPURES_META_HAS_VISIBLE ? m.visible.height : d->height, e->width,
                        e->height);
  for (uint32_t p = 0; p < d->num_planes; p++) {
    const gpures_plane_info *pi = &e->format->planes[p];
    uint32_t across = pi->hsub * (pi->block_width ? pi->block_width : 1);
    uint64_t skip = 0;
    if (m.visible.x % across || m.visible.y % pi->vsub)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame.visible.x",
                          "the visible rectangle starts at (%u, %u), inside a sample of plane %u",
                          m.visible.x, m.visible.y, p);
    (void)gpures_pixel_format_row_bytes(e->format->id, p, m.visible.x, &skip);
    uint64_t at = d->planes[p].offset + (uint64_t)(m.visible.y / pi->vsub) * d->planes[p].stride + skip;
    if (at > UINT32_MAX)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame.visible.y",
                          "the visible rectangle starts past 4 GiB in plane %u", p);
    d->planes[p].offset = (uint32_t)at;
  }
  d->width = e->width;
  d->height = e->height;
  return GPURES_OK;
}

/* The frame's descriptor, checked against the encoder and against the memory behind it. */
static int check_frame(gpures__op op, const gpures_encoder *e, gpures_handle frame,
                       gpures_dma_buf_handle_desc *d) {
  uint32_t kind = 0;
  int status = gpures_kind(frame, &kind);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if (kind != GPURES_KIND_DMA_BUF_HANDLE)
    return gpures__fail(op, GPURES_E_WRONG_KIND, "frame",
                        "frame is a %s; an encoder reads DmaBufHandles (a pool's frames)",
                        gpures__kind_name(kind));
  if ((status = gpures_describe(frame, d, sizeof *d)) != GPURES_OK) return gpures__refail(op, status);
  if (d->fourcc != e->format->drm_fourcc)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame.fourcc",
                        "the frame's fourcc is 0x%08x; the encoder takes %s (0x%08x)", d->fourcc,
                        gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, e->format->id),
                        e->format->drm_fourcc);
  if (d->num_planes != e->format->num_planes || d->modifier != 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame.numPlanes",
                        "the frame has %u planes and modifier 0x%llx; the encoder reads %u, linear",
                        d->num_planes, (unsigned long long)d->modifier, e->format->num_planes);
  for (uint32_t p = 0; p < d->num_planes; p++)
    if (d->planes[p].object_index != 0)
      return gpures__fail(op, GPURES_E_UNSUPPORTED, "frame.planes[].objectIndex",
                          "plane %u is in fd %u; an encoder reads frames of one fd", p,
                          d->planes[p].object_index);
  return crop_to_visible(op, e, frame, d);
}

/* Every plane's rows lie inside the mapping: the descriptor may come from another process. */
static int check_bounds(gpures__op op, const gpures_encoder *e, const gpures_dma_buf_handle_desc *d,
                        uint64_t size) {
  for (uint32_t p = 0; p < d->num_planes; p++) {
    uint32_t cols = 0, rows = 0;
    uint64_t row_bytes = 0;
    (void)gpures_pixel_format_plane_extent(e->format->id, p, d->width, d->height, &cols, &rows);
    (void)gpures_pixel_format_row_bytes(e->format->id, p, d->width, &row_bytes);
    uint64_t end = d->planes[p].offset + (uint64_t)d->planes[p].stride * (rows - 1) + row_bytes;
    if (d->planes[p].stride < row_bytes || d->planes[p].stride > INT32_MAX || end > size)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame.planes[].stride",
                          "plane %u (offset %u, stride %u, %u rows of %llu bytes) does not fit the "
                          "frame's %llu bytes",
                          p, d->planes[p].offset, d->planes[p].stride, rows,
                          (unsigned long long)row_bytes, (unsigned long long)size);
  }
  return GPURES_OK;
}

/*
** a * (b / c), rounded to nearest, in double precision: exact while the result
** stays below 2^53 (a 285-year stream in microseconds), clamped beyond.
*/
static int64_t rescale(int64_t a, int64_t b, int64_t c) {
  double r = (double)a * (double)b / (double)c;
  r = r >= 0 ? r + 0.5 : r - 0.5;
  return r >= 9.2e18 ? INT64_MAX : r <= -9.2e18 ? -INT64_MAX : (int64_t)r;
}

/* The frame's pts in the encoder's timebase: its timing, else its sequence, else a count. */
static int64_t pts_of(const gpures_encoder *e, gpures_handle frame) {
  gpures_frame_meta m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  if (gpures_meta_get(frame, &m) == GPURES_OK) {
    if (m.flags & GPURES_META_HAS_TIMING)
      return rescale(m.pts, (int64_t)m.timebase_num * e->timebase.den,
                     (int64_t)m.timebase_den * e->timebase.num);
    if (m.flags & GPURES_META_HAS_SEQUENCE) return m.sequence;
  }
  return e->sent;
}

/* The AVFrame over the frame's memory, holding a reference of the frame. */
static int wrap_frame(gpures__op op, gpures_encoder *e, gpures_handle frame,
                      const gpures_dma_buf_handle_desc *d, uint32_t flags, int64_t pts) {
  held_frame *h = gpures__alloc(sizeof *h);
  if (!h) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a held frame");
  memset(h, 0, sizeof *h);
  int status = gpures__map_cache_get(op, &e->maps, frame, &h->map);
  if (status == GPURES_OK) status = check_bounds(op, e, d, h->map.size);
  if (status == GPURES_OK) status = gpures_clone(frame) == GPURES_OK ? GPURES_OK : gpures__refail(op, GPURES_E_STALE);
  if (status != GPURES_OK) {
    if (h->map.ptr) gpures__map_cache_put(&e->maps, &h->map);
    gpures__free(h);
    return status;
  }
  h->encoder = e;
  h->frame = frame;
  AVBufferRef *buf = e->av->buffer_create(h->map.ptr, (size_t)h->map.size, frame_let_go, h,
                                          AV_BUFFER_FLAG_READONLY);
  if (!buf) {
    frame_let_go(h, NULL);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for an AVBufferRef");
  }
  AVFrame *f = e->frame;
  uint8_t **data = &GPURES__AT(f, GPURES__AV_FRAME_DATA, uint8_t *);
  int *linesize = &GPURES__AT(f, GPURES__AV_FRAME_LINESIZE, int);
  for (uint32_t p = 0; p < d->num_planes; p++) {
    data[p] = h->map.ptr + d->planes[p].offset;
    linesize[p] = (int)d->planes[p].stride;
  }
  GPURES__AT(f, 96, uint8_t **) = data; /* extended_data */
  GPURES__AT(f, GPURES__AV_FRAME_WIDTH, int) = (int)e->width;
  GPURES__AT(f, GPURES__AV_FRAME_HEIGHT, int) = (int)e->height;
  GPURES__AT(f, GPURES__AV_FRAME_FORMAT, int) = e->pix_fmt;
  GPURES__AT(f, e->l->frame_pts, int64_t) = pts;
  GPURES__AT(f, e->l->frame_pict_type, int) = flags & GPURES_PACKET_KEY ? GPURES__AV_PICTURE_TYPE_I : 0;
  GPURES__AT(f, e->l->frame_buf, AVBufferRef *) = buf;
  return GPURES_OK;
}

/* Gives libavcodec one frame (0: the drain), checked already; `pts` NULL: the frame's own. */
static int send_one(gpures__op op, gpures_encoder *e, gpures_handle frame, uint32_t flags,
                    const gpures_dma_buf_handle_desc *d, const int64_t *pts) {
  if (!frame) {
    int r = e->av->send_frame(e->ctx, NULL);
    e->draining = true;
    return r < 0 && r != GPURES__AVERROR_EOF ? gpures__av_fail(op, "", "avcodec_send_frame", r)
                                             : GPURES_OK;
  }
  int status = wrap_frame(op, e, frame, d, flags, pts ? *pts : pts_of(e, frame));
  if (status != GPURES_OK) return status;
  int r = e->av->send_frame(e->ctx, e->frame); /* takes its own reference of the buffer */
  e->av->frame_unref(e->frame);
  if (r == GPURES__AVERROR_EAGAIN)
    return gpures__fail(op, GPURES_E_TIMED_OUT, "packets",
                        "the encoder has packets to give first: receive them, then send this "
                        "frame again");
  if (r < 0) return gpures__av_fail(op, "frame", "avcodec_send_frame", r);
  e->sent++;
  gpures__codec_count(GPURES__COUNT_ENCODED, 0);
  return GPURES_OK;
}

static int check_send(gpures__op op, const gpures_encoder *e, gpures_handle frame, uint32_t flags,
                      gpures_dma_buf_handle_desc *d) {
  if (flags & ~GPURES_PACKET_KEY)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x",
                        flags & ~GPURES_PACKET_KEY);
  if (e->draining || e->drain_queued)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame",
                        "the encoder was drained: it takes no more frames");
  return frame ? check_frame(op, e, frame, d) : GPURES_OK;
}

int gpures_encoder_send(gpures_encoder *e, gpures_handle frame, uint32_t flags) {
  gpures__op op = encoder_op("send a frame to the encoder");
  if (!e) return gpures__fail(op, GPURES_E_NULL_POINTER, "encoder", "encoder is null");
  gpures_dma_buf_handle_desc d;
  int status = check_send(op, e, frame, flags, &d);
  return status == GPURES_OK ? send_one(op, e, frame, flags, &d, NULL) : status;
}

static int queue_frame(gpures__op op, gpures_encoder *e, gpures_handle frame, uint32_t flags,
                       bool timed, int64_t pts) {
  if (!e) return gpures__fail(op, GPURES_E_NULL_POINTER, "encoder", "encoder is null");
  gpures_dma_buf_handle_desc d;
  int status = check_send(op, e, frame, flags, &d);
  if (status != GPURES_OK) return status;
  if (!gpures__grow((void **)&e->queued, &e->queued_capacity, e->num_queued, sizeof e->queued[0], 8,
                    1u << 16))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no room to queue another frame");
  if (frame && gpures_clone(frame) != GPURES_OK) return gpures__refail(op, GPURES_E_STALE);
  e->queued[e->num_queued++] = (struct queued_frame){frame, flags, timed, pts};
  e->drain_queued = !frame;
  return GPURES_OK;
}

int gpures_encoder_queue(gpures_encoder *e, gpures_handle frame, uint32_t flags) {
  return queue_frame(encoder_op("queue a frame for the encoder"), e, frame, flags, false, 0);
}

int gpures_encoder_queue_at(gpures_encoder *e, gpures_handle frame, uint32_t flags, int64_t pts) {
  gpures__op op = encoder_op("queue a frame for the encoder");
  if (!frame) return gpures__fail(op, GPURES_E_NULL_POINTER, "frame", "frame is 0; a drain has no pts");
  return queue_frame(op, e, frame, flags, true, pts);
}

/* Moves every packet libavcodec has ready to e->out. */
static int take_packets(gpures__op op, gpures_encoder *e) {
  for (;;) {
    if (!gpures__grow((void **)&e->out, &e->out_capacity, e->num_out, sizeof(AVPacket *), 8,
                      1u << 16))
      return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no room for another packet");
    AVPacket *pkt = e->av->packet_alloc();
    if (!pkt) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a packet");
    int r = e->av->receive_packet(e->ctx, pkt);
    if (r < 0) {
      e->av->packet_free(&pkt);
      return r == GPURES__AVERROR_EAGAIN || r == GPURES__AVERROR_EOF
                 ? GPURES_OK
                 : gpures__av_fail(op, "", "avcodec_receive_packet", r);
    }
    e->out[e->num_out++] = pkt;
  }
}

int gpures_encoder_run(gpures_encoder *e) {
  gpures__op op = encoder_op("encode queued frames");
  if (!e) return gpures__fail(op, GPURES_E_NULL_POINTER, "encoder", "encoder is null");
  int status = GPURES_OK;
  uint32_t done = 0;
  for (; done < e->num_queued && status == GPURES_OK; done++) {
    struct queued_frame q = e->queued[done];
    gpures_dma_buf_handle_desc d;
    status = q.frame ? check_frame(op, e, q.frame, &d) : GPURES_OK;
    const int64_t *pts = q.timed ? &q.pts : NULL;
    if (status == GPURES_OK) status = send_one(op, e, q.frame, q.flags, &d, pts);
    if (status == GPURES_E_TIMED_OUT) { /* packets first, then the same frame again */
      if ((status = take_packets(op, e)) == GPURES_OK) status = send_one(op, e, q.frame, q.flags, &d, pts);
    }
    (void)gpures_release(q.frame);
    if (status == GPURES_OK) status = take_packets(op, e);
  }
  for (uint32_t i = done; status != GPURES_OK && i < e->num_queued; i++) {
    (void)gpures_release(e->queued[i].frame); /* after a failure the rest is not encoded: told */
    if (!e->queued[i].frame) e->drain_queued = false; /* the drain did not happen: ask again */
  }
  e->num_queued = 0;
  gpures__run_outcome_keep(&e->last_run, status);
  return status;
}

int gpures_encoder_last_run(gpures_encoder *e) {
  gpures__op op = encoder_op("encode queued frames");
  if (!e) return gpures__fail(op, GPURES_E_NULL_POINTER, "encoder", "encoder is null");
  return gpures__run_outcome_tell(op, &e->last_run);
}

int gpures_encoder_receive(gpures_encoder *e, gpures_packet *out) {
  gpures__op op = encoder_op("receive a packet from the encoder");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = gpures__check_struct_size(op, "out.structSize", out->struct_size);
  if (status != GPURES_OK) return status;
  if (!e) return gpures__fail(op, GPURES_E_NULL_POINTER, "encoder", "encoder is null");
  gpures_packet p;
  memset(&p, 0, sizeof p);
  e->av->packet_unref(e->packet);
  int r = 0;
  if (e->num_out) { /* one run took: it becomes the current packet */
    e->av->packet_free(&e->packet);
    e->packet = e->out[0];
    memmove(e->out, e->out + 1, --e->num_out * sizeof e->out[0]);
  } else {
    r = e->av->receive_packet(e->ctx, e->packet);
  }
  if (r < 0 && r != GPURES__AVERROR_EAGAIN && r != GPURES__AVERROR_EOF)
    return gpures__av_fail(op, "", "avcodec_receive_packet", r);
  if (r >= 0) {
    AVPacket *k = e->packet;
    p.data = GPURES__AT(k, GPURES__AV_PACKET_DATA, const uint8_t *);
    p.size = (uint64_t)GPURES__AT(k, GPURES__AV_PACKET_SIZE, int);
    p.pts = GPURES__AT(k, GPURES__AV_PACKET_PTS, int64_t);
    p.dts = GPURES__AT(k, GPURES__AV_PACKET_DTS, int64_t);
    p.duration = GPURES__AT(k, GPURES__AV_PACKET_DURATION, int64_t);
    p.flags = GPURES__AT(k, GPURES__AV_PACKET_FLAGS, int) & GPURES__AV_PKT_FLAG_KEY ? GPURES_PACKET_KEY : 0;
  }
  uint32_t n = out->struct_size < sizeof p ? out->struct_size : (uint32_t)sizeof p;
  p.struct_size = n;
  memcpy(out, &p, n);
  return GPURES_OK;
}

int gpures_encoder_extradata(gpures_encoder *e, uint8_t *out, uint32_t capacity,
                             uint32_t *out_size) {
  gpures__op op = encoder_op("read the encoder's extradata");
  if (!e) return gpures__fail(op, GPURES_E_NULL_POINTER, "encoder", "encoder is null");
  if (!out_size) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSize", "outSize is null");
  const uint8_t *data = GPURES__AT(e->ctx, e->l->ctx_extradata, const uint8_t *);
  int size = GPURES__AT(e->ctx, e->l->ctx_extradata_size, int);
  *out_size = data && size > 0 ? (uint32_t)size : 0;
  if (*out_size > capacity)
    return gpures__fail(op, GPURES_E_BUFFER_TOO_SMALL, "capacity",
                        "the extradata has %u bytes; capacity is %u", *out_size, capacity);
  if (*out_size && !out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  if (*out_size) memcpy(out, data, *out_size);
  return GPURES_OK;
}

static int check_desc(gpures__op op, const gpures_encoder_desc *d) {
  if (d->flags & ~GPURES_ENCODER_GLOBAL_HEADER)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x",
                        d->flags & ~GPURES_ENCODER_GLOBAL_HEADER);
  if (!d->codec) return gpures__fail(op, GPURES_E_NULL_POINTER, "codec", "codec is null");
  const gpures_pixel_format_info *info = gpures_pixel_format_info_of(d->format);
  if (!info || !info->drm_fourcc)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "format",
                        "format %u is no PixelFormat of a DmaBufHandle", d->format);
  if (!d->width || !d->height || d->width > 16384 || d->height > 16384)
    return gpures__fail(op, d->width && d->height ? GPURES_E_INVALID_VALUE : GPURES_E_ZERO_SIZE,
                        d->width && d->width <= 16384 ? "height" : "width",
                        "the frames are %ux%u; 1 to 16384 each", d->width, d->height);
  if (!d->timebase_num != !d->timebase_den || d->timebase_num > INT32_MAX ||
      d->timebase_den > INT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, d->timebase_num ? "timebaseDen" : "timebaseNum",
                        "the timebase is %u/%u; both 0, or both 1 to 2^31 - 1", d->timebase_num,
                        d->timebase_den);
  if (!d->framerate_num != !d->framerate_den || d->framerate_num > INT32_MAX ||
      d->framerate_den > INT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE,
                        d->framerate_num ? "framerateDen" : "framerateNum",
                        "the frame rate is %u/%u; both 0, or both 1 to 2^31 - 1", d->framerate_num,
                        d->framerate_den);
  if (d->max_b_frames > MAX_B_FRAMES)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "maxBFrames", "maxBFrames is %u; at most %u",
                        d->max_b_frames, MAX_B_FRAMES);
  if (d->gop > INT32_MAX || d->threads > 64 || d->bitrate > INT64_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE,
                        d->gop > INT32_MAX ? "gop" : d->threads > 64 ? "threads" : "bitrate",
                        "gop, threads (at most 64) or bitrate is out of range");
  return GPURES_OK;
}

/* The context's settings, each an AVOption but the frame rate, which no option names. */
static int configure(gpures__op op, gpures_encoder *e, const gpures_encoder_desc *d) {
  const gpures__av *a = e->av;
  AVCodecContext *ctx = e->ctx;
  int r = a->opt_set_image_size(ctx, "video_size", (int)d->width, (int)d->height, 0);
  if (r >= 0) r = a->opt_set_pixel_fmt(ctx, "pixel_format", e->pix_fmt, 0);
  if (r >= 0) r = a->opt_set_q(ctx, "time_base", e->timebase, 0);
  if (r >= 0) r = a->opt_set_int(ctx, "bf", d->max_b_frames, 0);
  if (r >= 0 && d->gop) r = a->opt_set_int(ctx, "g", d->gop, 0);
  if (r >= 0 && d->bitrate) r = a->opt_set_int(ctx, "b", (int64_t)d->bitrate, 0);
  if (r >= 0 && d->threads) r = a->opt_set_int(ctx, "threads", d->threads, 0);
  if (r >= 0 && (d->flags & GPURES_ENCODER_GLOBAL_HEADER)) r = a->opt_set(ctx, "flags", "+global_header", 0);
  if (r < 0) return gpures__av_fail(op, "", "setting the encoder's options", r);
  if (d->framerate_num)
    GPURES__AT(ctx, e->l->ctx_framerate, gpures__av_rational) =
        (gpures__av_rational){(int)d->framerate_num, (int)d->framerate_den};
  return GPURES_OK;
}

/* avcodec_open2 with the caller's option string; an option the encoder does not know is refused. */
static int open_encoder(gpures__op op, gpures_encoder *e, const AVCodec *codec, const char *options) {
  const gpures__av *a = e->av;
  AVDictionary *dict = NULL;
  if (options && *options && a->dict_parse(&dict, options, "=", ":", 0) < 0) {
    a->dict_free(&dict);
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "options",
                        "options \"%.200s\" is not key=value:key=value", options);
  }
  int r = a->open(e->ctx, codec, &dict);
  const struct { const char *key, *value; } *left = dict ? a->dict_get(dict, "", NULL, AV_DICT_IGNORE_SUFFIX) : NULL;
  int status = GPURES_OK;
  if (r < 0)
    status = gpures__av_fail(op, "options", "avcodec_open2", r);
  else if (left)
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "options",
                          "the encoder has no option \"%.100s\"", left->key);
  a->dict_free(&dict);
  return status;
}

int gpures_encoder_create(const gpures_encoder_desc *desc, gpures_encoder **out) {
  gpures__op op = encoder_op("create an encoder");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  *out = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_encoder_desc dd;
  memset(&dd, 0, sizeof dd);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof dd, &dd);
  if (status == GPURES_OK) status = check_desc(op, &dd);
  const gpures__av *a = NULL;
  if (status == GPURES_OK) status = gpures__av_ready(op, &a);
  if (status == GPURES_OK) status = gpures_codec_find(dd.codec, GPURES_CODEC_ENCODER);
  if (status != GPURES_OK) return status == GPURES_E_UNSUPPORTED ? gpures__refail(op, status) : status;
  int pix_fmt = gpures__av_pix_fmt(dd.format);
  if (pix_fmt < 0)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format", "FFmpeg has no pixel format for %s",
                        gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, dd.format));
  gpures_encoder *e = gpures__alloc(sizeof *e);
  if (!e) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for an encoder");
  memset(e, 0, sizeof *e);
  gpures__map_cache_init(&e->maps, 64, GPURES_MAP_READ);
  e->av = a;
  e->l = a->layout;
  e->format = gpures_pixel_format_info_of(dd.format);
  e->pix_fmt = pix_fmt;
  e->width = dd.width;
  e->height = dd.height;
  e->timebase = dd.timebase_num ? (gpures__av_rational){(int)dd.timebase_num, (int)dd.timebase_den}
                                : (gpures__av_rational){1, 1000000};
  const AVCodec *codec = a->find_encoder(dd.codec);
  e->ctx = a->alloc_context(codec);
  e->packet = a->packet_alloc();
  e->frame = a->frame_alloc();
  if (!e->ctx || !e->packet || !e->frame)
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for libavcodec's objects");
  if (status == GPURES_OK) status = configure(op, e, &dd);
  if (status == GPURES_OK) status = open_encoder(op, e, codec, dd.options);
  if (status != GPURES_OK) {
    (void)gpures_encoder_destroy(e);
    return status;
  }
  *out = e;
  return GPURES_OK;
}

int gpures_encoder_destroy(gpures_encoder *e) {
  if (!e) return GPURES_OK;
  const gpures__av *a = e->av;
  for (uint32_t i = 0; i < e->num_queued; i++) (void)gpures_release(e->queued[i].frame);
  for (uint32_t i = 0; i < e->num_out; i++) a->packet_free(&e->out[i]);
  gpures__free(e->queued);
  gpures__free(e->out);
  a->free_context(&e->ctx); /* lets every held frame go: frame_let_go runs for each */
  a->packet_free(&e->packet);
  a->frame_free(&e->frame);
  gpures__map_cache_free(&e->maps);
  gpures__free(e);
  return GPURES_OK;
}

#endif /* __linux__ */
