/*
** test_codec.c: decoders and encoders over FFmpeg (Linux). Frames encoded
** losslessly from a pool and decoded again come back byte for byte, in slots
** of the decoder's own pool (no copy), with their timing, their visible
** rectangle and their order; a decoder whose frames are all held refuses a
** packet without taking it; an encoder holds a frame until libavcodec lets it
** go; a host without FFmpeg gets UNSUPPORTED naming it, and every bad value a
** caller can give is refused by name. Skipped, saying so, where libavcodec or
** libx264 is missing.
*/
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/mman.h>

#include "check.h"

#define W 200u /* not a multiple of 16: the coded frame is larger, and cropped */
#define H 150u
#define FRAMES 12

static gpures_pool *yuv_pool(uint32_t slots) {
  gpures_pool_desc d = {sizeof d, 0, GPURES_PF_YUV420P, W, H, slots, 0, 0};
  gpures_pool *p = NULL;
  CHECK_OK(gpures_pool_create(&d, &p));
  return p;
}

static gpures_pool_stats stats_of(gpures_pool *p) {
  gpures_pool_stats s = {.struct_size = sizeof s};
  CHECK_OK(gpures_pool_stats_get(p, &s));
  return s;
}

static gpures_codec_stats codec_stats(void) {
  gpures_codec_stats s = {.struct_size = sizeof s};
  CHECK_OK(gpures_codec_stats_get(&s));
  return s;
}

/* The sample of plane p at (x, y) of frame n: every frame and plane different. */
static uint8_t sample(int n, uint32_t p, uint32_t x, uint32_t y) {
  return (uint8_t)(x * 3 + y * 7 + (uint32_t)n * 11 + p * 50 + ((x ^ y) & 8) * 4);
}

typedef struct plane_view {
  uint8_t *ptr;
  uint64_t size;
  gpures_dma_buf_handle_desc desc;
} plane_view;

static plane_view view_of(gpures_handle frame, uint32_t flags) {
  plane_view v;
  memset(&v, 0, sizeof v);
  void *ptr = NULL;
  CHECK_OK(gpures_describe(frame, &v.desc, sizeof v.desc));
  CHECK_OK(gpures_map(frame, 0, flags, &ptr, &v.size));
  v.ptr = ptr;
  return v;
}

static void fill(gpures_handle frame, int n) {
  plane_view v = view_of(frame, GPURES_MAP_READ | GPURES_MAP_WRITE);
  for (uint32_t p = 0; p < 3; p++) {
    uint32_t w = p ? W / 2 : W, h = p ? H / 2 : H;
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++)
        v.ptr[v.desc.planes[p].offset + y * v.desc.planes[p].stride + x] = sample(n, p, x, y);
  }
  CHECK_OK(gpures_unmap(v.ptr));
  gpures_frame_meta m = {.struct_size = sizeof m, .flags = GPURES_META_HAS_TIMING,
                         .pts = 1000 + n * 40, .duration = 40, .timebase_num = 1,
                         .timebase_den = 1000};
  CHECK_OK(gpures_meta_set(frame, &m));
}

/* Whether the visible samples of a decoded frame are frame n's, every one. */
static bool holds_frame(gpures_handle frame, const gpures_rect *r, int n) {
  plane_view v = view_of(frame, GPURES_MAP_READ);
  bool same = true;
  for (uint32_t p = 0; p < 3 && same; p++) {
    uint32_t w = p ? W / 2 : W, h = p ? H / 2 : H, sub = p ? 2 : 1;
    for (uint32_t y = 0; y < h && same; y++)
      for (uint32_t x = 0; x < w && same; x++)
        same = v.ptr[v.desc.planes[p].offset + (r->y / sub + y) * v.desc.planes[p].stride +
                     r->x / sub + x] == sample(n, p, x, y);
  }
  CHECK_OK(gpures_unmap(v.ptr));
  return same;
}

typedef struct encoded {
  uint8_t *data[FRAMES + 4];
  gpures_packet packets[FRAMES + 4];
  int count;
} encoded;

