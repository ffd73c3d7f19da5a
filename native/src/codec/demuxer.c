/*
** demuxer.c: a container's tracks and packets, through libavformat. The
** input is untrusted: libavformat may open only the protocols and probe only
** the containers the lists allow (libavformat.c), and every value read from a
** stream (counts, sizes, timebases) is checked before it is given out.
**
** create() copies what it was given and does no I/O, so that a host with an
** event loop runs open() and read(), which block, on a thread of its own:
** neither touches the caller's memory, and each records its outcome for
** gpures_demuxer_last_run().
*/
#if defined(__linux__)
#define _GNU_SOURCE /* strncasecmp and the rest of POSIX under -std=c11 */
#endif
#include "codec.h"

#if defined(__linux__)
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_TIMEOUT_MS 3600000u

struct gpures_demuxer {
  const gpures__av *av;
  const gpures__avf *f;
  char *url;
  AVDictionary *options;        /* for avformat_open_input: the lists, for nested opens too */
  AVDictionary *io_options;     /* for avio_open2: the protocols and the timeout */
  char *formats;                /* the demuxers it may use */
  const void *format;           /* the AVInputFormat asked for, or NULL to probe */
  AVFormatContext *fmt;
  AVIOContext *pb;              /* the input, opened here (libavformat's custom I/O) */
  AVPacket *packet;
  _Atomic bool interrupted;     /* gpures_demuxer_interrupt(): libavformat's I/O gives up */
  uint8_t *selected;            /* one per track */
  uint32_t num_tracks;
  bool have_packet, ended;
  gpures__run_outcome last_run;
};

static gpures__op demuxer_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

static int set_option(gpures__op op, AVDictionary **dict, const char *key, const char *value) {
  if (gpures__avf_loaded()->dict_set(dict, key, value, 0) < 0)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the demuxer's options");
  return GPURES_OK;
}

static int check_desc(gpures__op op, const gpures_demuxer_desc *dd) {
  if (dd->flags) return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x: 0", dd->flags);
  if (dd->reserved)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "reserved", "reserved is %u: 0", dd->reserved);
  int status = gpures__avf_check_url(op, dd->url);
  if (status != GPURES_OK) return status;
  if (dd->timeout_ms > MAX_TIMEOUT_MS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "timeoutMs", "timeoutMs is %u: at most %u",
                        dd->timeout_ms, MAX_TIMEOUT_MS);
  if (dd->format) status = gpures__avf_check_list(op, "format", dd->format);
  if (status == GPURES_OK && dd->protocols) status = gpures__avf_check_list(op, "protocols", dd->protocols);
  if (status == GPURES_OK && dd->formats) status = gpures__avf_check_list(op, "formats", dd->formats);
  return status;
}

/* The decoders avformat_find_stream_info may open on untrusted data: the video ones gpures uses. */
static const char codecs[] = "h264,hevc,vp8,vp9,av1,libdav1d,libaom-av1,libvpx,libvpx-vp9";

static int configure(gpures__op op, gpures_demuxer *d, const gpures_demuxer_desc *dd) {
  const char *protocols = NULL;
  int status = gpures__avf_protocols(op, dd->url, dd->protocols, &protocols);
  const char *formats = dd->formats ? dd->formats : gpures__avf_default_formats;
  if (status == GPURES_OK) status = set_option(op, &d->io_options, "protocol_whitelist", protocols);
  if (status == GPURES_OK) status = set_option(op, &d->options, "protocol_whitelist", protocols);
  if (status == GPURES_OK) status = set_option(op, &d->options, "format_whitelist", formats);
  if (status == GPURES_OK) status = set_option(op, &d->options, "codec_whitelist", codecs);
  /* Nested opens (a playlist's segments) get the certificate check and the timeout too. */
  if (status == GPURES_OK) status = gpures__avf_io_options(op, &d->io_options, dd->url, dd->timeout_ms);
  if (status == GPURES_OK) status = gpures__avf_io_options(op, &d->options, dd->url, dd->timeout_ms);
  if (status == GPURES_OK && !(d->formats = gpures__avf_copy(formats)))
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a demuxer");
  if (status != GPURES_OK || !dd->format) return status;
  if (!(d->format = d->f->find_input_format(dd->format)))
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format", "%s has no demuxer named \"%s\"",
                        d->f->library, dd->format);
  if (!gpures__avf_named(formats, *(const char *const *)d->format))
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format", "format \"%s\" is not one of formats "
                        "(\"%s\")", dd->format, formats);
  return GPURES_OK;
}

