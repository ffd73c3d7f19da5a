/*
** fuzz.h: what the libFuzzer targets share. A target defines FUZZ_NAME, then
** includes this, and defines fuzz_setup(), which LLVMFuzzerInitialize() calls
** here. This brings the system headers, gpures.h, the fd helpers of the C
** tests (../tests/fd_util.h: make_memfd, fd_is_open, fd_is_closed,
** send_with_fds), open_fds()/same_fds() over fds below FD_WATCH, and
** FUZZ_EXPECT(cond, ...), which reports a broken promise
** through FUZZ_FAIL: abort() for libFuzzer, unless the includer defined its
** own (native/tests/test_regressions.c counts a failed check instead).
*/
#ifndef GPURES_FUZZ_H
#define GPURES_FUZZ_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpures.h"
#include "../tests/fd_util.h"

/* How a broken promise is reported: abort() for libFuzzer, a counted failure in the C tests. */
#ifndef FUZZ_FAIL
#  define FUZZ_FAIL(...)                                                  \
    do {                                                                  \
      fprintf(stderr, FUZZ_NAME ": %s:%d: ", __FILE__, __LINE__);         \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n  last error: %s\n", gpures_last_error());       \
      abort();                                                            \
    } while (0)
#endif
#define FUZZ_EXPECT(cond, ...)           \
  do {                                   \
    if (!(cond)) FUZZ_FAIL(__VA_ARGS__); \
  } while (0)

/* How the helpers shared with the C tests (../tests/pools.h) report a failed call. */
#ifndef EXPECT_OK
#  define EXPECT_OK(call) FUZZ_EXPECT((call) == GPURES_OK, "%s", #call)
#endif

/* The fds the targets compare before and after an input: 0 .. FD_WATCH - 1. */
#define FD_WATCH 128

/* Bit i set when fd i is open. */
typedef struct fd_set_bits {
  uint64_t bits[FD_WATCH / 64];
} fd_set_bits;

static inline fd_set_bits open_fds(void) {
  fd_set_bits s;
  memset(&s, 0, sizeof s);
  for (int fd = 0; fd < FD_WATCH; fd++)
    if (fcntl(fd, F_GETFD) >= 0) s.bits[fd / 64] |= 1ull << (fd % 64);
  return s;
}

static inline int same_fds(const fd_set_bits *a, const fd_set_bits *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

/* Whether every fd open in b was open in a: none opened between (some may have closed). */
static inline int no_new_fds(const fd_set_bits *a, const fd_set_bits *b) {
  for (int i = 0; i < FD_WATCH / 64; i++)
    if (b->bits[i] & ~a->bits[i]) return 0;
  return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each target's own: what it makes once for every input (idempotent: inputs call it too). */
static void fuzz_setup(void);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup();
  return 0;
}

#endif /* GPURES_FUZZ_H */