static void take_packets(gpures_encoder *e, encoded *out) {
  for (;;) {
    gpures_packet p = {.struct_size = sizeof p};
    CHECK_OK(gpures_encoder_receive(e, &p));
    if (!p.size || out->count == FRAMES + 4) return;
    out->data[out->count] = malloc(p.size);
    memcpy(out->data[out->count], p.data, p.size);
    out->packets[out->count] = p;
    out->packets[out->count].data = out->data[out->count];
    out->count++;
  }
}

static gpures_encoder *lossless_encoder(uint32_t flags) {
  gpures_encoder_desc d = {.struct_size = sizeof d, .flags = flags, .codec = "libx264",
                           .options = "preset=ultrafast:qp=0", .format = GPURES_PF_YUV420P,
                           .width = W, .height = H, .timebase_num = 1, .timebase_den = 1000,
                           .framerate_num = 25, .framerate_den = 1, .gop = 5};
  gpures_encoder *e = NULL;
  CHECK_OK(gpures_encoder_create(&d, &e));
  return e;
}

/* FRAMES frames of a pool, encoded losslessly. */
static encoded encode_frames(void) {
  encoded out = {0};
  gpures_pool *pool = yuv_pool(4);
  gpures_encoder *e = lossless_encoder(0);
  for (int n = 0; e && n < FRAMES; n++) {
    gpures_handle frame = 0;
    CHECK_OK(gpures_pool_acquire(pool, 1000, 0, NULL, &frame));
    fill(frame, n);
    CHECK_OK(gpures_encoder_send(e, frame, 0));
    CHECK_OK(gpures_release(frame)); /* the encoder holds it as long as it reads it */
    take_packets(e, &out);
  }
  CHECK_OK(gpures_encoder_send(e, 0, 0));
  take_packets(e, &out);
  CHECK_OK(gpures_encoder_destroy(e));
  CHECK(stats_of(pool).in_use == 0);
  CHECK_OK(gpures_pool_close(pool));
  return out;
}

static void free_encoded(encoded *e) {
  for (int i = 0; i < e->count; i++) free(e->data[i]);
}

static gpures_decoder *h264_decoder(uint32_t slots) {
  gpures_decoder_desc d = {.struct_size = sizeof d, .codec = "h264", .slots = slots,
                           .timebase_num = 1, .timebase_den = 1000};
  gpures_decoder *dec = NULL;
  CHECK_OK(gpures_decoder_create(&d, &dec));
  return dec;
}

static void frames_encoded_losslessly_decode_to_the_same_bytes_in_pool_slots(void) {
  gpures_codec_stats before = codec_stats();
  encoded enc = encode_frames();
  CHECK(enc.count == FRAMES);
  CHECK(enc.packets[0].flags & GPURES_PACKET_KEY);
  gpures_decoder *dec = h264_decoder(0);
  int got = 0;
  uint64_t ids[FRAMES] = {0};
  for (int i = 0; i <= enc.count; i++) {
    CHECK_OK(gpures_decoder_send(dec, i < enc.count ? &enc.packets[i] : NULL));
    for (;;) {
      gpures_handle frame = 0;
      CHECK_OK(gpures_decoder_receive(dec, &frame));
      if (!frame) break;
      uint32_t kind = 0;
      CHECK_OK(gpures_kind(frame, &kind));
      CHECK(kind == GPURES_KIND_DMA_BUF_HANDLE);
      gpures_frame_meta m = {.struct_size = sizeof m};
      CHECK_OK(gpures_meta_get(frame, &m));
      CHECK(m.flags & GPURES_META_HAS_SEQUENCE && m.sequence == got);
      CHECK(m.flags & GPURES_META_HAS_TIMING && m.pts == 1000 + got * 40);
      CHECK(m.timebase_num == 1 && m.timebase_den == 1000);
      CHECK(m.flags & GPURES_META_HAS_VISIBLE);
      CHECK(m.visible.x == 0 && m.visible.y == 0 && m.visible.width == W && m.visible.height == H);
      gpures_dma_buf_handle_desc d = {.struct_size = sizeof d};
      CHECK_OK(gpures_describe(frame, &d, sizeof d));
      CHECK(d.width >= W && d.height > H); /* the coded frame, aligned, with rows to spare */
      CHECK(got < FRAMES && holds_frame(frame, &m.visible, got));
      if (got < FRAMES) CHECK_OK(gpures_buffer_id(frame, &ids[got]));
      CHECK_OK(gpures_release(frame));
      got++;
    }
  }
  CHECK(got == FRAMES);
  /* Slots go round: far fewer buffers than frames. */
  int distinct = 0;
  for (int i = 0; i < FRAMES; i++) {
    int j = 0;
    while (j < i && ids[j] != ids[i]) j++;
    distinct += j == i;
  }
  CHECK(distinct < FRAMES);
  gpures_codec_stats after = codec_stats();
  CHECK(after.decoded - before.decoded == FRAMES);
  CHECK(after.encoded - before.encoded == FRAMES);
  CHECK(after.copied_bytes == before.copied_bytes); /* h264 decodes into our slots */
  CHECK_OK(gpures_decoder_destroy(dec));
  free_encoded(&enc);
}

