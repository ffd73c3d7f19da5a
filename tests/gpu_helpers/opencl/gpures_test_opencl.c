/*
** gpures_test_opencl: a test-only library that drives OpenCL (PoCL in CI), for
** tests/isolated/opencl_test.ts.
**
** Producers make a real context, command queue and cl_mem objects (a buffer,
** a 2D CL_RGBA/CL_UNORM_INT8 image) filled with known patterns through the
** queue; the test wraps them as OpenClMem handles through the public Deno API.
** The consumer gets ONLY a gpures handle (a uint64_t): it describes it with
** gpures_open_cl_mem_describe and reads the memory through the handle's own
** mem and queue (clEnqueueReadBuffer / clEnqueueReadImage).
**
** Every function is FFI-friendly: integers, pointers and byte buffers only.
** Functions returning a pointer give NULL on failure, those returning int give
** 0 on success and -1 on failure; gpures_test_cl_last_error() says why.
**
** Patterns (tests/isolated/opencl_test.ts computes the same ones independently):
**   image pixel (x, y), seed s: R = 4x + s, G = 4y + 3s, B = x*y + 5s,
**                               A = 255 - ((x + y + s) & 127)          (all mod 256)
**   buffer byte i, seed s:      7i + 13(i >> 8) + s                    (mod 256)
*/
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <CL/cl.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../helper.h"

/* The last failure's reason. */
API const char *gpures_test_cl_last_error(void) { return helper_error; }

/*
** The kind id of a handle as this library's gpures sees it, or 0 when it names
** no live handle: the test uses it to check that the helper and the Deno
** module share one loaded libgpures (one handle table).
*/
API uint32_t gpures_test_cl_handle_kind(uint64_t handle) {
  uint32_t kind = 0;
  return gpures_kind(handle, &kind) == GPURES_OK ? kind : 0;
}

/* The first device of the first platform that has one. */
static int first_device(cl_platform_id *out_platform, cl_device_id *out_device) {
  cl_uint count = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &count);
  if (err != CL_SUCCESS || count == 0) {
    return fail("no OpenCL platform (clGetPlatformIDs: %d, %u platforms; is an ICD such as "
                "pocl-opencl-icd installed?)",
                err, count);
  }
  cl_platform_id platforms[16];
  if (count > 16) count = 16;
  if ((err = clGetPlatformIDs(count, platforms, NULL)) != CL_SUCCESS) {
    return fail("clGetPlatformIDs failed: %d", err);
  }
  for (cl_uint i = 0; i < count; i++) {
    if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, out_device, NULL) == CL_SUCCESS) {
      *out_platform = platforms[i];
      return 0;
    }
  }
  return fail("none of the %u OpenCL platforms has a device", count);
}

/* "platform version | device name | image support", for the test log; "" without a device. */
API const char *gpures_test_cl_describe_platform(void) {
  static char text[512];
  cl_platform_id platform;
  cl_device_id device;
  if (first_device(&platform, &device) != 0) return "";
  char version[160] = "", name[160] = "";
  cl_bool images = CL_FALSE;
  clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
  clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL);
  snprintf(text, sizeof text, "%s | %s | images %s", version, name, images ? "yes" : "no");
  return text;
}

/* 1 when the first device supports images. */
API int gpures_test_cl_image_support(void) {
  cl_platform_id platform;
  cl_device_id device;
  cl_bool images = CL_FALSE;
  if (first_device(&platform, &device) != 0) return 0;
  clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL);
  return images == CL_TRUE;
}

/* A new context on the first device. Release with gpures_test_cl_release_context. */
API void *gpures_test_cl_create_context(void) {
  cl_platform_id platform;
  cl_device_id device;
  if (first_device(&platform, &device) != 0) return NULL;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(props, 1, &device, NULL, NULL, &err);
  if (!context) fail("clCreateContext failed: %d", err);
  return context;
}

