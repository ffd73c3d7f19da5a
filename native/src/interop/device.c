/*
** device.c: which device a handle belongs to. The kind table says it: a
** field row flagged GPURES_FIELD_DEVICE(kind) is (part of) the handle's
** device identity, so a new kind that carries a device UUID, LUID or registry
** id gets a DeviceId by flagging its row, with no code here.
*/
#include <string.h>

#include "../sync/sync.h"
#include "interop.h"

static bool all_zero(const uint8_t *bytes, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (bytes[i]) return false;
  return true;
}

/* Puts one flagged field's bytes into the id: a UUID whole, a LUID's halves, a registry id. */
static void put_field(const gpures_field_info *f, const void *desc, gpures_device_id *id) {
  const uint8_t *at = (const uint8_t *)desc + f->offset;
  if (f->type == GPURES_FIELD_UUID) {
    memcpy(id->bytes, at, 16);
  } else if (strcmp(f->path, "luid.high") == 0) {
    memcpy(id->bytes + 4, at, 4);
  } else if (f->type == GPURES_FIELD_U64 || f->type == GPURES_FIELD_U32) {
    memcpy(id->bytes, at, f->size); /* registry id, luid.low: little-endian as stored */
  }
}

static int opencl_device(gpures__op op, const gpures_field_info *f, const void *desc,
                         gpures_device_id *id) {
  void *queue = NULL, *platform = NULL, *device = NULL;
  memcpy(&queue, (const uint8_t *)desc + f->offset, sizeof queue);
  int status = gpures__cl_queue_device(op, queue, &platform, &device);
  if (status != GPURES_OK) return status;
  uint64_t p = (uint64_t)(uintptr_t)platform, d = (uint64_t)(uintptr_t)device;
  memcpy(id->bytes, &p, 8);
  memcpy(id->bytes + 8, &d, 8);
  return GPURES_OK;
}

int gpures__device_of_desc(gpures__op op, uint32_t kind, const void *desc, gpures_device_id *id) {
  uint32_t n = 0;
  const gpures_field_info *fields = gpures_kind_fields(kind, &n);
  uint32_t flags = 0;
  memcpy(&flags, (const uint8_t *)desc + 4, sizeof flags);
  for (uint32_t r = 0; r < n; r++) {
    const gpures_field_info *f = &fields[r];
    uint32_t device = GPURES_FIELD_DEVICE_OF(f->flags);
    if (!device || (f->present_bit && !(flags & f->present_bit))) continue;
    id->kind = device;
    if (device == GPURES_DEVICE_OPENCL) return opencl_device(op, f, desc, id);
    if (device != GPURES_DEVICE_CPU) put_field(f, desc, id);
  }
  bool named = id->kind == GPURES_DEVICE_CPU || !all_zero(id->bytes, sizeof id->bytes);
  if (!named) id->kind = GPURES_DEVICE_NONE;
  return GPURES_OK;
}

int gpures_device_of(gpures_handle handle, gpures_device_id *out_id) {
  gpures__op op = {"read the device of", 0};
  if (!out_id) return gpures__fail(op, GPURES_E_NULL_POINTER, "outId", "outId is null");
  memset(out_id, 0, sizeof *out_id);
  uint32_t kind = 0, refcount = 0;
  unsigned char desc[GPURES__DESC_MAX];
  int status = gpures__snapshot(handle, op.verb, &kind, &refcount, desc);
  if (status != GPURES_OK) return status;
  op.kind = kind;
  gpures_device_id id;
  memset(&id, 0, sizeof id);
  if ((status = gpures__device_of_desc(op, kind, desc, &id)) == GPURES_OK) *out_id = id;
  return status;
}

static bool is_uuid(uint32_t kind) {
  return kind == GPURES_DEVICE_VULKAN_UUID || kind == GPURES_DEVICE_CUDA_UUID;
}

int gpures_device_compare(const gpures_device_id *a, const gpures_device_id *b) {
  if (!a || !b || a->kind == GPURES_DEVICE_NONE || b->kind == GPURES_DEVICE_NONE)
    return GPURES_DEVICE_UNKNOWN;
  bool comparable = a->kind == b->kind || (is_uuid(a->kind) && is_uuid(b->kind));
  if (!comparable) return GPURES_DEVICE_UNKNOWN;
  return memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0 ? GPURES_DEVICE_SAME
                                                          : GPURES_DEVICE_DIFFERENT;
}