static void a_decoder_whose_slots_are_all_held_refuses_a_packet_without_taking_it(void) {
  encoded enc = encode_frames();
  gpures_decoder *dec = h264_decoder(3);
  gpures_handle held[FRAMES] = {0};
  int got = 0, i = 0, refused = 0;
  while (i < enc.count && refused == 0) {
    int status = gpures_decoder_send(dec, &enc.packets[i]);
    if (status == GPURES_E_TIMED_OUT) {
      CHECK(strcmp(gpures_last_error_field(), "slots") == 0);
      refused++;
      break;
    }
    CHECK_OK(status);
    i++;
    gpures_handle frame = 0;
    do {
      CHECK_OK(gpures_decoder_receive(dec, &frame));
      if (frame) held[got++] = frame;
    } while (frame);
  }
  CHECK(refused == 1);
  /* A host that waits with no thread asks for the pool's notice: none while every slot is held. */
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  CHECK_OK(gpures_decoder_notify(dec, q, 42));
  gpures_event events[8];
  uint32_t n = 9;
  CHECK_OK(gpures_event_queue_poll(q, events, 8, &n));
  CHECK(n == 0);
  /* Released, the frames free their slots (the notice says so), and the same packet is taken. */
  for (int k = 0; k < got; k++) CHECK_OK(gpures_release(held[k]));
  CHECK_OK(gpures_event_queue_poll(q, events, 8, &n));
  CHECK(n == 1 && events[0].type == GPURES_EVENT_SLOT_FREE && events[0].token == 42 &&
        events[0].status == GPURES_OK);
  CHECK_OK(gpures_decoder_notify_cancel(dec, q, 42, GPURES_E_CANCELLED)); /* posted: a no-op */
  CHECK_OK(gpures_event_queue_close(q));
  int next = got;
  for (; i <= enc.count; i++) {
    CHECK_OK(gpures_decoder_send(dec, i < enc.count ? &enc.packets[i] : NULL));
    gpures_handle frame = 0;
    do {
      CHECK_OK(gpures_decoder_receive(dec, &frame));
      if (!frame) break;
      gpures_frame_meta m = {.struct_size = sizeof m};
      CHECK_OK(gpures_meta_get(frame, &m));
      CHECK(m.sequence == next);
      CHECK(holds_frame(frame, &m.visible, next)); /* nothing lost, nothing corrupted */
      CHECK_OK(gpures_release(frame));
      next++;
    } while (frame);
  }
  CHECK(next == FRAMES);
  CHECK_OK(gpures_decoder_destroy(dec));
  free_encoded(&enc);
}

