/*
** test_container.c: demuxers and muxers over FFmpeg's libavformat (Linux).
** Packets written into mp4, Matroska and MPEG-TS come back out of each with
** their bytes, key flags and timestamps, on a track that says its codec,
** size, timebase, frame rate, colour and configuration record; the AVStream
** offsets gpures reads are the ones the library has; and what an attacker
** controls (the url, the lists, the file's bytes) is refused by name, never
** followed: a playlist is not opened, nor a protocol not allowed. Skipped,
** saying so, where libavformat or libx264 is missing.
*/
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "check.h"

GPURES_API int gpures__test_container_offset(const char *field);

#define W 160u
#define H 96u
#define FRAMES 10

typedef struct stream {
  gpures_packet packets[FRAMES + 4];
  uint8_t *data[FRAMES + 4];
  int count;
  uint8_t extradata[512];
  uint32_t extradata_size;
} stream;

static char dir[64];

static const char *path_of(const char *name) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static void keep_packets(gpures_encoder *e, stream *s) {
  for (;;) {
    gpures_packet p = {.struct_size = sizeof p};
    CHECK_OK(gpures_encoder_receive(e, &p));
    if (!p.size || s->count == FRAMES + 4) return;
    s->data[s->count] = malloc(p.size);
    memcpy(s->data[s->count], p.data, p.size);
    s->packets[s->count] = p;
    s->packets[s->count].data = s->data[s->count];
    s->count++;
  }
}

/* FRAMES frames of H.264 at 25 fps in milliseconds, with an avcC-ready global header. */
static stream encode_stream(void) {
  stream s;
  memset(&s, 0, sizeof s);
  gpures_encoder_desc d = {.struct_size = sizeof d, .flags = GPURES_ENCODER_GLOBAL_HEADER,
                           .codec = "libx264", .options = "preset=ultrafast",
                           .format = GPURES_PF_YUV420P, .width = W, .height = H,
                           .timebase_num = 1, .timebase_den = 1000, .framerate_num = 25,
                           .framerate_den = 1, .gop = 5};
  gpures_encoder *e = NULL;
  CHECK_OK(gpures_encoder_create(&d, &e));
  gpures_pool_desc pd = {sizeof pd, 0, GPURES_PF_YUV420P, W, H, 2, 0, 0};
  gpures_pool *pool = NULL;
  CHECK_OK(gpures_pool_create(&pd, &pool));
  for (int n = 0; e && pool && n < FRAMES; n++) {
    gpures_handle frame = 0;
    CHECK_OK(gpures_pool_acquire(pool, 1000, 0, NULL, &frame));
    CHECK_OK(gpures_encoder_queue_at(e, frame, 0, n * 40));
    CHECK_OK(gpures_release(frame));
    CHECK_OK(gpures_encoder_run(e));
    keep_packets(e, &s);
  }
  CHECK_OK(gpures_encoder_send(e, 0, 0));
  keep_packets(e, &s);
  CHECK_OK(gpures_encoder_extradata(e, s.extradata, sizeof s.extradata, &s.extradata_size));
  CHECK_OK(gpures_encoder_destroy(e));
  CHECK_OK(gpures_pool_close(pool));
  return s;
}

static void free_stream(stream *s) {
  for (int i = 0; i < s->count; i++) free(s->data[i]);
}

static void mux(const stream *s, const char *url, const char *format) {
  gpures_muxer_desc md = {.struct_size = sizeof md, .url = url, .format = format};
  gpures_muxer *m = NULL;
  CHECK_OK(gpures_muxer_create(&md, &m));
  gpures_mux_track_desc td = {.struct_size = sizeof td, .codec = "h264",
                              .extradata = s->extradata, .extradata_size = s->extradata_size,
                              .width = W, .height = H, .timebase_num = 1, .timebase_den = 1000,
                              .framerate_num = 25, .framerate_den = 1, .color_primaries = 1,
                              .color_transfer = 1, .color_matrix = 1, .color_range = 1};
  uint32_t track = 99;
  CHECK_OK(gpures_muxer_add_track(m, &td, &track));
  CHECK(track == 0);
  for (int i = 0; i < s->count; i++) CHECK_OK(gpures_muxer_queue(m, 0, &s->packets[i]));
  CHECK_OK(gpures_muxer_run(m));
  CHECK_OK(gpures_muxer_write(m, 0, NULL));
  CHECK_OK(gpures_muxer_destroy(m));
}

