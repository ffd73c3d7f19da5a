/*
** muxer.c: packets into a container, through libavformat. A track's
** parameters are set on a scratch AVCodecContext through its AVOptions and
** copied to the stream by avcodec_parameters_from_context, so no field of
** AVCodecParameters that moves between majors is written here.
**
** As for decoders, queue() copies and run() does the blocking work (opening
** the output, writing), touching no memory of the caller's, so a host with an
** event loop runs it on a thread of its own.
*/
#if defined(__linux__)
#define _GNU_SOURCE /* strncasecmp and the rest of POSIX under -std=c11 */
#endif
#include "codec.h"

#if defined(__linux__)
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_TRACKS 64u
#define MAX_EXTRADATA (1u << 20)
#define PAD_BYTES 64u
#define MAX_PACKET (1u << 30)

/* A queued packet, or the finish (packet NULL). */
typedef struct queued {
  AVPacket *packet;
  uint32_t track;
} queued;

struct gpures_muxer {
  const gpures__av *av;
  const gpures__avf *f;
  char *url;
  AVDictionary *io_options;     /* the protocol list, for avio_open2 */
  char *options;                /* the muxer's own, parsed afresh for each avformat_write_header */
  AVFormatContext *fmt;
  gpures__av_rational timebases[MAX_TRACKS]; /* of the packets given, per track */
  int64_t frame_durations[MAX_TRACKS];       /* in that timebase, from the frame rate; 0 unknown */
  uint32_t num_tracks;
  bool header_written, finish_queued, finished;
  char broken[160];             /* why the muxer can write no more, or "" */
  _Atomic bool interrupted;     /* gpures_muxer_interrupt(): libavformat's I/O gives up */
  queued *queue;
  uint32_t num_queued, queue_capacity;
  gpures__run_outcome last_run;
};

static gpures__op muxer_op(const char *verb) {
  gpures__op op = {verb, 0};
  return op;
}

static int check_desc(gpures__op op, const gpures_muxer_desc *md) {
  if (md->flags) return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x: 0", md->flags);
  int status = gpures__avf_check_url(op, md->url);
  if (status != GPURES_OK) return status;
  if (md->format) status = gpures__avf_check_list(op, "format", md->format);
  if (status == GPURES_OK && md->protocols) status = gpures__avf_check_list(op, "protocols", md->protocols);
  return status;
}

/* The lists gpures sets, which the muxer's own options must not widen or clear. */
static const char *const guarded[] = {"protocol_whitelist", "protocol_blacklist", "format_whitelist",
                                      "codec_whitelist"};

static int check_options(gpures__op op, gpures_muxer *m, const char *options) {
  if (!options) return GPURES_OK;
  AVDictionary *dict = NULL;
  int status = GPURES_OK;
  if (m->av->dict_parse(&dict, options, "=", ":", 0) < 0)
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "options",
                          "options \"%s\" is not key=value pairs separated by ':'", options);
  for (size_t i = 0; status == GPURES_OK && i < GPURES__LEN(guarded); i++)
    if (m->av->dict_get(dict, guarded[i], NULL, 0))
      status = gpures__fail(op, GPURES_E_INVALID_VALUE, "options",
                            "options set %s, which is protocols' to say", guarded[i]);
  m->av->dict_free(&dict);
  return status;
}