int gpures_demuxer_create(const gpures_demuxer_desc *desc, gpures_demuxer **out) {
  gpures__op op = demuxer_op("create a demuxer");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  *out = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_demuxer_desc dd;
  memset(&dd, 0, sizeof dd);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof dd, &dd);
  if (status == GPURES_OK) status = check_desc(op, &dd);
  const gpures__av *a = NULL;
  const gpures__avf *f = NULL;
  if (status == GPURES_OK) status = gpures__avf_ready(op, &a, &f);
  if (status != GPURES_OK) return status;
  gpures_demuxer *d = gpures__alloc(sizeof *d);
  if (!d) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a demuxer");
  memset(d, 0, sizeof *d);
  d->av = a;
  d->f = f;
  d->url = gpures__avf_copy(dd.url);
  d->packet = a->packet_alloc();
  if (!d->url || !d->packet)
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a demuxer");
  if (status == GPURES_OK) status = configure(op, d, &dd);
  if (status != GPURES_OK) {
    (void)gpures_demuxer_destroy(d);
    return status;
  }
  *out = d;
  return GPURES_OK;
}

/* ------------------------------------------------------------ the streams */

static AVStream *stream_at(const gpures_demuxer *d, uint32_t i) {
  return GPURES__AT(d->fmt, GPURES__AVF_STREAMS, AVStream **)[i];
}

static AVCodecParameters *parameters_of(const gpures_demuxer *d, AVStream *s) {
  return GPURES__AT(s, d->f->layout->st_codecpar, AVCodecParameters *);
}

/*
** Whether every stream reads as the layout says it should: its index where the
** layout has it, parameters, a timebase. A library that lays AVStream out
** otherwise fails this for its first stream, so nothing is read through it.
*/
static int check_streams(gpures__op op, const gpures_demuxer *d) {
  const gpures__avf_layout *l = d->f->layout;
  for (uint32_t i = 0; i < d->num_tracks; i++) {
    AVStream *s = stream_at(d, i);
    gpures__av_rational tb = s ? GPURES__AT(s, l->st_time_base, gpures__av_rational)
                               : (gpures__av_rational){0, 0};
    if (!s || GPURES__AT(s, l->st_index, int) != (int)i || !parameters_of(d, s) || tb.num <= 0 ||
        tb.den <= 0)
      return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "%s does not lay out AVStream as "
                          "libavformat %u does (stream %u)", d->f->library,
                          l->avformat_major, i);
  }
  return GPURES_OK;
}

static int interrupted(void *opaque) { return atomic_load(&((gpures_demuxer *)opaque)->interrupted); }

/* A failed call of libavformat's on the input: CANCELLED when interrupted, else by its errno. */
static int io_failed(gpures__op op, gpures_demuxer *d, const char *what, int err) {
  if (err == GPURES__AVERROR_EXIT && atomic_load(&d->interrupted))
    return gpures__fail(op, GPURES_E_CANCELLED, "demuxer", "%s was interrupted", what);
  return gpures__avf_fail(op, "url", what, err);
}