/* A new in-order queue on the context's device. Release with gpures_test_cl_release_queue. */
API void *gpures_test_cl_create_queue(void *context) {
  cl_device_id device;
  cl_int err = clGetContextInfo((cl_context)context, CL_CONTEXT_DEVICES, sizeof device, &device,
                                NULL);
  if (err != CL_SUCCESS) return fail("clGetContextInfo(DEVICES) failed: %d", err), NULL;
  cl_command_queue queue = clCreateCommandQueue((cl_context)context, device, 0, &err);
  if (!queue) fail("clCreateCommandQueue failed: %d", err);
  return queue;
}

/*
** A new device buffer of `size` bytes whose contents are written through
** `queue` (clEnqueueWriteBuffer, then clFinish) with the buffer pattern.
*/
API void *gpures_test_cl_make_buffer(void *context, void *queue, uint64_t size, uint32_t seed) {
  uint8_t *bytes = malloc(size ? size : 1);
  if (!bytes) return fail("out of memory"), NULL;
  for (uint64_t i = 0; i < size; i++) bytes[i] = (uint8_t)(7 * i + 13 * (i >> 8) + seed);
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer((cl_context)context, CL_MEM_READ_WRITE, size, NULL, &err);
  if (!mem) {
    free(bytes);
    return fail("clCreateBuffer(%llu) failed: %d", (unsigned long long)size, err), NULL;
  }
  err = clEnqueueWriteBuffer((cl_command_queue)queue, mem, CL_FALSE, 0, size, bytes, 0, NULL,
                             NULL);
  if (err == CL_SUCCESS) err = clFinish((cl_command_queue)queue);
  free(bytes);
  if (err != CL_SUCCESS) {
    clReleaseMemObject(mem);
    return fail("writing the buffer failed: %d", err), NULL;
  }
  return mem;
}

/*
** A new width x height CL_RGBA / CL_UNORM_INT8 2D image whose pixels are
** written through `queue` (clEnqueueWriteImage, then clFinish) with the image
** pattern.
*/
API void *gpures_test_cl_make_image(void *context, void *queue, uint32_t width, uint32_t height,
                                    uint32_t seed) {
  uint8_t *pixels = malloc((size_t)width * height * 4 + 1);
  if (!pixels) return fail("out of memory"), NULL;
  for (uint32_t y = 0; y < height; y++) {
    for (uint32_t x = 0; x < width; x++) {
      uint8_t *p = pixels + ((size_t)y * width + x) * 4;
      p[0] = (uint8_t)(4 * x + seed);
      p[1] = (uint8_t)(4 * y + 3 * seed);
      p[2] = (uint8_t)(x * y + 5 * seed);
      p[3] = (uint8_t)(255 - ((x + y + seed) & 127));
    }
  }
  cl_image_format format = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = width;
  desc.image_height = height;
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateImage((cl_context)context, CL_MEM_READ_WRITE, &format, &desc, NULL, &err);
  if (!mem) {
    free(pixels);
    return fail("clCreateImage(%ux%u RGBA8) failed: %d", width, height, err), NULL;
  }
  size_t origin[3] = {0, 0, 0}, region[3] = {width, height, 1};
  err = clEnqueueWriteImage((cl_command_queue)queue, mem, CL_FALSE, origin, region,
                            (size_t)width * 4, 0, pixels, 0, NULL, NULL);
  if (err == CL_SUCCESS) err = clFinish((cl_command_queue)queue);
  free(pixels);
  if (err != CL_SUCCESS) {
    clReleaseMemObject(mem);
    return fail("writing the image failed: %d", err), NULL;
  }
  return mem;
}

static uint32_t mem_refcount(void *mem) {
  cl_uint count = 0;
  if (clGetMemObjectInfo((cl_mem)mem, CL_MEM_REFERENCE_COUNT, sizeof count, &count, NULL) !=
      CL_SUCCESS) {
    return 0;
  }
  return count;
}

static uint32_t queue_refcount(void *queue) {
  cl_uint count = 0;
  if (clGetCommandQueueInfo((cl_command_queue)queue, CL_QUEUE_REFERENCE_COUNT, sizeof count,
                            &count, NULL) != CL_SUCCESS) {
    return 0;
  }
  return count;
}