/* The host's way: queue (copies), run (decodes, any thread), receive (takes what ran). */
static void queued_work_runs_later_and_a_run_short_of_slots_keeps_the_rest_queued(void) {
  gpures_pool *pool = yuv_pool(4);
  gpures_encoder *e = lossless_encoder(0);
  for (int n = 0; n < FRAMES; n++) {
    gpures_handle frame = 0;
    CHECK_OK(gpures_pool_acquire(pool, 1000, 0, NULL, &frame));
    fill(frame, n);
    CHECK_OK(gpures_encoder_queue(e, frame, 0));
    CHECK_OK(gpures_release(frame));
    if (n % 3 == 2) CHECK_OK(gpures_encoder_run(e)); /* frees slots for the next acquires */
  }
  CHECK_OK(gpures_encoder_queue(e, 0, 0));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "frame", gpures_encoder_queue(e, 0, 0));
  CHECK_OK(gpures_encoder_run(e));
  encoded enc = {0};
  take_packets(e, &enc);
  CHECK(enc.count == FRAMES);
  CHECK_OK(gpures_encoder_destroy(e));
  CHECK(stats_of(pool).in_use == 0);
  CHECK_OK(gpures_pool_close(pool));

  gpures_decoder *dec = h264_decoder(3);
  for (int i = 0; i < enc.count; i++) CHECK_OK(gpures_decoder_queue(dec, &enc.packets[i]));
  free_encoded(&enc); /* queued packets are the decoder's copies */
  CHECK_OK(gpures_decoder_queue(dec, NULL));
  gpures_handle held[FRAMES] = {0};
  int got = 0;
  CHECK_FAILS(GPURES_E_TIMED_OUT, "slots", gpures_decoder_run(dec)); /* nothing released yet */
  for (gpures_handle f = 0; gpures_decoder_receive(dec, &f) == GPURES_OK && f;) held[got++] = f;
  CHECK(got > 0 && got < FRAMES);
  for (int k = 0; k < got; k++) {
    gpures_frame_meta m = {.struct_size = sizeof m};
    CHECK_OK(gpures_meta_get(held[k], &m));
    CHECK(m.sequence == k && holds_frame(held[k], &m.visible, k));
    CHECK_OK(gpures_release(held[k]));
  }
  for (int runs = 0; got < FRAMES && runs < FRAMES; runs++) {
    int status = gpures_decoder_run(dec);
    CHECK(status == GPURES_OK || status == GPURES_E_TIMED_OUT);
    for (gpures_handle f = 0; gpures_decoder_receive(dec, &f) == GPURES_OK && f; got++) {
      gpures_frame_meta m = {.struct_size = sizeof m};
      CHECK_OK(gpures_meta_get(f, &m));
      CHECK(m.sequence == got && holds_frame(f, &m.visible, got));
      CHECK_OK(gpures_release(f));
    }
  }
  CHECK(got == FRAMES);
  CHECK_OK(gpures_decoder_destroy(dec));
}

/* One slot, one handle, three timestamps: the pts given wins over the frame's metadata. */
static void a_frame_queued_at_a_pts_is_encoded_at_that_pts(void) {
  gpures_pool *pool = yuv_pool(2);
  gpures_encoder *e = lossless_encoder(0);
  gpures_handle frame = 0;
  CHECK_OK(gpures_pool_acquire(pool, 1000, 0, NULL, &frame));
  fill(frame, 0); /* its metadata says pts 0 */
  const int64_t at[3] = {7000, 7040, 7080};
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_encoder_queue_at(e, frame, 0, at[i]));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "frame", gpures_encoder_queue_at(e, 0, 0, 5));
  CHECK_OK(gpures_encoder_queue(e, 0, 0));
  CHECK_OK(gpures_encoder_run(e));
  encoded enc = {0};
  take_packets(e, &enc);
  CHECK(enc.count == 3);
  for (int i = 0; i < enc.count && i < 3; i++) CHECK(enc.packets[i].pts == at[i]);
  free_encoded(&enc);
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_encoder_destroy(e));
  CHECK(stats_of(pool).in_use == 0);
  CHECK_OK(gpures_pool_close(pool));
}

static void an_encoder_holds_a_frame_until_libavcodec_lets_it_go(void) {
  gpures_pool *pool = yuv_pool(8);
  gpures_encoder_desc d = {.struct_size = sizeof d, .codec = "libx264", .options = "preset=medium",
                           .format = GPURES_PF_YUV420P, .width = W, .height = H};
  gpures_encoder *e = NULL;
  CHECK_OK(gpures_encoder_create(&d, &e)); /* lookahead: x264 keeps frames before it codes them */
  for (int n = 0; n < 3; n++) {
    gpures_handle frame = 0;
    CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
    fill(frame, n);
    CHECK_OK(gpures_encoder_send(e, frame, n == 0 ? GPURES_PACKET_KEY : 0));
    CHECK_OK(gpures_release(frame));
  }
  CHECK_OK(gpures_encoder_destroy(e));
  CHECK(stats_of(pool).in_use == 0); /* every slot home once the encoder is gone */
  CHECK_OK(gpures_pool_close(pool));
}

