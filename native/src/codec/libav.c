/*
** libav.c: FFmpeg's libavcodec (and the libavutil it loads), opened with
** dlopen on first use, never linked: most hosts that load gpures never
** decode, and a link-time dependency would make every one of them install
** FFmpeg, of one major version.
**
** FFmpeg's ABI is stable within a major version only. gpures calls functions,
** which every major has, and reads a few struct fields, which move: their
** offsets are in `layouts`, one row per major (read off the headers of that
** release, and checked against the library itself by
** native/tests/test_codec_layout.c, which finds each field by what a decode
** puts in it). A library of another major is refused by name. The
** AVCodecContext fields are checked again at open against the offsets of
** the AVOptions around them, so a patched build with a different layout is
** refused rather than written into.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

static const gpures__av_layout layouts[] = {
    {59, 57, "FFmpeg 5.1", 48, 88, 96, 408, 712, 648, 124, 136, 224, 320, 344, 360},
    {62, 60, "FFmpeg 8", 48, 72, 80, 408, 100, 0, 120, 136, 184, 280, 304, 408},
};

/* Tried in order when GPURES_LIBAVCODEC is not set: the newest first. */
static const char *const sonames[] = {"libavcodec.so.62", "libavcodec.so.59"};

static gpures__av av;
static pthread_once_t av_once = PTHREAD_ONCE_INIT;
static char av_problem[512]; /* why FFmpeg cannot be used, or "" once it can */

static const gpures__av_layout *layout_of(unsigned avcodec_major, unsigned avutil_major) {
  for (size_t i = 0; i < GPURES__LEN(layouts); i++)
    if (layouts[i].avcodec_major == avcodec_major && layouts[i].avutil_major == avutil_major)
      return &layouts[i];
  return NULL;
}

static bool load_symbols(void *lib, const char *name) {
#define GPURES__AV_LOAD(sym, member, result, params)                                          \
  if (!(av.member = (result(*) params)dlsym(lib, sym))) {                                     \
    snprintf(av_problem, sizeof av_problem, "%s has no %s: it is not FFmpeg's libavcodec",    \
             name, sym);                                                                      \
    return false;                                                                             \
  }
  GPURES__AV_FNS(GPURES__AV_LOAD)
#undef GPURES__AV_LOAD
  return true;
}

/* An AVOption's offset in its struct: AVOption's third member in every major. */
static int option_offset(AVCodecContext *ctx, const char *name) {
  const struct { const char *name, *help; int offset; } *o = av.opt_find(ctx, name, NULL, 0, 0);
  return o ? o->offset : -1;
}

/*
** The context fields gpures writes, checked against the library: get_buffer2
** holds the default callback, opaque sits before bit_rate ("b"), extradata
** and its size between flags2 and time_base, as in every major of the table;
** thread_safe_callbacks, where it still exists, two ints after thread_type.
*/
static bool layout_matches(const gpures__av_layout *l) {
  const AVCodec *codec = av.find_decoder("rawvideo");
  AVCodecContext *ctx = codec ? av.alloc_context(codec) : NULL;
  if (!ctx) return false;
  void *get_buffer2 = GPURES__AT(ctx, l->ctx_get_buffer2, void *);
  int flags2 = option_offset(ctx, "flags2"), time_base = option_offset(ctx, "time_base");
  bool ok = get_buffer2 == (void *)av.default_get_buffer2 &&
            option_offset(ctx, "b") == l->ctx_opaque + 8 && flags2 >= 0 &&
            ((flags2 + 4 + 7) & ~7) == l->ctx_extradata &&
            l->ctx_extradata_size == l->ctx_extradata + 8 &&
            time_base == l->ctx_extradata_size + 4 &&
            (!l->ctx_thread_safe_callbacks ||
             option_offset(ctx, "thread_type") + 8 == l->ctx_thread_safe_callbacks);
  av.free_context(&ctx);
  return ok;
}

static bool open_named(const char *name) {
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(av_problem, sizeof av_problem, "%s cannot be opened: %s", name,
             why ? why : "not found");
    return false;
  }
  if (!load_symbols(lib, name)) return dlclose(lib), false;
  unsigned lavc = av.avcodec_version(), lavu = av.avutil_version();
  const gpures__av_layout *l = layout_of(lavc >> 16, lavu >> 16);
  if (!l) {
    snprintf(av_problem, sizeof av_problem,
             "%s is libavcodec %u with libavutil %u, whose struct layouts gpures does not "
             "know; it knows libavcodec 59 (FFmpeg 5.1) and 62 (FFmpeg 8): set "
             "GPURES_LIBAVCODEC to one of those",
             name, lavc >> 16, lavu >> 16);
    return dlclose(lib), false;
  }
  if (!layout_matches(l)) {
    snprintf(av_problem, sizeof av_problem,
             "%s (libavcodec %u.%u) does not lay out AVCodecContext as %s does", name, lavc >> 16,
             (lavc >> 8) & 255, l->ffmpeg);
    return dlclose(lib), false;
  }
  av.layout = l;
  snprintf(av.library, sizeof av.library, "%s", name);
  return true;
}

