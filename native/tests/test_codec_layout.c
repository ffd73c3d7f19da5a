/*
** test_codec_layout.c: the offsets gpures reads FFmpeg's structs at are the
** loaded library's (Linux). Each field is found without a header, by what
** libavcodec itself puts in it: a rawvideo decode of a packet with known pts,
** dts, duration, aspect and colour gives an AVFrame in which each value sits
** in exactly one field; parameters with known extradata, copied into a
** context, show where the context keeps it; the level x264 gives a stream
** shows that the frame rate gpures wrote is the one it read. Run against
** whichever libavcodec gpures opens: Debian's 59 in CI, any other through
** GPURES_LIBAVCODEC. Skipped without FFmpeg.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

GPURES_API int gpures__test_codec_offset(const char *field);

typedef struct { int num, den; } rational;

static void *lib;
static int pipe_fds[2]; /* write() tells whether an address can be read, without a fault */

#define SYM(name) ((name##_t *)dlsym(lib, #name))
typedef void *avcodec_find_decoder_by_name_t(const char *);
typedef void *avcodec_alloc_context3_t(void *);
typedef int avcodec_open2_t(void *, void *, void *);
typedef void avcodec_free_context_t(void **);
typedef int av_opt_set_int_t(void *, const char *, int64_t, int);
typedef int av_opt_set_image_size_t(void *, const char *, int, int, int);
typedef int av_opt_set_q_t(void *, const char *, rational, int);
typedef void *av_packet_alloc_t(void);
typedef int av_new_packet_t(void *, int);
typedef void av_packet_free_t(void **);
typedef int avcodec_send_packet_t(void *, const void *);
typedef int avcodec_receive_frame_t(void *, void *);
typedef void *av_frame_alloc_t(void);
typedef void av_frame_free_t(void **);
typedef void *avcodec_parameters_alloc_t(void);
typedef int avcodec_parameters_to_context_t(void *, const void *);
typedef void avcodec_parameters_free_t(void **);
typedef void *av_malloc_t(size_t);
typedef int avcodec_default_get_buffer2_t(void *, void *, int);

/*
** How far into an AVFrame the searches look: past every field gpures reads
** (the farthest ends at 416) and inside the smallest AVFrame (472 bytes, 59).
*/
#define FRAME_SPAN 440

/* Offsets in [0, span) where the 8-byte value v sits. */
static int find64(const uint8_t *p, int span, int64_t v, int *all, int max) {
  int n = 0;
  for (int o = 0; o + 8 <= span; o += 8) {
    int64_t x;
    memcpy(&x, p + o, 8);
    if (x == v && n < max) all[n++] = o;
  }
  return n;
}

/* Whether the 8 bytes at address + 8 can be read: the second member of what address points to. */
static bool readable_after(uintptr_t address) {
  if (address < 0x10000 || address >= (1ull << 47)) return false;
  const void *p = (const void *)(address + 8);
  return write(pipe_fds[1], p, 8) == 8 && read(pipe_fds[0], (char[8]){0}, 8) == 8;
}

static void *raw_decoder(void) {
  void *codec = SYM(avcodec_find_decoder_by_name)("rawvideo");
  void *ctx = SYM(avcodec_alloc_context3)(codec);
  CHECK(SYM(av_opt_set_image_size)(ctx, "video_size", 64, 48, 0) >= 0);
  CHECK(SYM(av_opt_set_int)(ctx, "pixel_format", 0 /* yuv420p */, 0) >= 0);
  CHECK(SYM(av_opt_set_int)(ctx, "color_range", 2, 0) >= 0);
  CHECK(SYM(av_opt_set_int)(ctx, "color_primaries", 9, 0) >= 0);
  CHECK(SYM(av_opt_set_int)(ctx, "color_trc", 16, 0) >= 0);
  CHECK(SYM(av_opt_set_int)(ctx, "colorspace", 10, 0) >= 0);
  CHECK(SYM(av_opt_set_q)(ctx, "aspect", (rational){7, 5}, 0) >= 0);
  CHECK(SYM(avcodec_open2)(ctx, codec, NULL) == 0);
  return ctx;
}

static void a_decoded_frame_has_each_value_where_the_layout_says(void) {
  void *ctx = raw_decoder();
  uint8_t *pkt = SYM(av_packet_alloc)();
  CHECK(SYM(av_new_packet)(pkt, 64 * 48 * 3 / 2) == 0);
  const int64_t pts = 0x1234567890, dts = 0x1234567000, duration = 0x2345678901;
  memcpy(pkt + 8, &pts, 8), memcpy(pkt + 16, &dts, 8), memcpy(pkt + 64, &duration, 8);
  CHECK(SYM(avcodec_send_packet)(ctx, pkt) == 0);
  uint8_t *f = SYM(av_frame_alloc)();
  CHECK(SYM(avcodec_receive_frame)(ctx, f) == 0);
  CHECK(*(int *)(f + 104) == 64 && *(int *)(f + 108) == 48 && *(int *)(f + 116) == 0);
  int at[4], n = find64(f, FRAME_SPAN, pts, at, 4);
  /* pts, then best_effort_timestamp: both pts here; pts comes first in every major. */
  CHECK(n == 2 && at[0] == gpures__test_codec_offset("frame.pts"));
  CHECK(n == 2 && at[1] == gpures__test_codec_offset("frame.best_effort_timestamp"));
  n = find64(f, FRAME_SPAN, duration, at, 4);
  CHECK(n == 1 && at[0] == gpures__test_codec_offset("frame.duration"));
  int colour = gpures__test_codec_offset("frame.color_range");
  const int *c = (const int *)(f + colour);
  CHECK(c[0] == 2 && c[1] == 9 && c[2] == 16 && c[3] == 10);
  /* pict_type (I for raw frames) sits right before sample_aspect_ratio. */
  int pict = gpures__test_codec_offset("frame.pict_type");
  CHECK(*(int *)(f + pict) == 1 && *(int *)(f + pict + 4) == 7 && *(int *)(f + pict + 8) == 5);
  /* buf[0] is an AVBufferRef whose data (its second member) is data[0]. */
  uint8_t *buf0 = *(uint8_t **)(f + gpures__test_codec_offset("frame.buf"));
  uint8_t *data0 = *(uint8_t **)f;
  CHECK(readable_after((uintptr_t)buf0) && *(uint8_t **)(buf0 + 8) == data0);
  /* And no other field holds that reference (unknown pointers are compared, never read through). */
  int buf_hits = 0;
  for (int o = 120; o + 8 <= FRAME_SPAN; o += 8) buf_hits += *(uint8_t **)(f + o) == buf0;
  CHECK(buf_hits == 1);
  SYM(av_frame_free)((void **)&f);
  SYM(av_packet_free)((void **)&pkt);
  SYM(avcodec_free_context)(&ctx);
}

