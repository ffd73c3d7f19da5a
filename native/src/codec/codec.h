/*
** codec.h: the codec layer's own declarations (not installed).
**
**   libav.c     FFmpeg's libavcodec and libavutil, opened with dlopen: the
**               entry points gpures calls, the struct layouts it knows per
**               major version, the pixel formats both name, the copy counters
**   mappings.c  CPU mappings of frames a codec reads or writes, kept by
**               buffer id so that a pool's slot is mapped (and faulted in) once
**   decoder.c   gpures_decoder_*: packets in, pooled frames out
**   encoder.c   gpures_encoder_*: frames in, read in place; packets out
**   libavformat.c  FFmpeg's libavformat, opened with dlopen beside libavcodec:
**               its entry points, the AVStream layouts per major, the input
**               and protocol lists a container may use
**   demuxer.c   gpures_demuxer_*: a container's tracks and packets
**   muxer.c     gpures_muxer_*: packets into a container
**
** Linux only: a decoder's frames are pool slots (memfds). Nothing here is
** linked against FFmpeg; a struct of FFmpeg's is reached only through the
** offsets of gpures__av_layout, and fields that FFmpeg's AVOptions name are
** read and written through av_opt_* by name, whatever the layout.
*/
#ifndef GPURES_CODEC_H
#define GPURES_CODEC_H

#include "../internal.h"

#if defined(__linux__)
#include <pthread.h>

/* FFmpeg's types, opaque here. */
typedef struct AVCodec AVCodec;
typedef struct AVCodecContext AVCodecContext;
typedef struct AVFrame AVFrame;
typedef struct AVPacket AVPacket;
typedef struct AVBufferRef AVBufferRef;
typedef struct AVDictionary AVDictionary;
typedef struct { int num, den; } gpures__av_rational;

/* AVERROR values and flags that every supported major shares. */
#define GPURES__AVERROR_EAGAIN (-11)
#define GPURES__AVERROR_EOF (-0x20464F45) /* FFERRTAG('E','O','F',' ') */
#define GPURES__AVERROR_INVALIDDATA (-0x41444E49) /* FFERRTAG('I','N','D','A') */
#define GPURES__AV_CODEC_CAP_DR1 (1 << 1)
#define GPURES__AV_PKT_FLAG_KEY 1
#define GPURES__AV_PKT_FLAG_DISCARD 4
#define GPURES__AV_PICTURE_TYPE_I 1
#define GPURES__AV_NOPTS ((int64_t)0x8000000000000000ULL)
#define GPURES__AV_FRAME_DATA_MASTERING 11
#define GPURES__AV_FRAME_DATA_CONTENT_LIGHT 14

/*
** Where the fields gpures reads sit, per major version. AVFrame's first
** members (data[8] at 0, linesize[8] at 64, width at 104, height at 108,
** format at 116) and AVPacket's (pts 8, dts 16, data 24, size 32, flags 40,
** duration 64) are the same in every major gpures knows; AVCodec's type, id
** and capabilities sit at 16, 20 and 24 in all of them.
*/
typedef struct gpures__av_layout {
  unsigned avcodec_major, avutil_major;
  const char *ffmpeg;        /* "FFmpeg 5.1" */
  uint16_t ctx_opaque, ctx_extradata, ctx_extradata_size, ctx_get_buffer2, ctx_framerate;
  uint16_t ctx_thread_safe_callbacks; /* 0: gone (libavcodec 60 on trusts every get_buffer2) */
  uint16_t frame_pict_type, frame_pts, frame_buf, frame_color_range, frame_best_effort,
      frame_duration;        /* AVFrame.duration, or pkt_duration before it existed */
} gpures__av_layout;

#define GPURES__AV_FRAME_DATA 0
#define GPURES__AV_FRAME_LINESIZE 64
#define GPURES__AV_FRAME_WIDTH 104
#define GPURES__AV_FRAME_HEIGHT 108
#define GPURES__AV_FRAME_FORMAT 116
#define GPURES__AV_PACKET_PTS 8
#define GPURES__AV_PACKET_DTS 16
#define GPURES__AV_PACKET_DATA 24
#define GPURES__AV_PACKET_SIZE 32
#define GPURES__AV_PACKET_FLAGS 40
#define GPURES__AV_PACKET_DURATION 64
#define GPURES__AV_CODEC_CAPABILITIES 24