static gpures_demuxer *open_demuxer(const char *url, const char *protocols, const char *formats) {
  gpures_demuxer_desc dd = {.struct_size = sizeof dd, .url = url, .protocols = protocols,
                            .formats = formats};
  gpures_demuxer *d = NULL;
  CHECK_OK(gpures_demuxer_create(&dd, &d));
  return d;
}

/* The next NAL unit of an Annex B or 4-byte length-prefixed access unit, skipping what a
** muxer adds (access unit delimiters, parameter sets in band); NULL at its end. */
static const uint8_t *next_nal(const uint8_t *p, const uint8_t *end, size_t *size) {
  for (;;) {
    if (end - p < 4) return NULL;
    const uint8_t *nal;
    if (p[0] == 0 && p[1] == 0 && (p[2] == 1 || (p[2] == 0 && p[3] == 1))) {
      nal = p + (p[2] == 1 ? 3 : 4);
      const uint8_t *q = nal;
      while (end - q >= 3 && !(q[0] == 0 && q[1] == 0 && (q[2] == 1 || q[2] == 0))) q++;
      if (end - q < 3) q = end;
      *size = (size_t)(q - nal);
    } else {
      size_t n = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
      nal = p + 4;
      if (n > (size_t)(end - nal)) return NULL;
      *size = n;
    }
    int type = nal[0] & 31;
    if (type != 9 && type != 7 && type != 8) return nal;
    p = nal + *size;
  }
}

/* Whether two access units hold the same slices, however each is framed. */
static bool same_slices(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
  const uint8_t *ea = a + na, *eb = b + nb;
  size_t sa = 0, sb = 0;
  int count = 0;
  for (;;) {
    a = next_nal(a, ea, &sa);
    b = next_nal(b, eb, &sb);
    if (!a || !b) return !a && !b && count > 0;
    if (sa != sb || memcmp(a, b, sa) != 0) return false;
    a += sa, b += sb, count++;
  }
}

/* Whether the demuxer's next read gives no packet: the input ended, or nothing selected is left. */
static bool reads_to_the_end(gpures_demuxer *d) {
  uint32_t track = 0;
  gpures_packet p = {.struct_size = sizeof p};
  return gpures_demuxer_read(d) == GPURES_OK && gpures_demuxer_packet(d, &track, &p) == GPURES_OK &&
         track == GPURES_TRACK_END && p.size == 0;
}

/* The packets of a file come back as they went in: bytes, key flags, timestamps in ms. */
static void check_round_trip(const stream *s, const char *name, const char *format,
                             bool has_record) {
  mux(s, path_of(name), format);
  gpures_demuxer *d = open_demuxer(path_of(name), NULL, NULL);
  CHECK_OK(gpures_demuxer_open(d));
  uint32_t tracks = 0;
  CHECK_OK(gpures_demuxer_track_count(d, &tracks));
  CHECK(tracks == 1);
  gpures_track_info t = {.struct_size = sizeof t};
  CHECK_OK(gpures_demuxer_track(d, 0, &t));
  CHECK(t.media == GPURES_MEDIA_VIDEO);
  CHECK_STR(t.codec, "h264");
  CHECK_STR(t.pixel_format, "yuv420p");
  CHECK(t.width == W && t.height == H);
  CHECK(t.profile > 0 && t.level > 0);
  CHECK(t.framerate_num == 25 && t.framerate_den == 1);
  CHECK(t.timebase_num >= 1 && t.timebase_den >= 25);
  /* mp4 and Matroska carry the colour the track was given; MPEG-TS leaves it to the bitstream. */
  if (has_record)
    CHECK(t.color_primaries == 1 && t.color_transfer == 1 && t.color_matrix == 1 &&
          t.color_range == 1);
  uint8_t record[512];
  uint32_t size = 0;
  CHECK_OK(gpures_demuxer_extradata(d, 0, record, sizeof record, &size));
  /* The encoder's parameter sets (Annex B) are an avcC record in mp4 and Matroska. */
  if (has_record) CHECK(size > 7 && record[0] == 1 && record[1] == s->extradata[5]);
  int n = 0;
  int64_t offset = 0;
  for (;; n++) {
    CHECK_OK(gpures_demuxer_read(d));
    uint32_t track = 0;
    gpures_packet p = {.struct_size = sizeof p};
    CHECK_OK(gpures_demuxer_packet(d, &track, &p));
    if (track == GPURES_TRACK_END) {
      CHECK(p.size == 0);
      break;
    }
    if (n >= s->count) continue;
    const gpures_packet *want = &s->packets[n];
    /* mp4 and Matroska frame NAL units by length, MPEG-TS by start code with delimiters. */
    CHECK(same_slices(p.data, p.size, want->data, want->size));
    CHECK((p.flags & GPURES_PACKET_KEY) == (want->flags & GPURES_PACKET_KEY));
    /* A container may move the whole clock (MPEG-TS starts it later): the steps stay. */
    int64_t pts_ms = p.pts * 1000 * t.timebase_num / t.timebase_den;
    if (n == 0) offset = pts_ms - want->pts;
    CHECK(llabs(pts_ms - want->pts - offset) <= 1);
  }
  CHECK(n == s->count);
  CHECK(reads_to_the_end(d)); /* reading after the end reads nothing more */
  CHECK_OK(gpures_demuxer_destroy(d));
}