static void an_encoder_refuses_frames_it_cannot_read_in_place(void) {
  gpures_encoder *e = lossless_encoder(0);
  gpures_pool_desc other = {sizeof other, 0, GPURES_PF_YUV420P, W + 2, H, 1, 0, 0};
  gpures_pool *pool = NULL;
  CHECK_OK(gpures_pool_create(&other, &pool));
  gpures_handle frame = 0;
  CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "frame.width", gpures_encoder_send(e, frame, 0));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_encoder_send(e, frame, 0x80));
  CHECK_OK(gpures_release(frame));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_encoder_send(e, frame, 0));
  gpures_handle fence = 0;
  CHECK_OK(gpures_cpu_fence_new(&fence));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "frame", gpures_encoder_send(e, fence, 0));
  CHECK_OK(gpures_release(fence));
  CHECK_OK(gpures_encoder_send(e, 0, 0));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "frame", gpures_encoder_send(e, 0, 0)); /* drained */
  CHECK(stats_of(pool).in_use == 0);
  CHECK_OK(gpures_pool_close(pool));
  CHECK_OK(gpures_encoder_destroy(e));
}

/* A DmaBufHandle of YU12 over a fresh sealed memfd of `size` bytes, as a peer could send it. */
static gpures_handle peer_frame(uint64_t size, uint64_t modifier, uint32_t planes, uint32_t stride,
                                uint32_t height) {
  int fd = memfd_create("peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
  CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  gpures_dma_buf_handle_desc d = {.struct_size = sizeof d, .num_fds = 1, .fds = {fd, -1, -1, -1},
                                  .fourcc = 0x32315559 /* YU12 */, .modifier = modifier,
                                  .width = W, .height = height, .num_planes = planes};
  /* Planes one after another when rows are few: row 0 of each past the last row of the one before. */
  for (uint32_t p = 0; p < planes; p++)
    d.planes[p] = (gpures_dma_buf_plane){0, p ? (uint32_t)(stride * (uint64_t)(height - 1)) + 256 * p : 0, stride};
  gpures_handle h = 0;
  gpures_create_options o = {.struct_size = sizeof o, .flags = GPURES_CREATE_TAKE_OWNERSHIP};
  CHECK_OK(gpures_create(GPURES_KIND_DMA_BUF_HANDLE, &d, &o, &h));
  return h;
}

/* A peer's descriptor is believed only as far as the memory behind it holds. */
static void an_encoder_refuses_a_peers_frame_that_its_memory_does_not_back(void) {
  gpures_encoder_desc ed = {.struct_size = sizeof ed, .codec = "libx264", .options = "preset=ultrafast",
                            .format = GPURES_PF_YUV420P, .width = W, .height = H};
  gpures_encoder *e = NULL;
  CHECK_OK(gpures_encoder_create(&ed, &e));
  gpures_handle tiled = peer_frame(1 << 20, 0x0100000000000001ull, 1, 256, H);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "frame.numPlanes", gpures_encoder_send(e, tiled, 0));
  CHECK_OK(gpures_release(tiled));
  /* A stride that reads as negative in an int: libavcodec would read before the mapping. */
  CHECK_OK(gpures_encoder_destroy(e));
  ed.height = 2;
  CHECK_OK(gpures_encoder_create(&ed, &e));
  gpures_handle wide = peer_frame((2ull << 30) + (1 << 20), 0, 3, 0x80000000u, 2);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "frame.planes[].stride", gpures_encoder_send(e, wide, 0));
  CHECK_OK(gpures_release(wide));
  CHECK_OK(gpures_encoder_destroy(e));
}

