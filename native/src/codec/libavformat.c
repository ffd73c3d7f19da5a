/*
** libavformat.c: FFmpeg's libavformat, opened with dlopen once libavcodec is,
** never linked (as libav.c says why). It must be the libavformat built
** against the libavcodec already open: two libavcodecs in one process would
** each think it owns the packets and parameters the other made, so a
** libavformat that brought another is refused.
**
** gpures reads AVStream's fields through `layouts` (one row per major, read
** off the headers of that release, and checked against the library by
** native/tests/test_container.c, which reads each field's known value out of
** a file it made: index, timebase, duration, frame count, disposition);
** everything else is reached by function,
** or through the first members of AVFormatContext, AVCodecParameters and
** AVPacket, which no major has moved. Stream parameters are read and written
** through a scratch AVCodecContext and its AVOptions, whatever the layout.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"

static const gpures__avf_layout layouts[] = {
    {59, 0, 208, 16, 32, 40, 48, 52, 72},
    {62, 8, 16, 32, 48, 56, 64, 68, 88},
};

/* Demuxers (by any of their names) that open nothing but their own input. */
const char gpures__avf_default_formats[] =
    "mov,matroska,webm,mpegts,h264,hevc,ivf,avi,flv,mpeg,obu,av1,m4v,nut,yuv4mpegpipe";

static gpures__avf avf;
static pthread_once_t avf_once = PTHREAD_ONCE_INIT;
static char avf_problem[1024];

/* The libavformat to try: GPURES_LIBAVFORMAT, else the one beside a chosen libavcodec, else by soname. */
static void library_name(const gpures__av *av, char *out, size_t size) {
  const char *chosen = getenv("GPURES_LIBAVFORMAT");
  if (chosen && *chosen) {
    snprintf(out, size, "%s", chosen);
    return;
  }
  const char *codec = getenv("GPURES_LIBAVCODEC"), *base = codec ? strrchr(codec, '/') : NULL;
  base = base ? base + 1 : codec;
  const char *at = base ? strstr(base, "libavcodec") : NULL;
  if (at) {
    snprintf(out, size, "%.*slibavformat%s", (int)(at - codec), codec, at + strlen("libavcodec"));
    return;
  }
  snprintf(out, size, "libavformat.so.%u", av->avcodec_version() >> 16);
}

static bool load_symbols(void *lib, const char *name) {
#define GPURES__AVF_LOAD(sym, member, result, params)                                         \
  if (!(avf.member = (result(*) params)dlsym(lib, sym))) {                                    \
    snprintf(avf_problem, sizeof avf_problem, "%s has no %s: it is not FFmpeg's libavformat " \
             "(with its libavcodec and libavutil)",                                               \
             name, sym);                                                                      \
    return false;                                                                             \
  }
  GPURES__AVF_FNS(GPURES__AVF_LOAD)
#undef GPURES__AVF_LOAD
  return true;
}

static bool open_library(const gpures__av *av, const char *name) {
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(avf_problem, sizeof avf_problem,
             "%s cannot be opened (%s): install FFmpeg's libavformat of the same release as %s "
             "(on Debian and Ubuntu: apt install libavformat%u), or set GPURES_LIBAVFORMAT to it",
             name, why ? why : "not found", av->library, av->avcodec_version() >> 16);
    return false;
  }
  if (!load_symbols(lib, name)) return dlclose(lib), false;
  /* dlsym on the library's handle searches what it was linked with: its libavcodec. */
  if (dlsym(lib, "avcodec_version") != (void *)av->avcodec_version) {
    snprintf(avf_problem, sizeof avf_problem,
             "%s was linked with another libavcodec than %s: set GPURES_LIBAVFORMAT to the "
             "libavformat of the same FFmpeg",
             name, av->library);
    return dlclose(lib), false;
  }
  unsigned major = avf.avformat_version() >> 16;
  for (size_t i = 0; i < GPURES__LEN(layouts); i++)
    if (layouts[i].avformat_major == major && major == av->avcodec_version() >> 16) {
      avf.layout = &layouts[i];
      snprintf(avf.library, sizeof avf.library, "%s", name);
      return true;
    }
  snprintf(avf_problem, sizeof avf_problem,
           "%s is libavformat %u, whose AVStream gpures does not know with libavcodec %u; it knows "
           "59 (FFmpeg 5.1) and 62 (FFmpeg 8)",
           name, major, av->avcodec_version() >> 16);
  return dlclose(lib), false;
}

static void avf_open(void) {
  const gpures__av *av = gpures__av_loaded();
  char name[sizeof avf.library];
  library_name(av, name, sizeof name);
  if (open_library(av, name)) avf_problem[0] = 0;
}

int gpures__avf_ready(gpures__op op, const gpures__av **out_av, const gpures__avf **out_avf) {
  int status = gpures__av_ready(op, out_av);
  if (status != GPURES_OK) return status;
  pthread_once(&avf_once, avf_open);
  if (avf_problem[0]) return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "%s", avf_problem);
  *out_avf = &avf;
  return GPURES_OK;
}

const gpures__avf *gpures__avf_loaded(void) { return &avf; }

/* The protocols that carry each scheme's, for the default list of a URL. */
static const struct { const char *scheme, *protocols; } carriers[] = {
    {"http", "http,tcp"}, {"https", "https,tls,tcp"}, {"rtmp", "rtmp,tcp"},
    {"rtmps", "rtmps,tls,tcp"}, {"srt", "srt"}, {"udp", "udp"}, {"tcp", "tcp"},
    {"file", "file"},
};