/*
** The reference count of a live object once it settles at `expected`, or what
** it still is after timeout_ms (0 on error); for leak checks. PoCL finalizes a
** finished command's event on a worker thread, which holds a reference to the
** command's queue (and mem) for a moment after clFinish returns, so a single
** read can see one reference more than the program holds.
*/
static uint32_t refcount_wait(uint32_t (*count)(void *), void *object, uint32_t expected,
                              uint32_t timeout_ms) {
  uint32_t n = count(object);
  for (uint32_t waited = 0; n != expected && n != 0 && waited < timeout_ms; waited++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    n = count(object);
  }
  return n;
}

/* CL_MEM_REFERENCE_COUNT of a live mem, waited for as refcount_wait says. */
API uint32_t gpures_test_cl_mem_refcount(void *mem, uint32_t expected, uint32_t timeout_ms) {
  return refcount_wait(mem_refcount, mem, expected, timeout_ms);
}

/* CL_QUEUE_REFERENCE_COUNT of a live queue, waited for as refcount_wait says. */
API uint32_t gpures_test_cl_queue_refcount(void *queue, uint32_t expected, uint32_t timeout_ms) {
  if (clFinish((cl_command_queue)queue) != CL_SUCCESS) return 0;
  return refcount_wait(queue_refcount, queue, expected, timeout_ms);
}

/* clReleaseMemObject / clReleaseCommandQueue / clReleaseContext; 0 or the CL error. */
API int gpures_test_cl_release_mem(void *mem) { return clReleaseMemObject((cl_mem)mem); }
API int gpures_test_cl_release_queue(void *queue) {
  return clReleaseCommandQueue((cl_command_queue)queue);
}
API int gpures_test_cl_release_context(void *context) {
  return clReleaseContext((cl_context)context);
}

/*
** The consumer, given only an OpenClMem handle: describes it, checks that the
** mem and the queue share a context, and reads the memory through the
** handle's queue into out, blocking:
**   - a buffer: all CL_MEM_SIZE bytes (clEnqueueReadBuffer);
**   - a 2D image: every row, each row_pitch bytes apart (the handle's
**     row_pitch, or the packed row size when it is 0), via clEnqueueReadImage.
** *out_length receives the bytes written. The consumer holds its own gpures
** reference while it reads.
*/
API int gpures_test_cl_read(uint64_t handle, uint8_t *out, uint64_t capacity,
                            uint64_t *out_length) {
  gpures_open_cl_mem_desc desc;
  HELPER_DESCRIBE(gpures_open_cl_mem_describe, handle, desc);
  if ((status = gpures_clone(handle)) != GPURES_OK) return fail_gpures("gpures_clone", status);
  cl_mem mem = (cl_mem)desc.mem;
  cl_command_queue queue = (cl_command_queue)desc.queue;
  cl_context mem_context = NULL, queue_context = NULL;
  cl_mem_object_type type = 0;
  int rc = 0;
  cl_int err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mem_context, &mem_context, NULL);
  if (err == CL_SUCCESS) {
    err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof queue_context, &queue_context,
                                NULL);
  }
  if (err == CL_SUCCESS) err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
  if (err != CL_SUCCESS) {
    rc = fail("querying the handle's mem %p and queue %p failed: %d", desc.mem, desc.queue, err);
  } else if (mem_context != queue_context) {
    rc = fail("the handle's mem and queue belong to different contexts");
  }
  uint64_t length = 0;
  if (rc == 0 && type == CL_MEM_OBJECT_BUFFER) {
    size_t size = 0;
    err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS) {
      rc = fail("clGetMemObjectInfo(SIZE) failed: %d", err);
    } else if (size > capacity) {
      rc = fail("the buffer has %zu bytes, out has %llu", size, (unsigned long long)capacity);
    } else if ((err = clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, size, out, 0, NULL, NULL)) !=
               CL_SUCCESS) {
      rc = fail("clEnqueueReadBuffer failed: %d", err);
    } else {
      length = size;
    }
  } else if (rc == 0 && type == CL_MEM_OBJECT_IMAGE2D) {
    size_t width = 0, height = 0, element = 0;
    err = clGetImageInfo(mem, CL_IMAGE_WIDTH, sizeof width, &width, NULL);
    if (err == CL_SUCCESS) err = clGetImageInfo(mem, CL_IMAGE_HEIGHT, sizeof height, &height, NULL);
    if (err == CL_SUCCESS) {
      err = clGetImageInfo(mem, CL_IMAGE_ELEMENT_SIZE, sizeof element, &element, NULL);
    }
    size_t pitch = desc.row_pitch ? desc.row_pitch : width * element;
    if (err != CL_SUCCESS) {
      rc = fail("clGetImageInfo failed: %d", err);
    } else if (pitch < width * element) {
      rc = fail("row_pitch %u is below the image's %zu bytes per row", desc.row_pitch,
                width * element);
    } else if ((uint64_t)pitch * height > capacity) {
      rc = fail("the image needs %zu bytes, out has %llu", pitch * height,
                (unsigned long long)capacity);
    } else {
      size_t origin[3] = {0, 0, 0}, region[3] = {width, height, 1};
      err = clEnqueueReadImage(queue, mem, CL_TRUE, origin, region, pitch, 0, out, 0, NULL, NULL);
      if (err != CL_SUCCESS) {
        rc = fail("clEnqueueReadImage failed: %d", err);
      } else {
        length = (uint64_t)pitch * height;
      }
    }
  } else if (rc == 0) {
    rc = fail("mem object type 0x%x: this consumer reads buffers and 2D images", type);
  }
  if (rc == 0 && out_length) *out_length = length;
  gpures_release(handle);
  return rc;
}