static void packets_come_back_out_of_mp4_matroska_and_mpegts_as_they_went_in(void) {
  stream s = encode_stream();
  CHECK(s.count == FRAMES);
  check_round_trip(&s, "a.mp4", NULL, true);
  check_round_trip(&s, "a.mkv", "matroska", true);
  check_round_trip(&s, "a.ts", "mpegts", false);
  free_stream(&s);
}

static void the_avstream_offsets_are_the_librarys(void) {
  stream s = encode_stream();
  mux(&s, path_of("layout.mp4"), NULL);
  gpures_demuxer *d = open_demuxer(path_of("layout.mp4"), NULL, NULL);
  CHECK_OK(gpures_demuxer_open(d));
  gpures_track_info t = {.struct_size = sizeof t};
  CHECK_OK(gpures_demuxer_track(d, 0, &t));
  /* What mp4 says of the track: its frame count, its duration, the default flag. */
  CHECK(t.frames == FRAMES);
  CHECK(t.duration > 0);
  int64_t ms = t.duration * 1000 * t.timebase_num / t.timebase_den;
  CHECK(ms >= (FRAMES - 1) * 40 && ms <= FRAMES * 40);
  CHECK(t.flags & GPURES_TRACK_DEFAULT);
  CHECK(gpures__test_container_offset("stream.codecpar") > 0);
  CHECK(gpures__test_container_offset("nothing") == -1);
  /* A track not selected gives no packet. */
  CHECK_OK(gpures_demuxer_select(d, 0, 0));
  CHECK(reads_to_the_end(d));
  CHECK_OK(gpures_demuxer_destroy(d));
  free_stream(&s);
}

static void write_file(const char *name, const char *text) {
  FILE *f = fopen(path_of(name), "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void a_playlist_or_a_protocol_not_allowed_is_not_followed(void) {
  stream s = encode_stream();
  mux(&s, path_of("inner.ts"), "mpegts");
  /* A playlist naming another file: HLS is not one of the default formats. */
  char list[512];
  snprintf(list, sizeof list, "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\n%s\n#EXT-X-ENDLIST\n",
           path_of("inner.ts"));
  write_file("list.m3u8", list);
  gpures_demuxer *d = open_demuxer(path_of("list.m3u8"), NULL, NULL);
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "formats", gpures_demuxer_open(d));
  uint32_t tracks = 9;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "demuxer", gpures_demuxer_track_count(d, &tracks));
  CHECK(tracks == 0);
  CHECK_OK(gpures_demuxer_destroy(d));
  /* An ffconcat list likewise. */
  snprintf(list, sizeof list, "ffconcat version 1.0\nfile '%s'\n", path_of("inner.ts"));
  write_file("list.ffconcat", list);
  d = open_demuxer(path_of("list.ffconcat"), NULL, NULL);
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "formats", gpures_demuxer_open(d));
  CHECK_OK(gpures_demuxer_destroy(d));
  /* A protocol the list does not name is refused before anything is opened. */
  gpures_demuxer_desc dd = {.struct_size = sizeof dd, .url = "http://127.0.0.1:9/x.mp4",
                            .protocols = "file"};
  d = NULL;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "protocols", gpures_demuxer_create(&dd, &d));
  CHECK(d == NULL);
  free_stream(&s);
}