/*
** The scheme of url as libavformat reads it (letters, digits, "+-." before ':',
** and "subfile," with a ':' after it, its options between); 0 for a path.
*/
static size_t scheme_length(const char *url) {
  size_t n = 0;
  while ((url[n] >= 'a' && url[n] <= 'z') || (url[n] >= 'A' && url[n] <= 'Z') ||
         (url[n] >= '0' && url[n] <= '9') || url[n] == '+' || url[n] == '-' || url[n] == '.')
    n++;
  if (strncmp(url, "subfile,", 8) == 0 && strchr(url + 8, ':')) return strlen("subfile");
  return n && url[n] == ':' ? n : 0;
}

bool gpures__avf_listed(const char *list, const char *name, size_t n) {
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncasecmp(p, name, n) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

bool gpures__avf_named(const char *list, const char *names) {
  for (const char *p = names; *p;) {
    size_t n = strcspn(p, ",");
    if (gpures__avf_listed(list, p, n)) return true;
    if (!p[n]) break;
    p += n + 1;
  }
  return false;
}

int gpures__avf_protocols(gpures__op op, const char *url, const char *given, const char **out) {
  size_t n = scheme_length(url);
  const char *scheme = n ? url : "file";
  if (!n) n = strlen("file");
  if (given) {
    if (!gpures__avf_listed(given, scheme, n))
      return gpures__fail(op, GPURES_E_UNSUPPORTED, "protocols",
                          "the url's protocol \"%.*s\" is not one of protocols (\"%s\")", (int)n,
                          scheme, given);
    *out = given;
    return GPURES_OK;
  }
  for (size_t i = 0; i < GPURES__LEN(carriers); i++)
    if (strlen(carriers[i].scheme) == n && strncasecmp(scheme, carriers[i].scheme, n) == 0) {
      *out = carriers[i].protocols;
      return GPURES_OK;
    }
  /* pipe:, fd:, subfile:, concat: and the rest reach what a path names not: allowed only by name. */
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "protocols",
                      "the url's protocol \"%.*s\" is allowed only when protocols names it", (int)n,
                      scheme);
}

bool gpures__avf_is_path(const char *url) { return scheme_length(url) == 0; }

int gpures__avf_io_options(gpures__op op, AVDictionary **dict, const char *url, uint32_t timeout_ms) {
  const gpures__avf *f = &avf;
  bool path = gpures__avf_is_path(url) || strncasecmp(url, "file:", 5) == 0;
  char us[32];
  uint64_t ms = timeout_ms ? timeout_ms : path ? 0 : GPURES__AVF_NETWORK_TIMEOUT_MS;
  snprintf(us, sizeof us, "%llu", (unsigned long long)ms * 1000ull);
  /* tls: FFmpeg checks no certificate unless asked (its default is 0); the system's authorities. */
  if (f->dict_set(dict, "tls_verify", "1", 0) < 0 || (ms && f->dict_set(dict, "rw_timeout", us, 0) < 0))
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for libavformat's options");
  return GPURES_OK;
}

int gpures__avf_check_url(gpures__op op, const char *url) {
  if (!url) return gpures__fail(op, GPURES_E_NULL_POINTER, "url", "url is null");
  size_t n = strnlen(url, GPURES__AVF_MAX_URL + 1);
  if (n == 0 || n > GPURES__AVF_MAX_URL)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "url", "url has %s characters: 1..%u",
                        n ? "more than 4096" : "no", GPURES__AVF_MAX_URL);
  return GPURES_OK;
}

char *gpures__avf_copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = gpures__alloc(n);
  if (c) memcpy(c, s, n);
  return c;
}

int gpures__avf_check_list(gpures__op op, const char *field, const char *list) {
  size_t n = strlen(list);
  if (n == 0 || n > 1024)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "%s has %zu characters: 1..1024",
                        field, n);
  for (size_t i = 0; i < n; i++) {
    char c = list[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == ',';
    if (!ok)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                          "%s has '%c' at %zu: names of letters, digits, '_' and '-', "
                          "separated by commas",
                          field, c, i);
  }
  return GPURES_OK;
}

int gpures__avf_fail(gpures__op op, const char *field, const char *what, int err) {
  if (err < 0 && err > -4096 && err != -22 && err != -12)
    return gpures__fail(op, GPURES_E_OS_ERROR, field, "%s failed: %s (%s)", what,
                        gpures__errno_name(-err), gpures__av_error(err));
  return gpures__av_fail(op, field, what, err);
}

/* Test hook (native/tests/test_container.c): an AVStream offset by name, -1 for none. */
GPURES_API int gpures__test_container_offset(const char *field);
int gpures__test_container_offset(const char *field) {
  const gpures__av *a = NULL;
  const gpures__avf *f = NULL;
  gpures__op op = {"read a layout of", 0};
  if (!field || gpures__avf_ready(op, &a, &f) != GPURES_OK) return -1;
  const gpures__avf_layout *l = f->layout;
  const struct { const char *name; int offset; } fields[] = {
      {"stream.index", l->st_index},           {"stream.codecpar", l->st_codecpar},
      {"stream.time_base", l->st_time_base},   {"stream.duration", l->st_duration},
      {"stream.nb_frames", l->st_nb_frames},   {"stream.disposition", l->st_disposition},
      {"stream.discard", l->st_discard},       {"stream.avg_frame_rate", l->st_avg_frame_rate},
  };
  for (size_t i = 0; i < GPURES__LEN(fields); i++)
    if (strcmp(fields[i].name, field) == 0) return fields[i].offset;
  return -1;
}

#endif /* __linux__ */