static void bad_descriptors_and_packets_are_refused_by_name(void) {
  {
    gpures_decoder *fresh = h264_decoder(4);
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "decoder", gpures_decoder_notify(fresh, 1, 1)); /* no pool yet */
    CHECK_OK(gpures_decoder_notify_cancel(fresh, 1, 1, GPURES_E_CANCELLED));
    CHECK_FAILS(GPURES_E_NULL_POINTER, "decoder", gpures_decoder_notify(NULL, 1, 1));
    CHECK_OK(gpures_decoder_destroy(fresh));
  }
  gpures_decoder *dec = NULL;
  gpures_decoder_desc d = {.struct_size = sizeof d, .codec = "h264"};
  d.slots = 1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "slots", gpures_decoder_create(&d, &dec));
  d.slots = 0, d.threads = 65;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "threads", gpures_decoder_create(&d, &dec));
  d.threads = 0, d.timebase_num = 1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "timebaseDen", gpures_decoder_create(&d, &dec));
  d.timebase_num = 0, d.extradata_size = 8;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "extradata", gpures_decoder_create(&d, &dec));
  d.extradata_size = (1u << 20) + 1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "extradataSize", gpures_decoder_create(&d, &dec));
  d.extradata_size = 0, d.codec = "no-such-codec";
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "codec", gpures_decoder_create(&d, &dec));
  d.codec = "libx264"; /* an encoder, not a decoder */
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "codec", gpures_decoder_create(&d, &dec));
  d.struct_size = 1u << 30;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_decoder_create(&d, &dec));
  CHECK(dec == NULL);

  dec = h264_decoder(0);
  uint8_t junk[256];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 37 + 1);
  gpures_packet p = {.struct_size = sizeof p, .data = junk, .size = sizeof junk};
  p.flags = 0x10;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet.flags", gpures_decoder_send(dec, &p));
  p.flags = 0, p.size = 1ull << 31;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet.size", gpures_decoder_send(dec, &p));
  p.size = 4, p.data = NULL;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "packet.data", gpures_decoder_send(dec, &p));
  p.data = junk, p.duration = -1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet.duration", gpures_decoder_send(dec, &p));
  /* Junk is no crash: refused as data, or read and thrown away; no frame comes of it. */
  p.duration = 0, p.size = sizeof junk;
  int status = gpures_decoder_send(dec, &p);
  CHECK(status == GPURES_OK || (status == GPURES_E_INVALID_VALUE &&
                                strcmp(gpures_last_error_field(), "packet") == 0));
  gpures_handle frame = 1;
  CHECK_OK(gpures_decoder_receive(dec, &frame));
  CHECK(frame == 0);
  CHECK_OK(gpures_decoder_destroy(dec));

  gpures_encoder *e = NULL;
  gpures_encoder_desc ed = {.struct_size = sizeof ed, .codec = "libx264",
                            .format = GPURES_PF_YUV420P, .width = W, .height = H};
  ed.options = "preset=ultrafast:no_such_option=1";
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options", gpures_encoder_create(&ed, &e));
  ed.options = NULL, ed.width = 0;
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "width", gpures_encoder_create(&ed, &e));
  ed.width = W, ed.format = GPURES_PF_RGBA_F32; /* no DRM fourcc */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "format", gpures_encoder_create(&ed, &e));
  ed.format = GPURES_PF_YUV420P, ed.max_b_frames = 17;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "maxBFrames", gpures_encoder_create(&ed, &e));
  ed.max_b_frames = 0, ed.codec = "h264_no_such";
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "codec", gpures_encoder_create(&ed, &e));
  CHECK(e == NULL);
}