static void an_input_that_is_missing_or_not_a_container_is_refused_by_name(void) {
  gpures_demuxer *d = open_demuxer(path_of("missing.mp4"), NULL, NULL);
  CHECK_FAILS(GPURES_E_OS_ERROR, "url", gpures_demuxer_open(d));
  CHECK(strstr(gpures_last_error(), "ENOENT") != NULL);
  CHECK_OK(gpures_demuxer_destroy(d));
  write_file("garbage.mp4", "this is not a container, though its name says it is\n");
  d = open_demuxer(path_of("garbage.mp4"), NULL, NULL);
  CHECK(gpures_demuxer_open(d) != GPURES_OK);
  CHECK(strcmp(gpures_last_error_field(), "url") == 0 ||
        strcmp(gpures_last_error_field(), "formats") == 0);
  CHECK_OK(gpures_demuxer_destroy(d));
}

static void a_truncated_file_reads_what_it_has_and_ends(void) {
  stream s = encode_stream();
  const char *names[] = {"cut.mkv", "cut.ts", "cut.mp4"};
  const char *formats[] = {"matroska", "mpegts", NULL};
  for (int f = 0; f < 3; f++) {
    mux(&s, path_of(names[f]), formats[f]);
    FILE *file = fopen(path_of(names[f]), "r+");
    CHECK(file != NULL);
    if (!file) continue;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fclose(file);
    for (long cut = 0; cut < size; cut += size / 7 + 1) {
      CHECK(truncate(path_of(names[f]), cut) == 0);
      gpures_demuxer *d = open_demuxer(path_of(names[f]), NULL, NULL);
      if (gpures_demuxer_open(d) == GPURES_OK) {
        for (int i = 0; i < 4 * FRAMES; i++) {
          if (gpures_demuxer_read(d) != GPURES_OK) continue; /* a bad packet: reading goes on */
          uint32_t track = 0;
          gpures_packet p = {.struct_size = sizeof p};
          CHECK_OK(gpures_demuxer_packet(d, &track, &p));
          if (track == GPURES_TRACK_END) break;
          CHECK(track == 0 && p.size > 0 && p.data != NULL);
        }
      }
      CHECK_OK(gpures_demuxer_destroy(d));
    }
  }
  free_stream(&s);
}