static int configure(gpures__op op, gpures_muxer *m, const gpures_muxer_desc *md) {
  const char *protocols = NULL;
  int status = gpures__avf_protocols(op, md->url, md->protocols, &protocols);
  if (status != GPURES_OK) return status;
  if (md->reserved)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "reserved", "reserved is %u: 0", md->reserved);
  if (md->timeout_ms > 3600000u)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "timeoutMs", "timeoutMs is %u: at most 3600000",
                        md->timeout_ms);
  if (m->f->dict_set(&m->io_options, "protocol_whitelist", protocols, 0) < 0 ||
      (md->options && !(m->options = gpures__avf_copy(md->options))))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the muxer's options");
  if ((status = gpures__avf_io_options(op, &m->io_options, md->url, md->timeout_ms)) != GPURES_OK ||
      (status = check_options(op, m, md->options)) != GPURES_OK)
    return status;
  int r;
  r = m->f->alloc_output(&m->fmt, NULL, md->format, md->url);
  if (r < 0 || !m->fmt) {
    m->fmt = NULL;
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                        md->format ? "%s has no muxer named \"%s\"" : "%s has no muxer for \"%s\"",
                        m->f->library, md->format ? md->format : md->url);
  }
  const void *oformat = GPURES__AT(m->fmt, GPURES__AVF_OFORMAT, const void *);
  const char *name = *(const char *const *)oformat; /* AVOutputFormat's first member */
  /* tee opens its outputs through a context of their own, which no protocol list reaches. */
  if (strcmp(name, "tee") == 0)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                        "the tee muxer's outputs escape protocols: write each output with a muxer "
                        "of its own");
  if ((GPURES__AT(oformat, GPURES__AV_OFORMAT_FLAGS, int) & GPURES__AVFMT_NOFILE) && !md->format)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                        "the %s muxer, picked by the url's name, opens files of its own: name it "
                        "in format to use it",
                        name);
  /* What the muxer opens itself (segments, a faststart rewrite) is held to the list too. */
  if (m->av->opt_set(m->fmt, "protocol_whitelist", protocols, 0) < 0)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the muxer's options");
  return GPURES_OK;
}

int gpures_muxer_create(const gpures_muxer_desc *desc, gpures_muxer **out) {
  gpures__op op = muxer_op("create a muxer");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  *out = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_muxer_desc md;
  memset(&md, 0, sizeof md);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof md, &md);
  if (status == GPURES_OK) status = check_desc(op, &md);
  const gpures__av *a = NULL;
  const gpures__avf *f = NULL;
  if (status == GPURES_OK) status = gpures__avf_ready(op, &a, &f);
  if (status != GPURES_OK) return status;
  gpures_muxer *m = gpures__alloc(sizeof *m);
  if (!m) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a muxer");
  memset(m, 0, sizeof *m);
  m->av = a;
  m->f = f;
  status = (m->url = gpures__avf_copy(md.url)) ? configure(op, m, &md)
                  : gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a muxer");
  if (status != GPURES_OK) {
    (void)gpures_muxer_destroy(m);
    return status;
  }
  *out = m;
  return GPURES_OK;
}

/* ------------------------------------------------------------ the tracks */

static int check_track_desc(gpures__op op, const gpures_mux_track_desc *td) {
  if (td->flags) return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x: 0", td->flags);
  if (!td->codec) return gpures__fail(op, GPURES_E_NULL_POINTER, "codec", "codec is null");
  if (td->extradata_size > MAX_EXTRADATA)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "extradataSize",
                        "extradataSize is %u: at most 1 MiB", td->extradata_size);
  if (td->extradata_size && !td->extradata)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "extradata", "extradata is null but "
                        "extradataSize is %u", td->extradata_size);
  if (!td->width || !td->height || td->width > 32768 || td->height > 32768)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, td->width && td->width <= 32768 ? "height" : "width",
                        "the track is %ux%u: 1..32768 each", td->width, td->height);
  if ((td->timebase_num == 0) != (td->timebase_den == 0) || td->timebase_num > 0x7fffffff ||
      td->timebase_den > 0x7fffffff)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "timebase", "timebase %u/%u: both 1..2^31-1, "
                        "or both 0", td->timebase_num, td->timebase_den);
  if ((td->framerate_num == 0) != (td->framerate_den == 0) || td->framerate_num > 0x7fffffff ||
      td->framerate_den > 0x7fffffff)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "framerate", "framerate %u/%u: both "
                        "1..2^31-1, or both 0", td->framerate_num, td->framerate_den);
  const uint32_t colours[4] = {td->color_primaries, td->color_transfer, td->color_matrix, td->color_range};
  const char *names[4] = {"colorPrimaries", "colorTransfer", "colorMatrix", "colorRange"};
  for (int i = 0; i < 4; i++)
    if (colours[i] > (i == 3 ? 2u : 255u))
      return gpures__fail(op, GPURES_E_INVALID_VALUE, names[i], "%s is %u: at most %u", names[i],
                          colours[i], i == 3 ? 2u : 255u);
  return GPURES_OK;
}