/* The input, opened under the protocol list (and the timeout): the one protocol refusal named "protocols". */
static int open_io(gpures__op op, gpures_demuxer *d) {
  AVDictionary *options = NULL;
  struct { int (*callback)(void *); void *opaque; } cb = {interrupted, d};
  int r = d->f->dict_copy(&options, d->io_options, 0);
  if (r >= 0) r = d->f->avio_open(&d->pb, d->url, 1 /* AVIO_FLAG_READ */, &cb, &options);
  d->av->dict_free(&options);
  if (r == -22 /* AVERROR(EINVAL): what the list refuses */)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "protocols",
                        "libavformat refused to open %s (EINVAL): its protocol is not one of "
                        "protocols",
                        d->url);
  return r < 0 ? io_failed(op, d, "avio_open2", r) : GPURES_OK;
}

/* The demuxer the input asks for, which must be one of the list: named "formats" otherwise. */
static int probe(gpures__op op, gpures_demuxer *d, const void **format) {
  if (d->format) {
    *format = d->format;
    return GPURES_OK;
  }
  int r = d->f->probe(d->pb, format, d->url, NULL, 0, 0);
  if (r < 0) return io_failed(op, d, "av_probe_input_buffer2", r);
  const char *name = *(const char *const *)*format; /* AVInputFormat's first member */
  if (!gpures__avf_named(d->formats, name))
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "formats",
                        "%s is %s, which is not one of formats (\"%s\")", d->url, name, d->formats);
  return GPURES_OK;
}

static int open_input(gpures__op op, gpures_demuxer *d) {
  const void *format = NULL;
  int status = open_io(op, d);
  if (status == GPURES_OK) status = probe(op, d, &format);
  if (status != GPURES_OK) return status;
  /* avformat_open_input consumes the dictionary it is given: a copy, so the lists stay. */
  AVDictionary *options = NULL;
  if (d->f->dict_copy(&options, d->options, 0) < 0 || !(d->fmt = d->f->alloc_context())) {
    d->av->dict_free(&options);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the demuxer's input");
  }
  GPURES__AT(d->fmt, GPURES__AVF_PB, AVIOContext *) = d->pb; /* libavformat's: custom I/O, ours to close */
  int r = d->f->open_input(&d->fmt, d->url, format, &options);
  d->av->dict_free(&options);
  if (r == -22) /* nested opens: a playlist's segment of a container or protocol not allowed */
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "formats",
                        "libavformat refused %s (EINVAL): it opens a container that is not one of "
                        "formats, or a protocol that is not one of protocols",
                        d->url);
  if (r < 0) return io_failed(op, d, "avformat_open_input", r); /* it freed the context */
  if ((r = d->f->find_stream_info(d->fmt, NULL)) < 0)
    return io_failed(op, d, "avformat_find_stream_info", r);
  d->num_tracks = GPURES__AT(d->fmt, GPURES__AVF_NB_STREAMS, unsigned);
  if (d->num_tracks > 4096)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "url", "%s has %u tracks: at most 4096",
                        d->url, d->num_tracks);
  status = check_streams(op, d);
  if (status != GPURES_OK) return status;
  if (d->num_tracks && !(d->selected = gpures__alloc(d->num_tracks)))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the demuxer's tracks");
  for (uint32_t i = 0; i < d->num_tracks; i++) {
    AVCodecParameters *par = parameters_of(d, stream_at(d, i));
    d->selected[i] = GPURES__AT(par, GPURES__AV_PAR_TYPE, int) == 0 /* AVMEDIA_TYPE_VIDEO */;
  }
  return GPURES_OK;
}

/* What open_input() left behind when it failed. */
static void close_input(gpures_demuxer *d) {
  if (d->fmt) d->f->close_input(&d->fmt);
  if (d->pb) (void)d->f->avio_closep(&d->pb);
  gpures__free(d->selected);
  d->selected = NULL;
  d->num_tracks = 0;
}

int gpures_demuxer_open(gpures_demuxer *d) {
  gpures__op op = demuxer_op("open the demuxer's input");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  if (d->fmt || d->pb)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "demuxer", "the demuxer is open already");
  int status = open_input(op, d);
  if (status != GPURES_OK) close_input(d);
  gpures__run_outcome_keep(&d->last_run, status);
  return status;
}