/* ------------------------------------------------------------- sync points */
/*
** For tests/isolated/sync_opencl_test.ts: a context with two in-order queues
** on the first device and a buffer of `size` bytes holding `old_byte`. The
** producer (gpures_test_cl_sync_gate_fill) enqueues a clEnqueueFillBuffer on
** queue 1 whose wait list is a user event, so nothing is written until the
** test sets that event's status; the event of the fill is what the test wraps
** as an OpenClEvent. gpures_test_cl_sync_read reads the buffer through queue
** 2, which the gated fill does not hold up.
*/
typedef struct cl_sync {
  cl_context context;
  cl_command_queue producer, reader;
  cl_mem mem;
  size_t size;
  cl_event gate;  /* user event, or NULL */
  cl_event fill;  /* the gated fill's event, or NULL */
  int gate_set;
} cl_sync;

API void gpures_test_cl_sync_close(void *ctx);

API void *gpures_test_cl_sync_open(uint64_t size, uint32_t old_byte) {
  cl_sync *s = calloc(1, sizeof *s);
  if (!s) return fail("out of memory"), NULL;
  s->context = gpures_test_cl_create_context();
  if (!s->context) goto fail;
  if (!(s->producer = gpures_test_cl_create_queue(s->context))) goto fail;
  if (!(s->reader = gpures_test_cl_create_queue(s->context))) goto fail;
  cl_int err = CL_SUCCESS;
  s->mem = clCreateBuffer(s->context, CL_MEM_READ_WRITE, size, NULL, &err);
  if (!s->mem) {
    fail("clCreateBuffer(%llu) failed: %d", (unsigned long long)size, err);
    goto fail;
  }
  s->size = size;
  uint8_t pattern = (uint8_t)old_byte;
  err = clEnqueueFillBuffer(s->producer, s->mem, &pattern, 1, 0, size, 0, NULL, NULL);
  if (err == CL_SUCCESS) err = clFinish(s->producer);
  if (err != CL_SUCCESS) {
    fail("filling the buffer with the old byte failed: %d", err);
    goto fail;
  }
  return s;
fail:
  gpures_test_cl_sync_close(s);
  return NULL;
}