static void bad_descriptors_and_calls_are_refused_by_name(void) {
  gpures_demuxer *d = NULL;
  gpures_demuxer_desc dd = {.struct_size = sizeof dd};
  CHECK_FAILS(GPURES_E_NULL_POINTER, "url", gpures_demuxer_create(&dd, &d));
  dd.url = "";
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "url", gpures_demuxer_create(&dd, &d));
  dd.url = path_of("a.mp4");
  dd.protocols = "file;rm -rf";
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "protocols", gpures_demuxer_create(&dd, &d));
  dd.protocols = NULL;
  dd.formats = "mov:x=1";
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "formats", gpures_demuxer_create(&dd, &d));
  dd.formats = NULL;
  dd.format = "no_such_demuxer";
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_demuxer_create(&dd, &d));
  dd.format = NULL;
  dd.timeout_ms = 3600001;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "timeoutMs", gpures_demuxer_create(&dd, &d));
  dd.timeout_ms = 0;
  dd.struct_size = 0;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_demuxer_create(&dd, &d));
  CHECK(d == NULL);
  /* Calls on a demuxer not open, and on tracks it does not have. */
  d = open_demuxer(path_of("a.mp4"), NULL, NULL);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "demuxer", gpures_demuxer_read(d));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "demuxer", gpures_demuxer_last_run(d));
  CHECK_OK(gpures_demuxer_open(d));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "demuxer", gpures_demuxer_open(d));
  gpures_track_info t = {.struct_size = sizeof t};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "track", gpures_demuxer_track(d, 1, &t));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "selected", gpures_demuxer_select(d, 0, 2));
  uint32_t size = 0;
  uint8_t small[4];
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_demuxer_extradata(d, 0, small, 4, &size));
  CHECK(size > 4);
  CHECK_OK(gpures_demuxer_destroy(d));

  /* Muxers. */
  gpures_muxer *m = NULL;
  gpures_muxer_desc md = {.struct_size = sizeof md, .url = path_of("x.nosuchcontainer")};
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_muxer_create(&md, &m));
  md.url = path_of("x.mp4");
  md.format = "no_such_muxer";
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_muxer_create(&md, &m));
  md.format = NULL;
  md.options = "movflags=+faststart:no_such_option=1";
  CHECK_OK(gpures_muxer_create(&md, &m));
  gpures_mux_track_desc td = {.struct_size = sizeof td, .codec = "no_such_codec", .width = W,
                              .height = H};
  uint32_t track = 0;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "codec", gpures_muxer_add_track(m, &td, &track));
  td.codec = "vp8";
  td.width = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "width", gpures_muxer_add_track(m, &td, &track));
  td.width = W;
  td.extradata_size = 4;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "extradata", gpures_muxer_add_track(m, &td, &track));
  td.extradata_size = 0;
  td.color_range = 3;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "colorRange", gpures_muxer_add_track(m, &td, &track));
  td.color_range = 0;
  td.codec = "h264";
  CHECK_OK(gpures_muxer_add_track(m, &td, &track));
  uint8_t bytes[16] = {0, 0, 0, 1, 0x65};
  gpures_packet p = {.struct_size = sizeof p, .data = bytes, .size = sizeof bytes};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "track", gpures_muxer_queue(m, 1, &p));
  p.size = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet.size", gpures_muxer_queue(m, 0, &p));
  p.size = sizeof bytes;
  p.flags = 8;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet.flags", gpures_muxer_queue(m, 0, &p));
  p.flags = GPURES_PACKET_KEY;
  /* The muxer's unknown option is named when the header is written. */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options", gpures_muxer_write(m, 0, &p));
  CHECK(strstr(gpures_last_error(), "no_such_option") != NULL);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "muxer", gpures_muxer_add_track(m, &td, &track));
  CHECK_OK(gpures_muxer_destroy(m));
  /* Timestamps that go back are the muxer's to refuse, naming the packet. */
  md.options = NULL;
  CHECK_OK(gpures_muxer_create(&md, &m));
  CHECK_OK(gpures_muxer_add_track(m, &td, &track));
  p.pts = p.dts = 40;
  CHECK_OK(gpures_muxer_write(m, 0, &p));
  p.pts = p.dts = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet", gpures_muxer_write(m, 0, &p));
  CHECK_OK(gpures_muxer_write(m, 0, NULL));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "muxer", gpures_muxer_queue(m, 0, &p));
  CHECK_OK(gpures_muxer_destroy(m));
}

static void a_short_packet_struct_is_read_no_further_than_its_size(void) {
  gpures_muxer_desc md = {.struct_size = sizeof md, .url = path_of("short.mkv")};
  gpures_muxer *m = NULL;
  CHECK_OK(gpures_muxer_create(&md, &m));
  gpures_mux_track_desc td = {.struct_size = sizeof td, .codec = "vp8", .width = W, .height = H};
  uint32_t track = 0;
  CHECK_OK(gpures_muxer_add_track(m, &td, &track));
  /* A packet of struct_size 8 in the last bytes before a page nobody may read. */
  long page = sysconf(_SC_PAGESIZE);
  uint8_t *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(pages != MAP_FAILED);
  CHECK(mprotect(pages + page, (size_t)page, PROT_NONE) == 0);
  gpures_packet *p = (gpures_packet *)(pages + page - 8);
  p->struct_size = 8;
  p->flags = GPURES_PACKET_KEY;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "packet.size", gpures_muxer_queue(m, 0, p));
  munmap(pages, 2 * (size_t)page);
  CHECK_OK(gpures_muxer_destroy(m));
}