static void av_open(void) {
  const char *chosen = getenv("GPURES_LIBAVCODEC");
  if (chosen && *chosen) {
    if (open_named(chosen)) av_problem[0] = 0;
    return;
  }
  char first[sizeof av_problem] = "";
  for (size_t i = 0; i < GPURES__LEN(sonames); i++) {
    if (open_named(sonames[i])) {
      av_problem[0] = 0;
      return;
    }
    /* The reason worth telling is a library found and refused, not the absence of the next. */
    if (!first[0] || strstr(first, "cannot be opened")) memcpy(first, av_problem, sizeof first);
  }
  if (strstr(first, "cannot be opened"))
    snprintf(av_problem, sizeof av_problem,
             "FFmpeg's libavcodec is not installed (%s or %s; on Debian and Ubuntu: apt install "
             "libavcodec59), or set GPURES_LIBAVCODEC to its path",
             sonames[0], sonames[1]);
  else
    memcpy(av_problem, first, sizeof av_problem);
}

int gpures__av_ready(gpures__op op, const gpures__av **out) {
  pthread_once(&av_once, av_open);
  if (av_problem[0]) return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "%s", av_problem);
  *out = &av;
  return GPURES_OK;
}

const gpures__av *gpures__av_loaded(void) { return &av; }

const char *gpures__av_error(int err) {
  static GPURES__THREAD_LOCAL char text[128];
  if (!av.strerror || av.strerror(err, text, sizeof text) < 0)
    snprintf(text, sizeof text, "AVERROR %d", err);
  return text;
}

int gpures__av_fail(gpures__op op, const char *field, const char *what, int err) {
  int status = err == GPURES__AVERROR_INVALIDDATA ? GPURES_E_INVALID_VALUE
               : err == -12 /* AVERROR(ENOMEM) */ ? GPURES_E_OUT_OF_MEMORY
               : err == -22 /* AVERROR(EINVAL) */ ? GPURES_E_INVALID_VALUE
                                                  : GPURES_E_UNSUPPORTED;
  return gpures__fail(op, status, field, "%s failed: %s", what, gpures__av_error(err));
}

/* ------------------------------------------------------------ pixel formats */

/* FFmpeg's name where it is not the PixelFormat's name in lower case; "" where FFmpeg has none. */
static const struct { uint32_t format; const char *name; } renamed[] = {
    {GPURES_PF_RGBA_U8, "rgba"},      {GPURES_PF_BGRA_U8, "bgra"},
    {GPURES_PF_RGBX_U8, "rgb0"},      {GPURES_PF_BGRX_U8, "bgr0"},
    {GPURES_PF_RGBA_U16, "rgba64le"}, {GPURES_PF_BGRA_U16, "bgra64le"},
    {GPURES_PF_RGB_U16, "rgb48le"},   {GPURES_PF_R16U, "gray16le"},
    {GPURES_PF_R32F, "grayf32le"},    {GPURES_PF_NV12A, ""},
    {GPURES_PF_V216, ""},             {GPURES_PF_RGBA_F16, ""},
    {GPURES_PF_BGRA_F16, ""},         {GPURES_PF_RGBA_F32, ""},
    {GPURES_PF_BGRA_F32, ""},         {GPURES_PF_RGB10A2, ""},
    {GPURES_PF_RGBA16U, ""},
};

static const char *ffmpeg_name(uint32_t format, char buf[32]) {
  for (size_t i = 0; i < GPURES__LEN(renamed); i++)
    if (renamed[i].format == format) return renamed[i].name;
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format);
  if (!name) return "";
  size_t n = 0;
  for (; name[n] && n < 31; n++) buf[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] + 32 : name[n]);
  buf[n] = 0;
  return buf;
}

int gpures__av_pix_fmt(uint32_t format) {
  char buf[32];
  const char *name = ffmpeg_name(format, buf);
  return *name ? av.pix_fmt_by_name(name) : -1;
}

uint32_t gpures__av_format_of(int pix_fmt) {
  for (uint32_t f = 1; f <= GPURES_PF_MAX; f++)
    if (gpures__av_pix_fmt(f) == pix_fmt) return f;
  return 0;
}

/* ---------------------------------------------------------------- counters */

static _Atomic uint64_t decoded, encoded, copied_frames, copied_bytes;

void gpures__codec_count(gpures__count what, uint64_t bytes) {
  switch (what) {
  case GPURES__COUNT_DECODED: atomic_fetch_add(&decoded, 1); break;
  case GPURES__COUNT_ENCODED: atomic_fetch_add(&encoded, 1); break;
  case GPURES__COUNT_COPIED:
    atomic_fetch_add(&copied_frames, 1);
    atomic_fetch_add(&copied_bytes, bytes);
    break;
  }
}