/*
** Makes a user event and enqueues, behind it, a fill of the whole buffer with
** `byte`; flushes queue 1 so the fill runs as soon as the gate opens. Returns
** the fill's cl_event (valid until gpures_test_cl_sync_close), or NULL.
*/
API void *gpures_test_cl_sync_gate_fill(void *ctx, uint32_t byte) {
  cl_sync *s = ctx;
  if (s->gate) return fail("a gated fill is already pending"), NULL;
  cl_int err = CL_SUCCESS;
  s->gate = clCreateUserEvent(s->context, &err);
  if (!s->gate) return fail("clCreateUserEvent failed: %d", err), NULL;
  s->gate_set = 0;
  uint8_t pattern = (uint8_t)byte;
  err = clEnqueueFillBuffer(s->producer, s->mem, &pattern, 1, 0, s->size, 1, &s->gate, &s->fill);
  if (err == CL_SUCCESS) err = clFlush(s->producer);
  if (err != CL_SUCCESS) return fail("clEnqueueFillBuffer behind the user event failed: %d", err), NULL;
  return s->fill;
}

/* The user event, for a test that waits on it directly. */
API void *gpures_test_cl_sync_gate(void *ctx) { return ((cl_sync *)ctx)->gate; }

/* clSetUserEventStatus(gate, status): CL_COMPLETE (0) lets the fill run, a negative status fails it. */
API int gpures_test_cl_sync_open_gate(void *ctx, int32_t status) {
  cl_sync *s = ctx;
  if (!s->gate || s->gate_set) return fail("no gate to open");
  cl_int err = clSetUserEventStatus(s->gate, status);
  if (err != CL_SUCCESS) return fail("clSetUserEventStatus(%d) failed: %d", status, err);
  s->gate_set = 1;
  return 0;
}

/* CL_EVENT_COMMAND_EXECUTION_STATUS of the fill (CL_COMPLETE 0, negative: failed), or 1000 on error. */
API int32_t gpures_test_cl_sync_fill_status(void *ctx) {
  cl_int state = 1000;
  cl_sync *s = ctx;
  if (!s->fill ||
      clGetEventInfo(s->fill, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL) !=
          CL_SUCCESS)
    return 1000;
  return state;
}

/* A blocking read of the whole buffer through queue 2 (not held up by queue 1's gated fill). */
API int gpures_test_cl_sync_read(void *ctx, uint8_t *out, uint64_t capacity) {
  cl_sync *s = ctx;
  if (capacity < s->size) return fail("out holds %llu bytes, the buffer %zu", (unsigned long long)capacity, s->size);
  cl_int err = clEnqueueReadBuffer(s->reader, s->mem, CL_TRUE, 0, s->size, out, 0, NULL, NULL);
  return err == CL_SUCCESS ? 0 : fail("clEnqueueReadBuffer (queue 2) failed: %d", err);
}

/* Fails a gate still closed (so nothing waits forever), finishes both queues, releases everything. */
API void gpures_test_cl_sync_close(void *ctx) {
  cl_sync *s = ctx;
  if (!s) return;
  if (s->gate && !s->gate_set) clSetUserEventStatus(s->gate, -1);
  if (s->producer) clFinish(s->producer);
  if (s->reader) clFinish(s->reader);
  if (s->fill) clReleaseEvent(s->fill);
  if (s->gate) clReleaseEvent(s->gate);
  if (s->mem) clReleaseMemObject(s->mem);
  if (s->producer) clReleaseCommandQueue(s->producer);
  if (s->reader) clReleaseCommandQueue(s->reader);
  if (s->context) clReleaseContext(s->context);
  free(s);
}

/* Ends a gated fill (its events released) so another can be made on the same context. */
API void gpures_test_cl_sync_reset(void *ctx) {
  cl_sync *s = ctx;
  if (s->gate && !s->gate_set) clSetUserEventStatus(s->gate, -1);
  clFinish(s->producer);
  if (s->fill) clReleaseEvent(s->fill);
  if (s->gate) clReleaseEvent(s->gate);
  s->fill = s->gate = NULL;
  s->gate_set = 0;
}
