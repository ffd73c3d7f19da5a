/*
** other_os.c: importers and the API queries on systems other than Linux.
** Frames cross as fds, which only the Linux kinds carry, so every entry point
** says so; device ids and negotiation (device.c, caps.c) work everywhere.
*/
#if !defined(__linux__)
#include "interop.h"

static int unsupported(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "importers take frames as file descriptors, which this system's kinds lack");
}

int gpures_vk_device_info(void *i, void *p, void *g, gpures_device_info *o) {
  (void)i, (void)p, (void)g, (void)o;
  return unsupported("read the device info of");
}
int gpures_cuda_device_info(int32_t ordinal, gpures_device_info *o) {
  (void)ordinal, (void)o;
  return unsupported("read the device info of");
}
int gpures_caps_vulkan(void *i, void *p, void *g, gpures_format_cap *o, uint32_t c, uint32_t *n) {
  (void)i, (void)p, (void)g, (void)o, (void)c;
  if (n) *n = 0;
  return unsupported("list the capabilities of");
}
int gpures_caps_egl(void *d, gpures_format_cap *o, uint32_t c, uint32_t *n) {
  (void)d, (void)o, (void)c;
  if (n) *n = 0;
  return unsupported("list the capabilities of");
}
int gpures_caps_cuda(int32_t ordinal, gpures_format_cap *o, uint32_t c, uint32_t *n) {
  (void)ordinal, (void)o, (void)c;
  if (n) *n = 0;
  return unsupported("list the capabilities of");
}
int gpures_importer_stats_get(gpures_importer *i, gpures_importer_stats *o) {
  (void)i, (void)o;
  return unsupported("read stats of");
}
int gpures_importer_device(gpures_importer *i, gpures_device_info *o) {
  (void)i, (void)o;
  return unsupported("read the device of");
}
int gpures_importer_forget(gpures_importer *i, gpures_handle f) {
  (void)i, (void)f;
  return unsupported("forget an import of");
}
int gpures_importer_collect(gpures_importer *i) {
  (void)i;
  return unsupported("collect imports of");
}
int gpures_importer_destroy(gpures_importer *i) {
  (void)i;
  return GPURES_OK; /* no importer can exist here */
}
int gpures_vk_importer_create(const gpures_vk_importer_desc *d, gpures_importer **o) {
  (void)d;
  if (o) *o = NULL;
  return unsupported("create a Vulkan importer");
}
int gpures_vk_import(gpures_importer *i, gpures_handle f, gpures_vk_imported *o) {
  (void)i, (void)f, (void)o;
  return unsupported("import into Vulkan");
}
int gpures_vk_pool_create(const gpures_vk_pool_desc *d, gpures_pool **o) {
  (void)d;
  if (o) *o = NULL;
  return unsupported("create a Vulkan pool");
}
int gpures_vk_pool_objects(gpures_pool *p, gpures_handle f, gpures_vk_pool_slot *o) {
  (void)p, (void)f, (void)o;
  return unsupported("find the Vulkan objects of");
}
int gpures_cuda_pool_create(const gpures_cuda_pool_desc *d, gpures_pool **o) {
  (void)d;
  if (o) *o = NULL;
  return unsupported("create a CUDA pool");
}
int gpures_cuda_pool_objects(gpures_pool *p, gpures_handle f, gpures_cuda_pool_slot *o) {
  (void)p, (void)f, (void)o;
  return unsupported("find the CUDA memory of");
}
int gpures_egl_importer_create(const gpures_egl_importer_desc *d, gpures_importer **o) {
  (void)d;
  if (o) *o = NULL;
  return unsupported("create an EGL importer");
}
int gpures_egl_import(gpures_importer *i, gpures_handle f, gpures_egl_imported *o) {
  (void)i, (void)f, (void)o;
  return unsupported("import into EGL");
}
int gpures_cuda_importer_create(const gpures_cuda_importer_desc *d, gpures_importer **o) {
  (void)d;
  if (o) *o = NULL;
  return unsupported("create a CUDA importer");
}
int gpures_cuda_import(gpures_importer *i, gpures_handle f, gpures_cuda_imported *o) {
  (void)i, (void)f, (void)o;
  return unsupported("import into CUDA");
}
#endif