/* dav1d allocates its own frames: each is copied into a slot, and one that finds none (threads give
** several frames for one packet) is kept, not lost. */
static void a_copying_decoder_short_of_slots_keeps_the_frame_it_could_not_copy(void) {
  if (gpures_codec_find("libaom-av1", GPURES_CODEC_ENCODER) != GPURES_OK ||
      gpures_codec_find("libdav1d", GPURES_CODEC_DECODER) != GPURES_OK) {
    printf("skip (no libaom-av1 or libdav1d)\n");
    return;
  }
  gpures_encoder_desc ed = {.struct_size = sizeof ed, .codec = "libaom-av1",
                            .options = "usage=realtime:cpu-used=8", .format = GPURES_PF_YUV420P,
                            .width = W, .height = H, .timebase_num = 1, .timebase_den = 1000,
                            .framerate_num = 25, .framerate_den = 1};
  gpures_encoder *e = NULL;
  CHECK_OK(gpures_encoder_create(&ed, &e));
  gpures_pool *pool = yuv_pool(FRAMES);
  for (int n = 0; e && n < FRAMES; n++) {
    gpures_handle frame = 0;
    CHECK_OK(gpures_pool_acquire(pool, 1000, 0, NULL, &frame));
    fill(frame, n);
    CHECK_OK(gpures_encoder_queue(e, frame, 0));
    CHECK_OK(gpures_release(frame));
  }
  CHECK_OK(gpures_encoder_queue(e, 0, 0));
  CHECK_OK(gpures_encoder_run(e));
  encoded enc = {0};
  take_packets(e, &enc);
  CHECK(enc.count == FRAMES);
  CHECK_OK(gpures_encoder_destroy(e));
  CHECK_OK(gpures_pool_close(pool));

  gpures_decoder_desc dd = {.struct_size = sizeof dd, .codec = "libdav1d", .slots = 2, .threads = 4,
                            .timebase_num = 1, .timebase_den = 1000};
  gpures_decoder *dec = NULL;
  CHECK_OK(gpures_decoder_create(&dd, &dec));
  gpures_codec_stats before = codec_stats();
  for (int i = 0; i < enc.count; i++) CHECK_OK(gpures_decoder_queue(dec, &enc.packets[i]));
  CHECK_OK(gpures_decoder_queue(dec, NULL));
  free_encoded(&enc);
  int got = 0, stalls = 0;
  gpures_handle held[2] = {0};
  for (int runs = 0; got < FRAMES && runs < 4 * FRAMES; runs++) {
    int ran = gpures_decoder_run(dec), status;
    CHECK(ran == GPURES_OK || ran == GPURES_E_TIMED_OUT);
    stalls += ran == GPURES_E_TIMED_OUT;
    for (gpures_handle f = 0;;) {
      status = gpures_decoder_receive(dec, &f);
      CHECK(status == GPURES_OK || status == GPURES_E_TIMED_OUT);
      if (status != GPURES_OK || !f) break;
      gpures_frame_meta m = {.struct_size = sizeof m};
      CHECK_OK(gpures_meta_get(f, &m));
      CHECK(m.sequence == got); /* none skipped: the kept frame comes first */
      if (held[got % 2]) CHECK_OK(gpures_release(held[got % 2]));
      held[got % 2] = f; /* two held at once: the pool of 2 is full until the next release */
      got++;
    }
    if ((ran == GPURES_E_TIMED_OUT || status == GPURES_E_TIMED_OUT) && held[got % 2]) {
      CHECK_OK(gpures_release(held[got % 2]));
      held[got % 2] = 0;
    }
  }
  CHECK(got == FRAMES);
  CHECK(stalls > 0);
  CHECK(codec_stats().copied_frames - before.copied_frames == FRAMES);
  for (int i = 0; i < 2; i++)
    if (held[i]) CHECK_OK(gpures_release(held[i]));
  CHECK_OK(gpures_decoder_destroy(dec));
}

/* A stream with bytes flipped (a lossy link, a hostile peer): no crash, no slot kept, no frame that lies. */
static void a_corrupted_stream_decodes_without_harm(void) {
  encoded enc = encode_frames();
  uint32_t seed = 12345;
  for (int round = 0; round < 20; round++) {
    gpures_decoder *dec = h264_decoder(0);
    for (int i = 0; i <= enc.count; i++) {
      if (i < enc.count) {
        uint8_t *copy = malloc(enc.packets[i].size);
        memcpy(copy, enc.packets[i].data, enc.packets[i].size);
        for (int flips = 0; flips < 1 + round; flips++) {
          seed = seed * 1103515245u + 12345u;
          copy[(seed >> 8) % enc.packets[i].size] ^= (uint8_t)(1u << (seed & 7));
        }
        gpures_packet p = enc.packets[i];
        p.data = copy;
        int status = gpures_decoder_send(dec, &p);
        CHECK(status == GPURES_OK || (status == GPURES_E_INVALID_VALUE &&
                                      strcmp(gpures_last_error_field(), "packet") == 0));
        free(copy);
      } else {
        CHECK_OK(gpures_decoder_send(dec, NULL));
      }
      for (;;) {
        gpures_handle frame = 0;
        int status = gpures_decoder_receive(dec, &frame);
        CHECK(status == GPURES_OK || status == GPURES_E_INVALID_VALUE);
        if (status != GPURES_OK || !frame) break;
        gpures_frame_meta m = {.struct_size = sizeof m};
        gpures_dma_buf_handle_desc d = {.struct_size = sizeof d};
        CHECK_OK(gpures_meta_get(frame, &m));
        CHECK_OK(gpures_describe(frame, &d, sizeof d));
        CHECK(m.visible.x + m.visible.width <= d.width && m.visible.y + m.visible.height <= d.height);
        CHECK_OK(gpures_release(frame));
      }
    }
    CHECK_OK(gpures_decoder_destroy(dec));
  }
  free_encoded(&enc);
}

