/*
** A C consumer of the installed gpures package: wraps a CPU frame in a
** handle, clones it as a consumer would, prints its JSON, and releases both.
**
**   cmake -S examples/c -B build-example -DCMAKE_PREFIX_PATH=<install prefix>
**   cmake --build build-example && ./build-example/gpures_example
*/
#include <stdio.h>
#include <stdlib.h>

#include <gpures.h>

static void frame_released(void *ctx) {
  printf("producer: frame %s may be reused\n", (const char *)ctx);
}

int main(void) {
  if (gpures_abi_version() >> 16 != GPURES_ABI_MAJOR) {
    fprintf(stderr, "gpures ABI %u.%u, built against %d.%d\n", gpures_abi_version() >> 16,
            gpures_abi_version() & 0xffff, GPURES_ABI_MAJOR, GPURES_ABI_MINOR);
    return 1;
  }
  enum { W = 320, H = 240 };
  static unsigned char pixels[W * H * 4];

  gpures_cpu_bytes_desc desc = {sizeof desc};
  desc.ptr = pixels;
  desc.size = sizeof pixels;
  desc.row_pitch = W * 4;
  desc.format = GPURES_PF_RGBA_U8;
  desc.width = W;
  desc.height = H;
  gpures_create_options options = {sizeof options};
  options.keep_alive.ctx = "0";
  options.keep_alive.release = frame_released;

  gpures_handle frame;
  if (gpures_cpu_bytes_create(&desc, &options, &frame) != GPURES_OK) {
    fprintf(stderr, "%s\n", gpures_last_error());
    return 1;
  }
  gpures_cpu_bytes_clone(frame); /* the consumer's reference */

  char json[512];
  size_t length;
  if (gpures_describe_json(frame, json, sizeof json, &length) != GPURES_OK) return 1;
  printf("%s\n", json);

  gpures_cpu_bytes_release(frame); /* the producer's */
  gpures_cpu_bytes_release(frame); /* the consumer's: the keep-alive runs now */

  desc.row_pitch = 4; /* bad input: an error naming the field, never a crash */
  int status = gpures_cpu_bytes_create(&desc, NULL, &frame);
  printf("%s (%s, field %s)\n", gpures_last_error(), gpures_status_name(status),
         gpures_last_error_field());
  return gpures_live_handles(0) == 0 ? 0 : 1;
}