/*
** The track's parameters on a scratch context, as avcodec_parameters_from_context
** reads them. Colour all 0 is unspecified (a descriptor that says nothing of it);
** else primaries and transfer 0 (reserved in H.273) are unspecified, a matrix 0 is RGB.
*/
static int track_context(gpures__op op, gpures_muxer *m, const gpures_mux_track_desc *td,
                         AVCodecContext *ctx) {
  const gpures__av *a = m->av;
  int r = a->opt_set_image_size(ctx, "video_size", (int)td->width, (int)td->height, 0);
  bool said = td->color_primaries || td->color_transfer || td->color_matrix;
  const struct { const char *name; uint32_t value; } colour[] = {
      {"color_primaries", td->color_primaries ? td->color_primaries : 2},
      {"color_trc", td->color_transfer ? td->color_transfer : 2},
      {"colorspace", said ? td->color_matrix : 2},
      {"color_range", td->color_range},
  };
  for (size_t i = 0; r >= 0 && i < GPURES__LEN(colour); i++)
    r = a->opt_set_int(ctx, colour[i].name, colour[i].value, 0);
  if (r < 0) return gpures__av_fail(op, "track", "av_opt_set", r);
  if (td->extradata_size) {
    uint8_t *extra = a->malloc(td->extradata_size + PAD_BYTES);
    if (!extra) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for extradata");
    memcpy(extra, td->extradata, td->extradata_size);
    memset(extra + td->extradata_size, 0, PAD_BYTES);
    GPURES__AT(ctx, a->layout->ctx_extradata, uint8_t *) = extra; /* the context frees it */
    GPURES__AT(ctx, a->layout->ctx_extradata_size, int) = (int)td->extradata_size;
  }
  return GPURES_OK;
}

/* The stream of a track: its context filled first, so that a failure leaves no stream behind. */
static int new_track(gpures__op op, gpures_muxer *m, const gpures_mux_track_desc *td, int id) {
  const gpures__avf *f = m->f;
  /* A context of the codec has its type and id, which avcodec_parameters_from_context copies. */
  const AVCodec *codec = f->decoder_of(id);
  if (!codec) codec = f->encoder_of(id);
  if (!codec)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "codec", "%s has no decoder or encoder of %s",
                        m->av->library, td->codec);
  AVCodecContext *ctx = m->av->alloc_context(codec);
  int status = ctx ? track_context(op, m, td, ctx)
                   : gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a track");
  AVStream *s = status == GPURES_OK ? f->new_stream(m->fmt, NULL) : NULL;
  if (status == GPURES_OK && !s) status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a track");
  int r = s ? f->par_from_context(GPURES__AT(s, f->layout->st_codecpar, AVCodecParameters *), ctx) : 0;
  if (ctx) m->av->free_context(&ctx);
  if (r < 0) {
    /* The stream is in the file's list now, parameters or not: the muxer can write nothing right. */
    snprintf(m->broken, sizeof m->broken, "a track could not be added (avcodec_parameters_from_context: %s)",
             gpures__av_error(r));
    return gpures__av_fail(op, "track", "avcodec_parameters_from_context", r);
  }
  if (status != GPURES_OK) return status;
  gpures__av_rational tb = td->timebase_num ? (gpures__av_rational){(int)td->timebase_num, (int)td->timebase_den}
                                            : (gpures__av_rational){1, 1000000};
  GPURES__AT(s, f->layout->st_time_base, gpures__av_rational) = tb; /* a wish: the muxer may pick another */
  m->timebases[m->num_tracks] = tb;
  if (td->framerate_num) {
    gpures__av_rational rate = {(int)td->framerate_num, (int)td->framerate_den};
    GPURES__AT(s, f->layout->st_avg_frame_rate, gpures__av_rational) = rate;
    /* A packet of no duration would end the track at its own start: the last frame unseen. */
    m->frame_durations[m->num_tracks] = ((int64_t)tb.den * td->framerate_den +
                                         (int64_t)tb.num * td->framerate_num / 2) /
                                        ((int64_t)tb.num * td->framerate_num);
  }
  return GPURES_OK;
}

