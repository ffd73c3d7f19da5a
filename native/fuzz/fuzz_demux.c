/*
** fuzz_demux.c: a libFuzzer target over the path a file takes into frames:
** gpures_demuxer_* over the input's bytes (a memfd opened by path, under the
** default protocol and container lists), and every video track whose codec
** gpures decodes through a gpures_decoder into pool slots.
**
**   CC=clang cmake -S . -B build-fuzz -DGPURES_BUILD_FUZZ=ON && cmake --build build-fuzz --target fuzz_demux
**   build-fuzz/fuzz_demux -max_total_time=30 native/fuzz/corpus_demux
**
** FFmpeg itself is not instrumented (it is the system's, opened with dlopen),
** so libFuzzer's coverage guides through gpures' own code only; the
** sanitizers still see every byte gpures reads and writes. The seeds
** (native/fuzz/make_demux_corpus.sh) are tiny files of each container and
** codec. Besides the sanitizers, the target checks what gpures promises:
**   - open, read and decode either succeed or fail with a status and a
**     message naming a field; a failed open leaves no track;
**   - a packet is of a selected track, its size within 2^31, its data there;
**   - after destroy, no fd the input opened stays open and no handle lives
**     (every decoded frame released, every slot home).
*/
#define FUZZ_NAME "fuzz_demux"
#include "fuzz.h"

#include <dlfcn.h>

#define MAX_PACKETS 48

static void fuzz_setup(void) {
  /* FFmpeg's log of every malformed input would be most of the run's time. */
  void *avutil = dlopen("libavutil.so.57", RTLD_NOW | RTLD_NOLOAD);
  if (!avutil) avutil = dlopen("libavutil.so.60", RTLD_NOW | RTLD_NOLOAD);
  gpures_codec_info info = {.struct_size = sizeof info};
  (void)gpures_codec_library(&info); /* loads libavcodec, and its libavutil with it */
  if (!avutil) avutil = dlopen("libavutil.so.57", RTLD_NOW | RTLD_NOLOAD);
  if (!avutil) avutil = dlopen("libavutil.so.60", RTLD_NOW | RTLD_NOLOAD);
  void (*set_level)(int) = avutil ? (void (*)(int))dlsym(avutil, "av_log_set_level") : NULL;
  if (set_level) set_level(-8 /* AV_LOG_QUIET */);
}

/* The libavcodec decoder gpures uses for a track's codec, or NULL. */
static const char *decoder_for(const char *codec) {
  static const char *const known[][2] = {
      {"h264", "h264"}, {"hevc", "hevc"}, {"vp8", "vp8"}, {"vp9", "vp9"}, {"av1", "libdav1d"}};
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (strcmp(codec, known[i][0]) == 0)
      return gpures_codec_find(known[i][1], GPURES_CODEC_DECODER) == GPURES_OK ? known[i][1] : NULL;
  return NULL;
}

static void expect_named_failure(int status, const char *what) {
  FUZZ_EXPECT(status > 0, "%s returned %d", what, status);
  FUZZ_EXPECT(gpures_last_error()[0] != 0, "%s failed without a message", what);
}

/* Every frame the decoder has, released. */
static void drain_frames(gpures_decoder *dec) {
  for (int i = 0; i < 64; i++) {
    gpures_handle frame = 0;
    int status = gpures_decoder_receive(dec, &frame);
    if (status != GPURES_OK) return expect_named_failure(status, "gpures_decoder_receive");
    if (!frame) return;
    EXPECT_OK(gpures_release(frame));
  }
}