/* ------------------------------------------------------------ run outcomes */

void gpures__run_outcome_keep(gpures__run_outcome *o, int status) {
  o->status = status;
  if (status == GPURES_OK) return;
  const char *why = gpures_last_error(), *colon = strstr(why, ": ");
  snprintf(o->message, sizeof o->message, "%s", colon ? colon + 2 : why);
  snprintf(o->field, sizeof o->field, "%s", gpures_last_error_field());
}

int gpures__run_outcome_tell(gpures__op op, const gpures__run_outcome *o) {
  return o->status == GPURES_OK ? GPURES_OK : gpures__fail(op, o->status, o->field, "%s", o->message);
}

/* ---------------------------------------------------------------- the API */

static gpures__op codec_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

int gpures_codec_library(gpures_codec_info *out) {
  gpures__op op = codec_op("open FFmpeg");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = gpures__check_struct_size(op, "structSize", out->struct_size);
  const gpures__av *a = NULL;
  if (status == GPURES_OK) status = gpures__av_ready(op, &a);
  if (status != GPURES_OK) return status;
  gpures_codec_info info;
  memset(&info, 0, sizeof info);
  info.avcodec_version = a->avcodec_version();
  info.avutil_version = a->avutil_version();
  snprintf(info.library, sizeof info.library, "%s", a->library);
  uint32_t n = out->struct_size < sizeof info ? out->struct_size : (uint32_t)sizeof info;
  info.struct_size = n;
  memcpy(out, &info, n);
  return GPURES_OK;
}

int gpures_codec_find(const char *name, uint32_t flags) {
  gpures__op op = codec_op("find codec");
  if (!name) return gpures__fail(op, GPURES_E_NULL_POINTER, "codec", "codec is null");
  if (flags != GPURES_CODEC_DECODER && flags != GPURES_CODEC_ENCODER)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags",
                        "flags is 0x%x: GPURES_CODEC_DECODER or GPURES_CODEC_ENCODER", flags);
  const gpures__av *a = NULL;
  int status = gpures__av_ready(op, &a);
  if (status != GPURES_OK) return status;
  const AVCodec *c = flags == GPURES_CODEC_DECODER ? a->find_decoder(name) : a->find_encoder(name);
  if (!c || GPURES__AT(c, 16, int) != 0 /* AVMEDIA_TYPE_VIDEO */)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "codec", "%s has no video %s named \"%s\"",
                        a->library, flags == GPURES_CODEC_DECODER ? "decoder" : "encoder", name);
  return GPURES_OK;
}

int gpures_codec_stats_get(gpures_codec_stats *out) {
  gpures__op op = codec_op("read codec stats");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = gpures__check_struct_size(op, "structSize", out->struct_size);
  if (status != GPURES_OK) return status;
  gpures_codec_stats s = {sizeof s, 0, atomic_load(&decoded), atomic_load(&encoded),
                          atomic_load(&copied_frames), atomic_load(&copied_bytes)};
  uint32_t n = out->struct_size < sizeof s ? out->struct_size : (uint32_t)sizeof s;
  s.struct_size = n;
  memcpy(out, &s, n);
  return GPURES_OK;
}

/* Test hook (native/tests/test_codec_layout.c): a layout offset by name, -1 for none. */
GPURES_API int gpures__test_codec_offset(const char *field);
int gpures__test_codec_offset(const char *field) {
  const gpures__av *a = NULL;
  gpures__op op = codec_op("read a layout of");
  if (!field || gpures__av_ready(op, &a) != GPURES_OK) return -1;
  const gpures__av_layout *l = a->layout;
  const struct { const char *name; int offset; } fields[] = {
      {"ctx.opaque", l->ctx_opaque},
      {"ctx.extradata", l->ctx_extradata},
      {"ctx.extradata_size", l->ctx_extradata_size},
      {"ctx.get_buffer2", l->ctx_get_buffer2},
      {"ctx.framerate", l->ctx_framerate},
      {"ctx.thread_safe_callbacks", l->ctx_thread_safe_callbacks ? l->ctx_thread_safe_callbacks : -1},
      {"frame.pict_type", l->frame_pict_type},
      {"frame.pts", l->frame_pts},
      {"frame.buf", l->frame_buf},
      {"frame.color_range", l->frame_color_range},
      {"frame.best_effort_timestamp", l->frame_best_effort},
      {"frame.duration", l->frame_duration},
  };
  for (size_t i = 0; i < GPURES__LEN(fields); i++)
    if (strcmp(fields[i].name, field) == 0) return fields[i].offset;
  return -1;
}

#endif /* __linux__ */