int gpures_muxer_add_track(gpures_muxer *m, const gpures_mux_track_desc *desc, uint32_t *out_track) {
  gpures__op op = muxer_op("add a track to the muxer");
  if (!out_track) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  *out_track = 0;
  if (!m) return gpures__fail(op, GPURES_E_NULL_POINTER, "muxer", "muxer is null");
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_mux_track_desc td;
  memset(&td, 0, sizeof td);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof td, &td);
  if (status == GPURES_OK) status = check_track_desc(op, &td);
  if (status != GPURES_OK) return status;
  if (m->broken[0]) return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer", "%s", m->broken);
  if (m->header_written || m->num_queued || m->finish_queued)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer",
                        "the muxer has packets already: add every track before the first");
  if (m->num_tracks == MAX_TRACKS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer", "the muxer has %u tracks: the most",
                        MAX_TRACKS);
  const void *descriptor = m->f->descriptor_by_name(td.codec);
  /* AVCodecDescriptor begins with its id and its type in every major. */
  if (!descriptor || GPURES__AT(descriptor, 4, int) != 0 /* AVMEDIA_TYPE_VIDEO */)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "codec", "%s knows no video codec named \"%s\"",
                        m->av->library, td.codec);
  int id = GPURES__AT(descriptor, 0, int);
  const void *oformat = GPURES__AT(m->fmt, GPURES__AVF_OFORMAT, const void *);
  if (m->f->query_codec(oformat, id, 0 /* FF_COMPLIANCE_NORMAL */) == 0)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "codec", "the container of %s cannot hold %s",
                        m->url, td.codec);
  const char *container = *(const char *const *)oformat;
  bool parameter_sets = strcmp(td.codec, "h264") == 0 || strcmp(td.codec, "hevc") == 0;
  if (parameter_sets && !td.extradata_size &&
      (strncmp(container, "matroska", 8) == 0 || strcmp(container, "webm") == 0))
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "extradata",
                        "%s holds %s only with its configuration record (avcC or hvcC): give the "
                        "track its description, and its packets length-prefixed",
                        container, td.codec);
  if ((status = new_track(op, m, &td, id)) != GPURES_OK) return status;
  *out_track = m->num_tracks++;
  return GPURES_OK;
}

/* ------------------------------------------------------------ the packets */

static int check_packet(gpures__op op, const gpures_muxer *m, uint32_t track, const gpures_packet *p) {
  if (track >= m->num_tracks)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "track", "track is %u: the muxer has %u",
                        track, m->num_tracks);
  if (!p->size || p->size > MAX_PACKET)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet.size", "packet.size is %llu: 1..2^30",
                        (unsigned long long)p->size);
  if (!p->data) return gpures__fail(op, GPURES_E_NULL_POINTER, "packet.data", "packet.data is null");
  if (p->flags & ~(GPURES_PACKET_KEY | GPURES_PACKET_DISCARD))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet.flags", "packet.flags is 0x%x",
                        p->flags);
  if (p->duration < 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "packet.duration", "packet.duration is %lld",
                        (long long)p->duration);
  return GPURES_OK;
}

static int copy_packet(gpures__op op, gpures_muxer *m, uint32_t track, const gpures_packet *p,
                       AVPacket **out) {
  const gpures__av *a = m->av;
  AVPacket *k = a->packet_alloc();
  if (!k || a->new_packet(k, (int)p->size) < 0) {
    a->packet_free(&k);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for a packet of %llu bytes",
                        (unsigned long long)p->size);
  }
  memcpy(GPURES__AT(k, GPURES__AV_PACKET_DATA, uint8_t *), p->data, p->size);
  GPURES__AT(k, GPURES__AV_PACKET_PTS, int64_t) = p->pts;
  GPURES__AT(k, GPURES__AV_PACKET_DTS, int64_t) = p->dts;
  GPURES__AT(k, GPURES__AV_PACKET_DURATION, int64_t) = p->duration ? p->duration : m->frame_durations[track];
  GPURES__AT(k, GPURES__AV_PACKET_FLAGS, int) =
      (p->flags & GPURES_PACKET_KEY ? GPURES__AV_PKT_FLAG_KEY : 0) |
      (p->flags & GPURES_PACKET_DISCARD ? GPURES__AV_PKT_FLAG_DISCARD : 0);
  GPURES__AT(k, GPURES__AV_PACKET_STREAM_INDEX, int) = (int)track;
  *out = k;
  return GPURES_OK;
}