int gpures_demuxer_last_run(gpures_demuxer *d) {
  gpures__op op = demuxer_op("read the demuxer's input");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  return gpures__run_outcome_tell(op, &d->last_run);
}

static int check_track(gpures__op op, const gpures_demuxer *d, uint32_t track) {
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  if (!d->fmt) return gpures__fail(op, GPURES_E_INVALID_VALUE, "demuxer", "the demuxer is not open");
  if (track >= d->num_tracks)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "track", "track is %u: the input has %u",
                        track, d->num_tracks);
  return GPURES_OK;
}

int gpures_demuxer_track_count(gpures_demuxer *d, uint32_t *out_count) {
  gpures__op op = demuxer_op("count the demuxer's tracks");
  if (!out_count) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  *out_count = 0;
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  if (!d->fmt) return gpures__fail(op, GPURES_E_INVALID_VALUE, "demuxer", "the demuxer is not open");
  *out_count = d->num_tracks;
  return GPURES_OK;
}

static int64_t option_int(const gpures__av *a, AVCodecContext *ctx, const char *name,
                          int64_t fallback) {
  int64_t v = 0;
  return a->opt_get_int(ctx, name, 0, &v) < 0 ? fallback : v;
}

static uint32_t positive(int v) { return v > 0 ? (uint32_t)v : 0; }

/* An H.273 code point as read, or 2 (unspecified) for a number that is none. */
static uint32_t code_point(int64_t v) { return v >= 0 && v <= 255 ? (uint32_t)v : 2; }

/* What a video track's parameters say, read through a context's AVOptions. */
static void read_video(const gpures_demuxer *d, AVCodecContext *ctx, gpures_track_info *t) {
  const gpures__av *a = d->av;
  int w = 0, h = 0;
  if (d->f->opt_get_image_size(ctx, "video_size", 0, &w, &h) >= 0) {
    t->width = positive(w);
    t->height = positive(h);
  }
  int64_t fmt = option_int(a, ctx, "pixel_format", -1);
  const char *name = fmt >= 0 && fmt < 4096 ? a->pix_fmt_name((int)fmt) : NULL;
  snprintf(t->pixel_format, sizeof t->pixel_format, "%s", name ? name : "");
  t->color_primaries = code_point(option_int(a, ctx, "color_primaries", 2));
  t->color_transfer = code_point(option_int(a, ctx, "color_trc", 2));
  t->color_matrix = code_point(option_int(a, ctx, "colorspace", 2));
  int64_t range = option_int(a, ctx, "color_range", 0);
  t->color_range = range >= 0 && range <= 2 ? (uint32_t)range : 0;
  gpures__av_rational sar = {0, 1};
  if (d->f->opt_get_q(ctx, "aspect", 0, &sar) >= 0 && sar.num > 0 && sar.den > 0)
    t->sar_num = (uint32_t)sar.num, t->sar_den = (uint32_t)sar.den;
}

/* The parameters of a track, through a context of their own (a track of another type leaves its fields unset). */
static int read_parameters(gpures__op op, const gpures_demuxer *d, AVCodecParameters *par,
                           gpures_track_info *t) {
  AVCodecContext *ctx = d->av->alloc_context(NULL);
  int r = ctx ? d->f->par_to_context(ctx, par) : -12;
  if (r >= 0) {
    t->profile = (int32_t)option_int(d->av, ctx, "profile", -99);
    t->level = (int32_t)option_int(d->av, ctx, "level", -99);
    if (t->media == GPURES_MEDIA_VIDEO) read_video(d, ctx, t);
  }
  if (ctx) d->av->free_context(&ctx);
  return r < 0 ? gpures__av_fail(op, "track", "avcodec_parameters_to_context", r) : GPURES_OK;
}