/* symbol, member, result, parameters: every entry point gpures calls, all required. */
#define GPURES__AV_FNS(X)                                                                       \
  X("avcodec_version", avcodec_version, unsigned, (void))                                       \
  X("avutil_version", avutil_version, unsigned, (void))                                         \
  X("avcodec_find_decoder_by_name", find_decoder, const AVCodec *, (const char *))              \
  X("avcodec_find_encoder_by_name", find_encoder, const AVCodec *, (const char *))              \
  X("avcodec_alloc_context3", alloc_context, AVCodecContext *, (const AVCodec *))               \
  X("avcodec_free_context", free_context, void, (AVCodecContext **))                            \
  X("avcodec_open2", open, int, (AVCodecContext *, const AVCodec *, AVDictionary **))           \
  X("avcodec_send_packet", send_packet, int, (AVCodecContext *, const AVPacket *))              \
  X("avcodec_receive_frame", receive_frame, int, (AVCodecContext *, AVFrame *))                 \
  X("avcodec_send_frame", send_frame, int, (AVCodecContext *, const AVFrame *))                 \
  X("avcodec_receive_packet", receive_packet, int, (AVCodecContext *, AVPacket *))              \
  X("avcodec_flush_buffers", flush_buffers, void, (AVCodecContext *))                           \
  X("avcodec_align_dimensions2", align_dimensions, void,                                        \
    (AVCodecContext *, int *, int *, int[8]))                                                   \
  X("avcodec_default_get_buffer2", default_get_buffer2, int, (AVCodecContext *, AVFrame *, int)) \
  X("av_packet_alloc", packet_alloc, AVPacket *, (void))                                        \
  X("av_packet_free", packet_free, void, (AVPacket **))                                         \
  X("av_packet_unref", packet_unref, void, (AVPacket *))                                        \
  X("av_new_packet", new_packet, int, (AVPacket *, int))                                        \
  X("av_frame_alloc", frame_alloc, AVFrame *, (void))                                           \
  X("av_frame_free", frame_free, void, (AVFrame **))                                            \
  X("av_frame_unref", frame_unref, void, (AVFrame *))                                           \
  X("av_frame_get_side_data", frame_side_data, void *, (const AVFrame *, int))                  \
  X("av_buffer_create", buffer_create, AVBufferRef *,                                           \
    (uint8_t *, size_t, void (*)(void *, uint8_t *), void *, int))                              \
  X("av_buffer_get_opaque", buffer_opaque, void *, (const AVBufferRef *))                       \
  X("av_malloc", malloc, void *, (size_t))                                                      \
  X("av_opt_set", opt_set, int, (void *, const char *, const char *, int))                      \
  X("av_opt_set_int", opt_set_int, int, (void *, const char *, int64_t, int))                   \
  X("av_opt_set_q", opt_set_q, int, (void *, const char *, gpures__av_rational, int))           \
  X("av_opt_set_image_size", opt_set_image_size, int, (void *, const char *, int, int, int))    \
  X("av_opt_set_pixel_fmt", opt_set_pixel_fmt, int, (void *, const char *, int, int))          \
  X("av_opt_get_int", opt_get_int, int, (void *, const char *, int, int64_t *))                 \
  X("av_opt_find", opt_find, const void *, (void *, const char *, const char *, int, int))      \
  X("av_get_pix_fmt", pix_fmt_by_name, int, (const char *))                                     \
  X("av_get_pix_fmt_name", pix_fmt_name, const char *, (int))                                   \
  X("av_dict_parse_string", dict_parse, int,                                                    \
    (AVDictionary **, const char *, const char *, const char *, int))                           \
  X("av_dict_get", dict_get, void *, (const AVDictionary *, const char *, const void *, int))   \
  X("av_dict_free", dict_free, void, (AVDictionary **))                                         \
  X("av_strerror", strerror, int, (int, char *, size_t))

typedef struct gpures__av {
#define GPURES__AV_MEMBER(name, member, result, params) result(*member) params;
  GPURES__AV_FNS(GPURES__AV_MEMBER)
#undef GPURES__AV_MEMBER
  const gpures__av_layout *layout;
  char library[256];
} gpures__av;

/* FFmpeg, opened once; UNSUPPORTED naming what is missing (and how to install it) otherwise. */
int gpures__av_ready(gpures__op op, const gpures__av **out);

/* What gpures__av_ready() gave, for callbacks of the objects made since (no check). */
const gpures__av *gpures__av_loaded(void);

/* Field access through a layout's offsets. */
#define GPURES__AT(p, off, T) (*(T *)((uint8_t *)(p) + (off)))

/* FFmpeg's text for an AVERROR, in a per-thread buffer. */
const char *gpures__av_error(int err);
/* A failed FFmpeg call as a gpures error: INVALID_VALUE for bad data, OUT_OF_MEMORY, else UNSUPPORTED. */
int gpures__av_fail(gpures__op op, const char *field, const char *what, int err);

/* FFmpeg's pixel format for a PixelFormat id, -1 when it has none. */
int gpures__av_pix_fmt(uint32_t format);
/* The PixelFormat id of an FFmpeg pixel format, 0 when gpures has none. */
uint32_t gpures__av_format_of(int pix_fmt);