static void a_context_keeps_extradata_and_callbacks_where_the_layout_says(void) {
  void *ctx = SYM(avcodec_alloc_context3)(SYM(avcodec_find_decoder_by_name)("h264"));
  CHECK(*(void **)((uint8_t *)ctx + gpures__test_codec_offset("ctx.get_buffer2")) ==
        (void *)SYM(avcodec_default_get_buffer2));
  /* AVCodecParameters: codec_type, codec_id, codec_tag, then extradata at 16 and its size at 24. */
  uint8_t *par = SYM(avcodec_parameters_alloc)();
  uint8_t *extra = SYM(av_malloc)(4321 + 64);
  memset(extra, 0x5a, 4321 + 64);
  memcpy(par + 16, &extra, 8);
  *(int *)(par + 24) = 4321;
  *(int *)(par + 4) = 27; /* AV_CODEC_ID_H264 */
  CHECK(SYM(avcodec_parameters_to_context)(ctx, par) == 0);
  const uint8_t *c = ctx;
  const uint8_t *copy = *(const uint8_t **)(c + gpures__test_codec_offset("ctx.extradata"));
  CHECK(*(const int *)(c + gpures__test_codec_offset("ctx.extradata_size")) == 4321);
  CHECK(copy && copy != extra && copy[0] == 0x5a && copy[4320] == 0x5a);
  SYM(avcodec_parameters_free)((void **)&par);
  SYM(avcodec_free_context)(&ctx);
}

/* level_idc of the first SPS of an Annex B stream, or -1. */
static int sps_level(const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i + 6 < n; i++)
    if (p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1 && (p[i + 3] & 0x1f) == 7) return p[i + 6];
  return -1;
}

/*
** The frame rate: x264 picks the stream's level from its macroblock rate. At
** 30000/1001 fps a 64x64 stream is level 1; with no frame rate x264 takes the
** timebase's 1000000 ticks a second for one and writes level 6.2.
*/
static void an_encoder_writes_the_frame_rate_where_the_layout_says(void) {
  gpures_pool_desc pd = {sizeof pd, 0, GPURES_PF_YUV420P, 64, 64, 2, 0, 0};
  gpures_pool *pool = NULL;
  CHECK_OK(gpures_pool_create(&pd, &pool));
  int levels[2] = {-1, -1};
  for (int with_rate = 0; with_rate < 2; with_rate++) {
    gpures_encoder_desc ed = {.struct_size = sizeof ed, .codec = "libx264",
                              .options = "preset=ultrafast", .format = GPURES_PF_YUV420P,
                              .width = 64, .height = 64, .framerate_num = with_rate ? 30000 : 0,
                              .framerate_den = with_rate ? 1001 : 0};
    gpures_encoder *e = NULL;
    CHECK_OK(gpures_encoder_create(&ed, &e));
    gpures_handle frame = 0;
    CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
    CHECK_OK(gpures_encoder_send(e, frame, 0));
    CHECK_OK(gpures_release(frame));
    CHECK_OK(gpures_encoder_send(e, 0, 0));
    gpures_packet p = {.struct_size = sizeof p};
    CHECK_OK(gpures_encoder_receive(e, &p));
    levels[with_rate] = sps_level(p.data, p.size);
    CHECK_OK(gpures_encoder_destroy(e));
  }
  CHECK(levels[0] == 62);
  CHECK(levels[1] > 0 && levels[1] <= 11);
  CHECK(gpures__test_codec_offset("ctx.framerate") > 0);
  CHECK_OK(gpures_pool_close(pool));
}

int main(void) {
  gpures_codec_info info = {.struct_size = sizeof info};
  if (gpures_codec_library(&info) != GPURES_OK ||
      gpures_codec_find("libx264", GPURES_CODEC_ENCODER) != GPURES_OK) {
    printf("skipped: no libavcodec with libx264 here (%s)\n", gpures_last_error());
    return check_finish("test_codec_layout");
  }
  lib = dlopen(info.library, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!CHECK(lib != NULL) || !CHECK(pipe(pipe_fds) == 0)) return check_finish("test_codec_layout");
  printf("# %s: libavcodec %u.%u\n", info.library, info.avcodec_version >> 16,
         (info.avcodec_version >> 8) & 255);
  RUN(a_decoded_frame_has_each_value_where_the_layout_says);
  RUN(a_context_keeps_extradata_and_callbacks_where_the_layout_says);
  RUN(an_encoder_writes_the_frame_rate_where_the_layout_says);
  return check_finish("test_codec_layout");
}