static void what_a_muxer_opens_itself_is_held_to_its_protocols(void) {
  stream s = encode_stream();
  /* tee opens each output through a context of its own, out of the list's reach: refused. */
  char url[256];
  snprintf(url, sizeof url, "%s|[f=mpegts]pipe:1", path_of("tee.ts"));
  gpures_muxer_desc md = {.struct_size = sizeof md, .url = url, .format = "tee"};
  gpures_muxer *m = NULL;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_muxer_create(&md, &m));
  /* A muxer that opens files itself is used only when named: not picked by a url's name. */
  md.url = path_of("img%03d.png");
  md.format = NULL;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_muxer_create(&md, &m));
  /* Named, its opens are held to the list: a segment muxer writing to a pipe gets no pipe. */
  md.url = "pipe:1";
  md.format = "segment";
  md.protocols = "file";
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "protocols", gpures_muxer_create(&md, &m));
  /* A path's muxer may not be given protocols that leave out files. */
  md.url = path_of("x.mkv");
  md.format = NULL;
  md.protocols = "http";
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "protocols", gpures_muxer_create(&md, &m));
  free_stream(&s);
}

static void a_scheme_that_reaches_past_paths_must_be_named(void) {
  const char *urls[] = {"pipe:0", "fd:0", "subfile,,start,0,end,0,,:/etc/passwd", "concat:a|b"};
  for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
    gpures_demuxer_desc dd = {.struct_size = sizeof dd, .url = urls[i]};
    gpures_demuxer *d = NULL;
    CHECK_FAILS(GPURES_E_UNSUPPORTED, "protocols", gpures_demuxer_create(&dd, &d));
    CHECK(d == NULL);
  }
  /* A format asked for by name is held to the list as well. */
  gpures_demuxer_desc dd = {.struct_size = sizeof dd, .url = path_of("a.mp4"), .format = "hls"};
  gpures_demuxer *d = NULL;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_demuxer_create(&dd, &d));
}

static void a_track_says_only_what_its_own_parameters_do(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=160x96:rate=25 -f lavfi -i "
           "sine=frequency=440 -t 0.4 -c:v libx264 -pix_fmt yuv420p -c:a aac %s",
           path_of("av.mp4"));
  if (system(cmd) != 0) {
    printf("# no ffmpeg CLI with aac: skipped\n");
    return;
  }
  gpures_demuxer *d = open_demuxer(path_of("av.mp4"), NULL, NULL);
  CHECK_OK(gpures_demuxer_open(d));
  uint32_t tracks = 0;
  CHECK_OK(gpures_demuxer_track_count(d, &tracks));
  CHECK(tracks == 2);
  for (uint32_t i = 0; i < tracks; i++) {
    gpures_track_info t = {.struct_size = sizeof t};
    CHECK_OK(gpures_demuxer_track(d, i, &t));
    if (t.media == GPURES_MEDIA_VIDEO) CHECK(t.width == 160 && t.height == 96);
    if (t.media == GPURES_MEDIA_AUDIO) {
      CHECK_STR(t.codec, "aac");
      CHECK(t.width == 0 && t.height == 0 && t.pixel_format[0] == 0 && t.sar_num == 0);
    }
  }
  CHECK_OK(gpures_demuxer_destroy(d));
}

typedef struct opener {
  gpures_demuxer *d;
  int status;
} opener;

static void *open_in_thread(void *arg) {
  opener *o = arg;
  o->status = gpures_demuxer_open(o->d);
  return NULL;
}

static void an_open_stalled_on_the_network_is_interrupted(void) {
  int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  CHECK(bind(server, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(server, 1) == 0);
  CHECK(getsockname(server, (struct sockaddr *)&addr, &len) == 0);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%u", ntohs(addr.sin_port));
  opener o = {open_demuxer(url, NULL, NULL), -1};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, open_in_thread, &o) == 0);
  usleep(200 * 1000); /* connected (the backlog accepts it) and waiting for bytes never sent */
  CHECK(o.status == -1);
  CHECK_OK(gpures_demuxer_interrupt(o.d));
  pthread_join(t, NULL);
  CHECK(o.status == GPURES_E_CANCELLED);
  CHECK_FAILS(GPURES_E_CANCELLED, "demuxer", gpures_demuxer_last_run(o.d));
  CHECK_OK(gpures_demuxer_destroy(o.d));
  /* With a timeout, the silent peer is given up on by itself. */
  gpures_demuxer_desc dd = {.struct_size = sizeof dd, .url = url, .timeout_ms = 200};
  gpures_demuxer *d = NULL;
  CHECK_OK(gpures_demuxer_create(&dd, &d));
  CHECK_FAILS(GPURES_E_OS_ERROR, "url", gpures_demuxer_open(d));
  CHECK(strstr(gpures_last_error(), "ETIMEDOUT") != NULL);
  CHECK_OK(gpures_demuxer_destroy(d));
  close(server);
}