int gpures_muxer_queue(gpures_muxer *m, uint32_t track, const gpures_packet *packet) {
  gpures__op op = muxer_op("queue a packet for the muxer");
  if (!m) return gpures__fail(op, GPURES_E_NULL_POINTER, "muxer", "muxer is null");
  if (m->broken[0]) return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer", "%s", m->broken);
  if (m->finish_queued)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer", "the muxer was finished");
  if (packet && !m->num_tracks)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "track", "the muxer has no track");
  gpures_packet p;
  memset(&p, 0, sizeof p);
  int status = packet ? gpures__copy_versioned(op, "packet.structSize", packet, sizeof p, &p) : GPURES_OK;
  if (status == GPURES_OK && packet) status = check_packet(op, m, track, &p);
  if (status != GPURES_OK) return status;
  if (!gpures__grow((void **)&m->queue, &m->queue_capacity, m->num_queued, sizeof *m->queue, 16,
                    1u << 20))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the muxer's queue");
  AVPacket *k = NULL;
  if (packet && (status = copy_packet(op, m, track, &p, &k)) != GPURES_OK) return status;
  m->queue[m->num_queued++] = (queued){k, track};
  if (!packet) m->finish_queued = true;
  return GPURES_OK;
}

static int interrupted(void *opaque) { return atomic_load(&((gpures_muxer *)opaque)->interrupted); }

/* A failed call of libavformat's on the output: CANCELLED when interrupted, else by its errno. */
static int io_failed(gpures__op op, gpures_muxer *m, const char *field, const char *what, int err) {
  if (err == GPURES__AVERROR_EXIT && atomic_load(&m->interrupted))
    return gpures__fail(op, GPURES_E_CANCELLED, "muxer", "%s was interrupted", what);
  return gpures__avf_fail(op, field, what, err);
}

static bool writes_a_file(const gpures_muxer *m) {
  const void *oformat = GPURES__AT(m->fmt, GPURES__AVF_OFORMAT, const void *);
  return !(GPURES__AT(oformat, GPURES__AV_OFORMAT_FLAGS, int) & GPURES__AVFMT_NOFILE);
}

static int open_output(gpures__op op, gpures_muxer *m) {
  if (!writes_a_file(m)) return GPURES_OK; /* the muxer opens what it writes, under the list */
  struct { int (*callback)(void *); void *opaque; } cb = {interrupted, m};
  AVDictionary *io = NULL;
  int r = m->f->dict_copy(&io, m->io_options, 0);
  if (r >= 0) r = m->f->avio_open(&GPURES__AT(m->fmt, GPURES__AVF_PB, AVIOContext *), m->url,
                                  2 /* AVIO_FLAG_WRITE */, &cb, &io);
  m->av->dict_free(&io);
  return r < 0 ? io_failed(op, m, "url", "avio_open2", r) : GPURES_OK;
}

/* The muxer initialised with its options, every one of them known, then the header written. */
static int start_output(gpures__op op, gpures_muxer *m) {
  AVDictionary *options = NULL;
  if (m->options && m->av->dict_parse(&options, m->options, "=", ":", 0) < 0)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the muxer's options");
  int r = m->f->init_output(m->fmt, &options);
  const char *const *unknown = m->av->dict_get(options, "", NULL, 2 /* AV_DICT_IGNORE_SUFFIX */);
  int status = GPURES_OK;
  if (r < 0)
    status = r == -22 ? gpures__av_fail(op, "track", "avformat_init_output", r)
                      : io_failed(op, m, "url", "avformat_init_output", r);
  else if (unknown)
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "options", "the %s muxer has no option \"%s\"",
                          *(const char *const *)GPURES__AT(m->fmt, GPURES__AVF_OFORMAT, const void *),
                          unknown[0]);
  else if ((r = m->f->write_header(m->fmt, NULL)) < 0)
    status = io_failed(op, m, "url", "avformat_write_header", r);
  m->av->dict_free(&options);
  return status;
}