int gpures_demuxer_track(gpures_demuxer *d, uint32_t track, gpures_track_info *out) {
  gpures__op op = demuxer_op("describe the demuxer's track");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = gpures__check_struct_size(op, "structSize", out->struct_size);
  if (status == GPURES_OK) status = check_track(op, d, track);
  if (status != GPURES_OK) return status;
  const gpures__avf_layout *l = d->f->layout;
  AVStream *s = stream_at(d, track);
  AVCodecParameters *par = parameters_of(d, s);
  gpures_track_info t;
  memset(&t, 0, sizeof t);
  int type = GPURES__AT(par, GPURES__AV_PAR_TYPE, int);
  t.media = type == 0 ? GPURES_MEDIA_VIDEO : type == 1 ? GPURES_MEDIA_AUDIO
          : type == 3 ? GPURES_MEDIA_SUBTITLE : GPURES_MEDIA_OTHER;
  t.color_primaries = t.color_transfer = t.color_matrix = 2;
  if ((status = read_parameters(op, d, par, &t)) != GPURES_OK) return status;
  t.flags = GPURES__AT(s, l->st_disposition, int) & GPURES__AV_DISPOSITION_DEFAULT ? GPURES_TRACK_DEFAULT : 0;
  const char *codec = d->f->codec_name(GPURES__AT(par, GPURES__AV_PAR_ID, int));
  snprintf(t.codec, sizeof t.codec, "%s", codec && strcmp(codec, "none") != 0 ? codec : "");
  t.extradata_size = positive(GPURES__AT(par, GPURES__AV_PAR_EXTRADATA_SIZE, int));
  gpures__av_rational tb = GPURES__AT(s, l->st_time_base, gpures__av_rational);
  t.timebase_num = (uint32_t)tb.num;
  t.timebase_den = (uint32_t)tb.den;
  gpures__av_rational fr = d->f->guess_frame_rate(d->fmt, s, NULL);
  if (fr.num > 0 && fr.den > 0) t.framerate_num = (uint32_t)fr.num, t.framerate_den = (uint32_t)fr.den;
  int64_t duration = GPURES__AT(s, l->st_duration, int64_t);
  t.duration = duration == GPURES__AV_NOPTS || duration < 0 ? -1 : duration;
  int64_t frames = GPURES__AT(s, l->st_nb_frames, int64_t);
  t.frames = frames > 0 ? frames : 0;
  uint32_t n = out->struct_size < sizeof t ? out->struct_size : (uint32_t)sizeof t;
  t.struct_size = n;
  memcpy(out, &t, n);
  return GPURES_OK;
}

int gpures_demuxer_extradata(gpures_demuxer *d, uint32_t track, uint8_t *out, uint32_t capacity,
                             uint32_t *out_size) {
  gpures__op op = demuxer_op("read the demuxer's track");
  if (!out_size) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSize", "outSize is null");
  *out_size = 0;
  int status = check_track(op, d, track);
  if (status != GPURES_OK) return status;
  AVCodecParameters *par = parameters_of(d, stream_at(d, track));
  const uint8_t *data = GPURES__AT(par, GPURES__AV_PAR_EXTRADATA, const uint8_t *);
  uint32_t size = data ? positive(GPURES__AT(par, GPURES__AV_PAR_EXTRADATA_SIZE, int)) : 0;
  *out_size = size;
  if (!size) return GPURES_OK;
  if (!out || capacity < size)
    return gpures__fail(op, GPURES_E_BUFFER_TOO_SMALL, "capacity",
                        "capacity is %u: the extradata has %u bytes", capacity, size);
  memcpy(out, data, size);
  return GPURES_OK;
}

int gpures_demuxer_select(gpures_demuxer *d, uint32_t track, uint32_t selected) {
  gpures__op op = demuxer_op("select the demuxer's track");
  int status = check_track(op, d, track);
  if (status != GPURES_OK) return status;
  if (selected > 1)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "selected", "selected is %u: 0 or 1", selected);
  d->selected[track] = (uint8_t)selected;
  /* A container that can skip what nobody reads does less work for it. */
  GPURES__AT(stream_at(d, track), d->f->layout->st_discard, int) =
      selected ? GPURES__AVDISCARD_DEFAULT : GPURES__AVDISCARD_ALL;
  return GPURES_OK;
}

