/*
** napi_buffers.c: ArrayBuffers over gpures mappings that live exactly as long
** as the mapping, for JavaScript hosts that speak Node-API (Deno, Node).
**
** An ArrayBuffer can leave its owner: ArrayBuffer.prototype.transfer(),
** postMessage() with a transfer list and a BYOB stream read all move its
** pages to a new buffer (maybe in another isolate) and detach the original.
** A buffer from Deno.UnsafePointerView.getArrayBuffer() has no deleter, so
** nobody learns when the last view of the pages is gone: unmap too early and
** a moved buffer faults; never unmap and every moved buffer leaks a mapping.
** Here the buffer is a Node-API external ArrayBuffer whose finalizer ends the
** mapping. The runtime runs it when the last buffer over the pages is
** collected, wherever the pages went.
**
** The library is its own addon: a host loads this same file with
** process.dlopen() and calls napi_register_module_v1(). The Node-API
** functions are looked up in the host process at that moment, so the
** library links none of them and a C program never notices this file.
*/
#if !defined(_WIN32)
#if defined(__linux__)
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <stdint.h>

#include "../internal.h"

/* The few Node-API types and functions used, as js_native_api.h declares them. */
typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* napi_ok is 0 */
typedef void (*napi_finalize)(napi_env env, void *data, void *hint);
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

static struct {
  napi_status (*get_cb_info)(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *,
                             void **);
  napi_status (*get_value_bigint_uint64)(napi_env, napi_value, uint64_t *, bool *);
  napi_status (*get_value_uint32)(napi_env, napi_value, uint32_t *);
  napi_status (*create_external_arraybuffer)(napi_env, void *, size_t, napi_finalize, void *,
                                             napi_value *);
  napi_status (*create_int32)(napi_env, int32_t, napi_value *);
  napi_status (*create_function)(napi_env, const char *, size_t, napi_callback, void *,
                                 napi_value *);
  napi_status (*set_named_property)(napi_env, napi_value, const char *, napi_value);
} napi;

static int find_napi(void) {
#define FIND(member, name) \
  if (!(*(void **)&napi.member = dlsym(RTLD_DEFAULT, name))) return 0;
  FIND(get_cb_info, "napi_get_cb_info")
  FIND(get_value_bigint_uint64, "napi_get_value_bigint_uint64")
  FIND(get_value_uint32, "napi_get_value_uint32")
  FIND(create_external_arraybuffer, "napi_create_external_arraybuffer")
  FIND(create_int32, "napi_create_int32")
  FIND(create_function, "napi_create_function")
  FIND(set_named_property, "napi_set_named_property")
#undef FIND
  return 1;
}

/* Runs on whichever thread drops the last buffer; ending a mapping is thread-safe. */
static void end_mapping(napi_env env, void *data, void *hint) {
  (void)env, (void)data;
  gpures__unmap_id((uint64_t)(uintptr_t)hint);
}

static napi_value status_value(napi_env env, int status) {
  napi_value v = NULL;
  napi.create_int32(env, status, &v);
  return v;
}

/*
** mapBuffer(handle: bigint, index: number, flags: number): ArrayBuffer | number.
** A status number on failure; the details are in gpures_last_error() on this
** thread, where the host reads them through its FFI.
*/
static napi_value map_buffer(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  uint64_t handle = 0;
  uint32_t index = 0, flags = 0;
  bool lossless = false;
  gpures__op op = {"map", 0};
  if (napi.get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc != 3 ||
      napi.get_value_bigint_uint64(env, argv[0], &handle, &lossless) != 0 || !lossless ||
      napi.get_value_uint32(env, argv[1], &index) != 0 ||
      napi.get_value_uint32(env, argv[2], &flags) != 0)
    return status_value(env, gpures__fail(op, GPURES_E_INVALID_VALUE, "",
                                          "mapBuffer takes a bigint handle and two numbers"));
  void *ptr = NULL;
  uint64_t size = 0, id = 0;
  int status = gpures__map((gpures_handle)handle, index, flags, &ptr, &size, &id);
  if (status != GPURES_OK) return status_value(env, status);
  napi_value buffer = NULL;
  if (sizeof(void *) < sizeof id && id > UINTPTR_MAX) { /* ids never reused: refuse, not wrap */
    gpures__unmap_id(id);
    return status_value(env, gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "mapping ids ran out"));
  }
  if (napi.create_external_arraybuffer(env, ptr, (size_t)size, end_mapping, (void *)(uintptr_t)id,
                                       &buffer) != 0) {
    gpures__unmap_id(id);
    return status_value(env, gpures__fail(op, GPURES_E_OS_ERROR, "",
                                          "the JavaScript runtime refused an external ArrayBuffer"));
  }
  return buffer;
}

GPURES_API napi_value napi_register_module_v1(napi_env env, napi_value exports);

napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  if (!find_napi()) return exports; /* not a Node-API host: export nothing */
  napi_value fn = NULL;
  if (napi.create_function(env, "mapBuffer", 9, map_buffer, NULL, &fn) == 0)
    napi.set_named_property(env, exports, "mapBuffer", fn);
  return exports;
}
#endif