/* The process's codec counters (gpures_codec_stats_get). */
typedef enum { GPURES__COUNT_DECODED, GPURES__COUNT_ENCODED, GPURES__COUNT_COPIED } gpures__count;
void gpures__codec_count(gpures__count what, uint64_t bytes);

/*
** How a run ended, for the host thread that asks afterwards: a run's error is
** recorded on the thread that ran it, which is not the host's.
*/
typedef struct gpures__run_outcome {
  int status;
  char field[64];
  char message[384]; /* after "Cannot <verb>: " */
} gpures__run_outcome;
void gpures__run_outcome_keep(gpures__run_outcome *o, int status);
int gpures__run_outcome_tell(gpures__op op, const gpures__run_outcome *o);

/* ---------------------------------------------------------- libavformat.c */

typedef struct AVFormatContext AVFormatContext;
typedef struct AVStream AVStream;
typedef struct AVCodecParameters AVCodecParameters;
typedef struct AVIOContext AVIOContext;

/* AVFormatContext's first members, the same in every major gpures knows. */
#define GPURES__AVF_OFORMAT 16
#define GPURES__AVF_PB 32
#define GPURES__AVF_NB_STREAMS 44
#define GPURES__AVF_STREAMS 48
#define GPURES__AV_PACKET_STREAM_INDEX 36
/* AVCodecParameters' first members (codec_type, codec_id), likewise. */
#define GPURES__AV_PAR_TYPE 0
#define GPURES__AV_PAR_ID 4
#define GPURES__AV_PAR_EXTRADATA 16
#define GPURES__AV_PAR_EXTRADATA_SIZE 24
#define GPURES__AVERROR_EXIT (-0x54495845) /* FFERRTAG('E','X','I','T'): an interrupt callback said stop */
/* AVOutputFormat's flags, and its AVFMT_NOFILE. */
#define GPURES__AV_OFORMAT_FLAGS 44
#define GPURES__AVFMT_NOFILE 1
#define GPURES__AVDISCARD_DEFAULT 0
#define GPURES__AVDISCARD_ALL 48
#define GPURES__AV_DISPOSITION_DEFAULT 1

/* Where AVStream's fields sit, per libavformat major. */
typedef struct gpures__avf_layout {
  unsigned avformat_major;
  uint16_t st_index, st_codecpar, st_time_base, st_duration, st_nb_frames, st_disposition,
      st_discard, st_avg_frame_rate;
} gpures__avf_layout;

#define GPURES__AVF_FNS(X)                                                                      \
  X("avformat_version", avformat_version, unsigned, (void))                                     \
  X("avformat_alloc_context", alloc_context, AVFormatContext *, (void))                         \
  X("av_probe_input_buffer2", probe, int,                                                       \
    (AVIOContext *, const void **, const char *, void *, unsigned, unsigned))                   \
  X("avformat_open_input", open_input, int,                                                     \
    (AVFormatContext **, const char *, const void *, AVDictionary **))                          \
  X("avformat_find_stream_info", find_stream_info, int, (AVFormatContext *, AVDictionary **))   \
  X("avformat_close_input", close_input, void, (AVFormatContext **))                            \
  X("av_find_input_format", find_input_format, const void *, (const char *))                    \
  X("av_read_frame", read_frame, int, (AVFormatContext *, AVPacket *))                          \
  X("av_guess_frame_rate", guess_frame_rate, gpures__av_rational,                               \
    (AVFormatContext *, AVStream *, AVFrame *))                                                 \
  X("avformat_alloc_output_context2", alloc_output, int,                                        \
    (AVFormatContext **, const void *, const char *, const char *))                             \
  X("avformat_free_context", free_context, void, (AVFormatContext *))                           \
  X("avformat_new_stream", new_stream, AVStream *, (AVFormatContext *, const AVCodec *))        \
  X("avformat_query_codec", query_codec, int, (const void *, int, int))                         \
  X("avformat_init_output", init_output, int, (AVFormatContext *, AVDictionary **))            \
  X("avformat_write_header", write_header, int, (AVFormatContext *, AVDictionary **))           \
  X("av_interleaved_write_frame", write_frame, int, (AVFormatContext *, AVPacket *))            \
  X("av_write_trailer", write_trailer, int, (AVFormatContext *))                                \
  X("avio_open2", avio_open, int,                                                               \
    (AVIOContext **, const char *, int, const void *, AVDictionary **))                         \
  X("avio_closep", avio_closep, int, (AVIOContext **))                                          \
  X("avcodec_parameters_to_context", par_to_context, int,                                       \
    (AVCodecContext *, const AVCodecParameters *))                                              \
  X("avcodec_parameters_from_context", par_from_context, int,                                   \
    (AVCodecParameters *, const AVCodecContext *))                                              \
  X("avcodec_get_name", codec_name, const char *, (int))                                        \
  X("avcodec_find_decoder", decoder_of, const AVCodec *, (int))                                 \
  X("avcodec_find_encoder", encoder_of, const AVCodec *, (int))                                 \
  X("avcodec_descriptor_get_by_name", descriptor_by_name, const void *, (const char *))         \
  X("av_packet_rescale_ts", packet_rescale_ts, void,                                            \
    (AVPacket *, gpures__av_rational, gpures__av_rational))                                     \
  X("av_opt_get_image_size", opt_get_image_size, int, (void *, const char *, int, int *, int *))   \
  X("av_opt_get_q", opt_get_q, int, (void *, const char *, int, gpures__av_rational *))         \
  X("av_dict_set", dict_set, int, (AVDictionary **, const char *, const char *, int))           \
  X("av_dict_copy", dict_copy, int, (AVDictionary **, const AVDictionary *, int))