static int write_header(gpures__op op, gpures_muxer *m) {
  if (!m->num_tracks) return gpures__fail(op, GPURES_E_INVALID_VALUE, "track", "the muxer has no track");
  int status = open_output(op, m);
  if (status == GPURES_OK) status = start_output(op, m);
  if (status != GPURES_OK) {
    /* libavformat cannot be initialised twice: the muxer is done, and says why to every later call. */
    snprintf(m->broken, sizeof m->broken, "its output could not be started: %s", gpures_last_error());
    if (writes_a_file(m)) (void)m->f->avio_closep(&GPURES__AT(m->fmt, GPURES__AVF_PB, AVIOContext *));
    return status;
  }
  m->header_written = true;
  return GPURES_OK;
}

static int write_one(gpures__op op, gpures_muxer *m, queued *q) {
  if (!q->packet) {
    int r = m->f->write_trailer(m->fmt);
    int closed = writes_a_file(m) ? m->f->avio_closep(&GPURES__AT(m->fmt, GPURES__AVF_PB, AVIOContext *)) : 0;
    m->finished = true;
    if (r < 0) return io_failed(op, m, "url", "av_write_trailer", r);
    if (closed < 0) return io_failed(op, m, "url", "avio_close", closed);
    return GPURES_OK;
  }
  AVStream *s = GPURES__AT(m->fmt, GPURES__AVF_STREAMS, AVStream **)[q->track];
  gpures__av_rational to = GPURES__AT(s, m->f->layout->st_time_base, gpures__av_rational);
  m->f->packet_rescale_ts(q->packet, m->timebases[q->track], to);
  int r = m->f->write_frame(m->fmt, q->packet); /* takes the packet's data, leaves it blank */
  m->av->packet_free(&q->packet);
  if (r < 0) return io_failed(op, m, "packet", "av_interleaved_write_frame", r);
  return GPURES_OK;
}

static int run_queue(gpures__op op, gpures_muxer *m) {
  if (m->broken[0]) return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer", "%s", m->broken);
  if (m->finished) return gpures__fail(op, GPURES_E_INVALID_VALUE, "muxer", "the muxer was finished");
  if (!m->num_queued) return GPURES_OK;
  int status = m->header_written ? GPURES_OK : write_header(op, m);
  uint32_t done = 0;
  while (status == GPURES_OK && done < m->num_queued) status = write_one(op, m, &m->queue[done++]);
  memmove(m->queue, m->queue + done, (m->num_queued - done) * sizeof *m->queue);
  m->num_queued -= done;
  return status;
}

int gpures_muxer_run(gpures_muxer *m) {
  gpures__op op = muxer_op("write the muxer's packets");
  if (!m) return gpures__fail(op, GPURES_E_NULL_POINTER, "muxer", "muxer is null");
  int status = run_queue(op, m);
  gpures__run_outcome_keep(&m->last_run, status);
  return status;
}

int gpures_muxer_last_run(gpures_muxer *m) {
  gpures__op op = muxer_op("write the muxer's packets");
  if (!m) return gpures__fail(op, GPURES_E_NULL_POINTER, "muxer", "muxer is null");
  return gpures__run_outcome_tell(op, &m->last_run);
}

int gpures_muxer_write(gpures_muxer *m, uint32_t track, const gpures_packet *packet) {
  int status = gpures_muxer_queue(m, track, packet);
  return status == GPURES_OK ? gpures_muxer_run(m) : status;
}

int gpures_muxer_interrupt(gpures_muxer *m) {
  gpures__op op = muxer_op("interrupt the muxer");
  if (!m) return gpures__fail(op, GPURES_E_NULL_POINTER, "muxer", "muxer is null");
  atomic_store(&m->interrupted, true);
  return GPURES_OK;
}

int gpures_muxer_destroy(gpures_muxer *m) {
  if (!m) return GPURES_OK;
  for (uint32_t i = 0; i < m->num_queued; i++) m->av->packet_free(&m->queue[i].packet);
  gpures__free(m->queue);
  if (m->fmt) {
    if (writes_a_file(m)) (void)m->f->avio_closep(&GPURES__AT(m->fmt, GPURES__AVF_PB, AVIOContext *));
    m->f->free_context(m->fmt);
  }
  m->av->dict_free(&m->io_options);
  gpures__free(m->options);
  gpures__free(m->url);
  gpures__free(m);
  return GPURES_OK;
}

#endif /* __linux__ */