static gpures_decoder *decoder_of(gpures_demuxer *d, uint32_t track) {
  gpures_track_info t = {.struct_size = sizeof t};
  if (gpures_demuxer_track(d, track, &t) != GPURES_OK || t.media != GPURES_MEDIA_VIDEO) return NULL;
  const char *codec = decoder_for(t.codec);
  if (!codec) return NULL;
  uint8_t extradata[4096];
  uint32_t size = 0;
  if (gpures_demuxer_extradata(d, track, extradata, sizeof extradata, &size) != GPURES_OK) size = 0;
  gpures_decoder_desc dd = {.struct_size = sizeof dd, .codec = codec, .extradata = size ? extradata : NULL,
                            .extradata_size = size, .slots = 6,
                            .timebase_num = t.timebase_num, .timebase_den = t.timebase_den};
  gpures_decoder *dec = NULL;
  int status = gpures_decoder_create(&dd, &dec);
  if (status != GPURES_OK) expect_named_failure(status, "gpures_decoder_create");
  return dec;
}

static void demux_and_decode(gpures_demuxer *d) {
  uint32_t tracks = 0;
  EXPECT_OK(gpures_demuxer_track_count(d, &tracks));
  gpures_decoder *decoders[4] = {0};
  for (uint32_t i = 0; i < tracks && i < 4; i++) decoders[i] = decoder_of(d, i);
  for (int n = 0; n < MAX_PACKETS; n++) {
    int status = gpures_demuxer_read(d);
    if (status != GPURES_OK) {
      expect_named_failure(status, "gpures_demuxer_read");
      continue;
    }
    uint32_t track = 0;
    gpures_packet p = {.struct_size = sizeof p};
    EXPECT_OK(gpures_demuxer_packet(d, &track, &p));
    if (track == GPURES_TRACK_END) break;
    FUZZ_EXPECT(track < tracks && p.size > 0 && p.size < (1ull << 31) && p.data,
                "packet of track %u of %u, %llu bytes", track, tracks, (unsigned long long)p.size);
    gpures_decoder *dec = track < 4 ? decoders[track] : NULL;
    if (!dec) continue;
    p.flags &= GPURES_PACKET_KEY;
    if (p.pts == INT64_MIN) p.pts = 0;
    status = gpures_decoder_send(dec, &p);
    if (status != GPURES_OK && status != GPURES_E_TIMED_OUT) expect_named_failure(status, "send");
    drain_frames(dec);
  }
  for (uint32_t i = 0; i < 4; i++) {
    if (!decoders[i]) continue;
    (void)gpures_decoder_send(decoders[i], NULL);
    drain_frames(decoders[i]);
    EXPECT_OK(gpures_decoder_destroy(decoders[i]));
  }
}

/* The input as a file: a memfd holding its bytes. */
static int input_file(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz-demux", MFD_CLOEXEC);
  FUZZ_EXPECT(fd >= 0, "memfd_create: %s", strerror(errno));
  for (size_t at = 0; at < size;) {
    ssize_t n = write(fd, data + at, size - at);
    FUZZ_EXPECT(n > 0, "write: %s", strerror(errno));
    at += (size_t)n;
  }
  return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fd_set_bits before = open_fds();
  int fd = input_file(data, size);
  char url[64];
  snprintf(url, sizeof url, "/proc/self/fd/%d", fd);
  gpures_demuxer_desc dd = {.struct_size = sizeof dd, .url = url};
  gpures_demuxer *d = NULL;
  EXPECT_OK(gpures_demuxer_create(&dd, &d));
  int status = gpures_demuxer_open(d);
  if (status == GPURES_OK) {
    demux_and_decode(d);
  } else {
    expect_named_failure(status, "gpures_demuxer_open");
    uint32_t tracks = 7;
    FUZZ_EXPECT(gpures_demuxer_track_count(d, &tracks) != GPURES_OK && tracks == 0,
                "a failed open left %u tracks", tracks);
  }
  EXPECT_OK(gpures_demuxer_destroy(d));
  close(fd);
  fd_set_bits after = open_fds();
  FUZZ_EXPECT(same_fds(&before, &after), "an fd the input opened stayed open");
  FUZZ_EXPECT(gpures_live_handles(0) == 0, "%llu handles live after the input",
              (unsigned long long)gpures_live_handles(0));
  return 0;
}