typedef struct gpures__avf {
#define GPURES__AVF_MEMBER(name, member, result, params) result(*member) params;
  GPURES__AVF_FNS(GPURES__AVF_MEMBER)
#undef GPURES__AVF_MEMBER
  const gpures__avf_layout *layout;
  char library[256];
} gpures__avf;

/* libavcodec (gpures__av_ready) and then libavformat, opened once; UNSUPPORTED naming what is missing. */
int gpures__avf_ready(gpures__op op, const gpures__av **out_av, const gpures__avf **out_avf);
/* What gpures__avf_ready() gave (no check). */
const gpures__avf *gpures__avf_loaded(void);

/*
** The protocols a url may open: `given`, which must name the url's own; else
** "file" for a path, and for a URL of a known scheme that scheme and what
** carries it. UNSUPPORTED naming "protocols" otherwise.
*/
int gpures__avf_protocols(gpures__op op, const char *url, const char *given, const char **out);
/* Whether the n characters of name are one of the comma-separated list (case-insensitive). */
bool gpures__avf_listed(const char *list, const char *name, size_t n);
/* Whether any of the comma-separated names (a demuxer's "mov,mp4,...") is one of list. */
bool gpures__avf_named(const char *list, const char *names);
/* Whether url is a path (no scheme libavformat would read). */
bool gpures__avf_is_path(const char *url);
/* How long network I/O may go without progress when the caller does not say. */
#define GPURES__AVF_NETWORK_TIMEOUT_MS 30000u
/* The options of every open of url: certificates checked, and its timeout (0: the default for url). */
int gpures__avf_io_options(gpures__op op, AVDictionary **dict, const char *url, uint32_t timeout_ms);
/* Checks a url a caller gave: not null, 1..GPURES__AVF_MAX_URL characters; named "url". */
#define GPURES__AVF_MAX_URL 4096u
int gpures__avf_check_url(gpures__op op, const char *url);
/* A copy of s that gpures__free() frees, or NULL. */
char *gpures__avf_copy(const char *s);
/* Checks a comma-separated list of names given for `field`: letters, digits, '_', '-' only. */
int gpures__avf_check_list(gpures__op op, const char *field, const char *list);
/* The demuxers probing may pick by default: containers that open nothing else. */
extern const char gpures__avf_default_formats[];
/* A failed libavformat call on `url`: OS_ERROR with the errno, INVALID_VALUE for bad data, else UNSUPPORTED. */
int gpures__avf_fail(gpures__op op, const char *field, const char *what, int err);

/* ------------------------------------------------------------ mappings.c */

/* One mapped buffer; refs > 0 while a codec uses it. */
typedef struct gpures__mapped {
  uint64_t buffer_id;
  uint8_t *ptr;
  uint64_t size;
  uint32_t refs;
} gpures__mapped;

typedef struct gpures__map_cache {
  pthread_mutex_t mu;
  gpures__mapped *entries;
  uint32_t count, capacity, limit;
  uint32_t map_flags; /* GPURES_MAP_READ | _WRITE */
} gpures__map_cache;

void gpures__map_cache_init(gpures__map_cache *c, uint32_t limit, uint32_t map_flags);
/* The mapping of the frame's fd 0, made or found, with a reference the caller puts back. */
int gpures__map_cache_get(gpures__op op, gpures__map_cache *c, gpures_handle frame,
                          gpures__mapped *out);
void gpures__map_cache_put(gpures__map_cache *c, const gpures__mapped *m);
/* Unmaps everything; no reference may be out. */
void gpures__map_cache_free(gpures__map_cache *c);

#endif /* __linux__ */
#endif /* GPURES_CODEC_H */