static void an_encoder_with_a_global_header_gives_its_extradata(void) {
  gpures_encoder *e = lossless_encoder(GPURES_ENCODER_GLOBAL_HEADER);
  uint32_t size = 0;
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_encoder_extradata(e, NULL, 0, &size));
  CHECK(size > 8);
  uint8_t buf[512];
  CHECK_OK(gpures_encoder_extradata(e, buf, sizeof buf, &size));
  CHECK(buf[0] == 0 && buf[1] == 0 && (buf[2] == 1 || (buf[2] == 0 && buf[3] == 1))); /* SPS, Annex B */
  CHECK_OK(gpures_encoder_destroy(e));
}

/* In a child (the library opens FFmpeg once per process): a path that is no libavcodec. */
static void without_ffmpeg_the_codec_calls_say_what_is_missing(void) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("GPURES_LIBAVCODEC", "/nonexistent/libavcodec.so.62", 1);
    gpures_codec_info info = {.struct_size = sizeof info};
    int ok = gpures_codec_library(&info) == GPURES_E_UNSUPPORTED &&
             strstr(gpures_last_error(), "/nonexistent/libavcodec.so.62") != NULL;
    gpures_decoder_desc d = {.struct_size = sizeof d, .codec = "h264"};
    gpures_decoder *dec = NULL;
    ok = ok && gpures_decoder_create(&d, &dec) == GPURES_E_UNSUPPORTED && dec == NULL;
    /* Everything else still works. */
    gpures_pool_desc pd = {sizeof pd, 0, GPURES_PF_YUV420P, 16, 16, 1, 0, 0};
    gpures_pool *pool = NULL;
    ok = ok && gpures_pool_create(&pd, &pool) == GPURES_OK && gpures_pool_close(pool) == GPURES_OK;
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
  RUN(without_ffmpeg_the_codec_calls_say_what_is_missing);
  gpures_codec_info info = {.struct_size = sizeof info};
  if (gpures_codec_library(&info) != GPURES_OK ||
      gpures_codec_find("libx264", GPURES_CODEC_ENCODER) != GPURES_OK ||
      gpures_codec_find("h264", GPURES_CODEC_DECODER) != GPURES_OK) {
    printf("skipped: no libavcodec with libx264 and h264 here (%s)\n", gpures_last_error());
    return check_finish("test_codec");
  }
  printf("# %s: libavcodec %u.%u\n", info.library, info.avcodec_version >> 16,
         (info.avcodec_version >> 8) & 255);
  RUN(frames_encoded_losslessly_decode_to_the_same_bytes_in_pool_slots);
  RUN(a_decoder_whose_slots_are_all_held_refuses_a_packet_without_taking_it);
  RUN(queued_work_runs_later_and_a_run_short_of_slots_keeps_the_rest_queued);
  RUN(a_frame_queued_at_a_pts_is_encoded_at_that_pts);
  RUN(an_encoder_holds_a_frame_until_libavcodec_lets_it_go);
  RUN(an_encoder_refuses_frames_it_cannot_read_in_place);
  RUN(an_encoder_refuses_a_peers_frame_that_its_memory_does_not_back);
  RUN(bad_descriptors_and_packets_are_refused_by_name);
  RUN(a_copying_decoder_short_of_slots_keeps_the_frame_it_could_not_copy);
  RUN(a_corrupted_stream_decodes_without_harm);
  RUN(an_encoder_with_a_global_header_gives_its_extradata);
  return check_finish("test_codec");
}