/* ------------------------------------------------------------ the packets */

static int read_packet(gpures__op op, gpures_demuxer *d) {
  if (!d->fmt) return gpures__fail(op, GPURES_E_INVALID_VALUE, "demuxer", "the demuxer is not open");
  if (d->have_packet) d->av->packet_unref(d->packet);
  d->have_packet = false;
  while (!d->ended) {
    int r = d->f->read_frame(d->fmt, d->packet);
    if (r == GPURES__AVERROR_EOF) {
      d->ended = true;
      break;
    }
    if (r < 0) return io_failed(op, d, "av_read_frame", r);
    int index = GPURES__AT(d->packet, GPURES__AV_PACKET_STREAM_INDEX, int);
    int size = GPURES__AT(d->packet, GPURES__AV_PACKET_SIZE, int);
    if (index >= 0 && (uint32_t)index < d->num_tracks && d->selected[index] && size > 0) {
      d->have_packet = true;
      break;
    }
    d->av->packet_unref(d->packet);
  }
  return GPURES_OK;
}

int gpures_demuxer_read(gpures_demuxer *d) {
  gpures__op op = demuxer_op("read the demuxer's input");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  int status = read_packet(op, d);
  gpures__run_outcome_keep(&d->last_run, status);
  return status;
}

int gpures_demuxer_packet(gpures_demuxer *d, uint32_t *out_track, gpures_packet *out) {
  gpures__op op = demuxer_op("take the demuxer's packet");
  if (!out_track) return gpures__fail(op, GPURES_E_NULL_POINTER, "outTrack", "outTrack is null");
  *out_track = GPURES_TRACK_END;
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = gpures__check_struct_size(op, "structSize", out->struct_size);
  if (status != GPURES_OK) return status;
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  gpures_packet p;
  memset(&p, 0, sizeof p);
  p.pts = GPURES__AV_NOPTS;
  p.dts = GPURES__AV_NOPTS;
  if (d->have_packet) {
    AVPacket *k = d->packet;
    *out_track = (uint32_t)GPURES__AT(k, GPURES__AV_PACKET_STREAM_INDEX, int);
    p.data = GPURES__AT(k, GPURES__AV_PACKET_DATA, const uint8_t *);
    p.size = (uint64_t)GPURES__AT(k, GPURES__AV_PACKET_SIZE, int);
    p.pts = GPURES__AT(k, GPURES__AV_PACKET_PTS, int64_t);
    p.dts = GPURES__AT(k, GPURES__AV_PACKET_DTS, int64_t);
    int64_t duration = GPURES__AT(k, GPURES__AV_PACKET_DURATION, int64_t);
    p.duration = duration > 0 ? duration : 0;
    int flags = GPURES__AT(k, GPURES__AV_PACKET_FLAGS, int);
    p.flags = (flags & GPURES__AV_PKT_FLAG_KEY ? GPURES_PACKET_KEY : 0) |
              (flags & GPURES__AV_PKT_FLAG_DISCARD ? GPURES_PACKET_DISCARD : 0);
  }
  uint32_t n = out->struct_size < sizeof p ? out->struct_size : (uint32_t)sizeof p;
  p.struct_size = n;
  memcpy(out, &p, n);
  return GPURES_OK;
}

int gpures_demuxer_interrupt(gpures_demuxer *d) {
  gpures__op op = demuxer_op("interrupt the demuxer");
  if (!d) return gpures__fail(op, GPURES_E_NULL_POINTER, "demuxer", "demuxer is null");
  atomic_store(&d->interrupted, true);
  return GPURES_OK;
}

int gpures_demuxer_destroy(gpures_demuxer *d) {
  if (!d) return GPURES_OK;
  close_input(d);
  if (d->packet) d->av->packet_free(&d->packet);
  d->av->dict_free(&d->options);
  d->av->dict_free(&d->io_options);
  gpures__free(d->formats);
  gpures__free(d->url);
  gpures__free(d);
  return GPURES_OK;
}

#endif /* __linux__ */