static void pre_roll_before_an_edit_list_is_marked_discard(void) {
  char cmd[640];
  snprintf(cmd, sizeof cmd,
           "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=160x96:rate=25 -frames:v 25 "
           "-c:v libx264 -g 25 -pix_fmt yuv420p %s/whole.mp4 && ffmpeg -loglevel error -y -ss 0.6 "
           "-i %s/whole.mp4 -c copy %s/cut.mp4",
           dir, dir, dir);
  if (system(cmd) != 0) {
    printf("# no ffmpeg CLI: skipped\n");
    return;
  }
  gpures_demuxer *d = open_demuxer(path_of("cut.mp4"), NULL, NULL);
  CHECK_OK(gpures_demuxer_open(d));
  int discarded = 0, shown = 0;
  for (int i = 0; i < 100; i++) {
    CHECK_OK(gpures_demuxer_read(d));
    uint32_t track = 0;
    gpures_packet p = {.struct_size = sizeof p};
    CHECK_OK(gpures_demuxer_packet(d, &track, &p));
    if (track == GPURES_TRACK_END) break;
    if (p.flags & GPURES_PACKET_DISCARD) discarded++;
    else shown++;
  }
  /* The cut starts at the key frame before 0.6 s: the frames before 0.6 s are decoded, not shown. */
  CHECK(discarded >= 10 && shown >= 8);
  CHECK_OK(gpures_demuxer_destroy(d));
}

static void a_muxers_options_may_not_touch_its_lists_nor_matroska_take_annex_b(void) {
  gpures_muxer_desc md = {.struct_size = sizeof md, .url = path_of("opts.mkv"),
                          .options = "protocol_whitelist=file,pipe:segment_list=pipe\\:1"};
  gpures_muxer *m = NULL;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options", gpures_muxer_create(&md, &m));
  md.options = NULL;
  md.timeout_ms = 3600001;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "timeoutMs", gpures_muxer_create(&md, &m));
  md.timeout_ms = 0;
  CHECK_OK(gpures_muxer_create(&md, &m));
  gpures_mux_track_desc td = {.struct_size = sizeof td, .codec = "h264", .width = W, .height = H};
  uint32_t track = 0;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "extradata", gpures_muxer_add_track(m, &td, &track));
  CHECK_OK(gpures_muxer_destroy(m));
}

int main(void) {
  gpures_muxer_desc md = {.struct_size = sizeof md, .url = "/tmp/probe.mp4"};
  gpures_muxer *m = NULL;
  if (gpures_muxer_create(&md, &m) != GPURES_OK ||
      gpures_codec_find("libx264", GPURES_CODEC_ENCODER) != GPURES_OK) {
    printf("skipped: no libavformat with libx264 here (%s)\n", gpures_last_error());
    return check_finish("test_container");
  }
  CHECK_OK(gpures_muxer_destroy(m));
  snprintf(dir, sizeof dir, "/tmp/gpures-container-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  RUN(packets_come_back_out_of_mp4_matroska_and_mpegts_as_they_went_in);
  RUN(the_avstream_offsets_are_the_librarys);
  RUN(a_playlist_or_a_protocol_not_allowed_is_not_followed);
  RUN(an_input_that_is_missing_or_not_a_container_is_refused_by_name);
  RUN(a_truncated_file_reads_what_it_has_and_ends);
  RUN(bad_descriptors_and_calls_are_refused_by_name);
  RUN(a_short_packet_struct_is_read_no_further_than_its_size);
  RUN(what_a_muxer_opens_itself_is_held_to_its_protocols);
  RUN(a_scheme_that_reaches_past_paths_must_be_named);
  RUN(a_track_says_only_what_its_own_parameters_do);
  RUN(an_open_stalled_on_the_network_is_interrupted);
  RUN(pre_roll_before_an_edit_list_is_marked_discard);
  RUN(a_muxers_options_may_not_touch_its_lists_nor_matroska_take_annex_b);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return check_finish("test_container");
}
