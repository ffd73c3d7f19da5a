/*
** vulkan_pool.c: frame pools in exported Vulkan memory. Each slot is a
** VkBuffer over memory allocated exportable as an opaque fd; its frames are
** VkOpaqueFd handles over that fd (rows at rowPitch, later planes after
** plane 0, as the kind describes them), so a session sends the fd once per
** slot and the receiver's importer (Vulkan, CUDA) imports it once. The pool
** itself is frames/pool.c's; this file is its backing: make, free, and the
** producer's own VkBuffer and VkDeviceMemory of a slot.
**
** The VkDevice must outlive gpures_pool_close(), not the frames: the close
** frees every Vulkan object of the pool, and memory still held lives on in
** the fds of its frames (each fd is a reference to the memory's payload).
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <string.h>

#include "vulkan.h"
#include "../frames/backing.h"

#define BUFFER_USAGE_DEFAULT                                               \
  (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | \
   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)

typedef struct vk_pool {
  void *device;
  vk_device_fns fn;
  uint32_t usage;
  uint32_t memory_type;
  uint64_t bytes; /* of a frame: what each VkBuffer spans */
} vk_pool;

static gpures__op pool_op(const char *verb) {
  gpures__op op = {verb, GPURES_KIND_VK_OPAQUE_FD};
  return op;
}

static int new_buffer(gpures__op op, vk_pool *vp, uint64_t *out) {
  VkExternalMemoryBufferCreateInfo ext = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                          NULL, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  VkBufferCreateInfo ci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &ext, 0, vp->bytes, vp->usage,
                           VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
  VkResult r = vp->fn.create_buffer(vp->device, &ci, NULL, out);
  return r == VK_SUCCESS ? GPURES_OK : gpures__vk_fail(op, "usage", "vkCreateBuffer", r);
}

static void unmake(void *state, gpures__slot_memory *m) {
  vk_pool *vp = state;
  if (m->objects[1]) vp->fn.destroy_buffer(vp->device, m->objects[1], NULL);
  if (m->objects[0]) vp->fn.free_memory(vp->device, m->objects[0], NULL);
  m->objects[0] = m->objects[1] = 0;
}

/*
** objects[0]: the VkDeviceMemory; objects[1]: the VkBuffer bound over all of
** it. What a failed Vulkan call wrote back is never trusted: each object is
** kept (and freed) only once its call succeeded.
*/
static int make(void *state, gpures__op op, uint64_t size, gpures__slot_memory *out) {
  vk_pool *vp = state;
  out->fd = -1;
  out->objects[0] = out->objects[1] = 0;
  uint64_t buffer = 0, memory = 0;
  int status = new_buffer(op, vp, &buffer);
  if (status != GPURES_OK) return status;
  out->objects[1] = buffer;
  VkExportMemoryAllocateInfo exp = {VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, NULL,
                                    VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &exp, size, vp->memory_type};
  VkResult r = vp->fn.allocate(vp->device, &ai, NULL, &memory);
  if (r == VK_SUCCESS) out->objects[0] = memory;
  if (r == VK_SUCCESS) r = vp->fn.bind_buffer(vp->device, buffer, memory, 0);
  VkMemoryGetFdInfoKHR gi = {VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, NULL, memory,
                             VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  int fd = -1;
  if (r == VK_SUCCESS) r = vp->fn.get_memory_fd(vp->device, &gi, &fd);
  if (r == VK_SUCCESS && fd >= 0) return out->fd = fd, GPURES_OK;
  unmake(vp, out);
  return gpures__vk_fail(op, "device", "allocating exportable memory", r ? r : -13 /* VK_ERROR_UNKNOWN */);
}

static void destroy(void *state) { gpures__free(state); }

static const gpures__pool_backing vk_backing = {GPURES_KIND_VK_OPAQUE_FD, make, unmake, destroy};

/* The lowest memory type the buffer takes with every `want` flag (and, preferred, `like`). */
static int pick_memory_type(gpures__op op, const vk_instance_fns *in, void *phys,
                            uint32_t bits, uint32_t want, uint32_t like, uint32_t *out) {
  VkPhysicalDeviceMemoryProperties props;
  memset(&props, 0, sizeof props);
  in->memory_properties(phys, &props);
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < props.memoryTypeCount && i < 32; i++) {
      uint32_t flags = props.memoryTypes[i].propertyFlags;
      if (!(bits & (1u << i)) || (flags & want) != want) continue;
      if (pass == 0 && (flags & like) != like) continue;
      *out = i;
      return GPURES_OK;
    }
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "flags",
                      "no memory type of the device holds an exportable buffer%s (types 0x%x can)",
                      want ? " the host can map" : "", bits);
}

/* Whether the device exports buffers of this usage as opaque fds. */
static int check_exportable(gpures__op op, const vk_instance_fns *in, void *phys, uint32_t usage) {
  VkPhysicalDeviceExternalBufferInfo info = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
                                             NULL, 0, usage,
                                             VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  VkExternalBufferProperties props;
  memset(&props, 0, sizeof props);
  props.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES;
  in->external_buffer_properties(phys, &info, &props);
  uint32_t features = props.externalMemoryProperties.externalMemoryFeatures;
  if ((features & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) &&
      !(features & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT))
    return GPURES_OK;
  if (features & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "usage",
                        "the device exports buffers of usage 0x%x only as dedicated allocations, "
                        "which pools do not make yet", usage);
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "usage",
                      "the device cannot export buffers of usage 0x%x as opaque fds", usage);
}

static int check_desc(gpures__op op, const gpures_vk_pool_desc *d) {
  if (d->flags & ~GPURES_VK_POOL_HOST_VISIBLE)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x",
                        d->flags & ~GPURES_VK_POOL_HOST_VISIBLE);
  if (!d->instance) return gpures__fail(op, GPURES_E_NULL_POINTER, "instance", "instance is null");
  if (!d->physical_device)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "physicalDevice", "physicalDevice is null");
  if (!d->device) return gpures__fail(op, GPURES_E_NULL_POINTER, "device", "device is null");
  return GPURES_OK;
}

/* The pool's state: the device's entry points, the usage, and what one slot takes. */
static int new_state(gpures__op op, const gpures_vk_pool_desc *d, uint64_t bytes, vk_pool **out,
                     gpures_vk_opaque_fd_desc *frame) {
  vk_instance_fns in;
  int status = gpures__vk_load_instance(op, d->instance, d->get_instance_proc_addr, &in);
  if (status != GPURES_OK) return status;
  vk_pool *vp = gpures__alloc(sizeof *vp);
  if (!vp) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the pool");
  memset(vp, 0, sizeof *vp);
  vp->device = d->device;
  vp->usage = d->usage ? d->usage : BUFFER_USAGE_DEFAULT;
  vp->bytes = bytes;
  gpures_device_info dev;
  gpures__vk_fill_device_info(d->physical_device, &in, &dev);
  memcpy(frame->device_uuid, dev.id.bytes, 16);
  status = gpures__vk_load_device(op, &in, d->device, &vp->fn);
  if (status == GPURES_OK && (!in.memory_properties || !in.external_buffer_properties))
    status = gpures__fail(op, GPURES_E_UNSUPPORTED, "instance",
                          "the instance has no vkGetPhysicalDeviceExternalBufferProperties (Vulkan "
                          "1.1 or VK_KHR_external_memory_capabilities)");
  if (status == GPURES_OK && !vp->fn.get_memory_fd)
    status = gpures__fail(op, GPURES_E_UNSUPPORTED, "device", "the device has no vkGetMemoryFdKHR");
  if (status == GPURES_OK) status = check_exportable(op, &in, d->physical_device, vp->usage);
  uint64_t buffer = 0;
  if (status == GPURES_OK) status = new_buffer(op, vp, &buffer);
  if (status == GPURES_OK) {
    VkMemoryRequirements reqs;
    vp->fn.buffer_requirements(d->device, buffer, &reqs);
    vp->fn.destroy_buffer(d->device, buffer, NULL);
    bool host = d->flags & GPURES_VK_POOL_HOST_VISIBLE;
    uint32_t want = host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
    /* Host-visible: the lowest type that has it (system memory first, not a small BAR heap). */
    status = pick_memory_type(op, &in, d->physical_device, reqs.memoryTypeBits, want,
                              host ? 0 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &vp->memory_type);
    frame->size = reqs.size;
    frame->memory_type_index = vp->memory_type;
  }
  if (status != GPURES_OK) return gpures__free(vp), status;
  *out = vp;
  return GPURES_OK;
}

int gpures_vk_pool_create(const gpures_vk_pool_desc *desc, gpures_pool **out_pool) {
  gpures__op op = pool_op("create a Vulkan pool of");
  if (!out_pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "outPool", "outPool is null");
  *out_pool = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_vk_pool_desc d;
  memset(&d, 0, sizeof d);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof d, &d);
  if (status == GPURES_OK) status = check_desc(op, &d);
  gpures__gpu_pool_shape_desc shape = {d.slots, d.format, d.width, d.height, d.row_align};
  gpures__pool_frame frame;
  uint64_t bytes = 0;
  if (status == GPURES_OK) status = gpures__gpu_pool_shape(op, &shape, &frame.opaque, &bytes);
  vk_pool *vp = NULL;
  if (status == GPURES_OK) status = new_state(op, &d, bytes, &vp, &frame.opaque);
  if (status != GPURES_OK) return status;
  return gpures__gpu_pool_create(op, d.slots, &frame, &vk_backing, vp, out_pool);
}

int gpures_vk_pool_objects(gpures_pool *pool, gpures_handle frame, gpures_vk_pool_slot *out) {
  gpures__op op = pool_op("find the Vulkan objects of");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  uint64_t buffer_id = 0, objects[2] = {0, 0};
  int status = gpures_buffer_id(frame, &buffer_id);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if ((status = gpures__pool_slot_objects(pool, &vk_backing, buffer_id, objects)) != GPURES_OK)
    return gpures__refail(op, status);
  gpures_vk_opaque_fd_desc d;
  if ((status = gpures_describe(frame, &d, sizeof d)) != GPURES_OK) return gpures__refail(op, status);
  gpures_vk_pool_slot slot;
  memset(&slot, 0, sizeof slot);
  slot.struct_size = sizeof slot;
  slot.memory = objects[0];
  slot.buffer = objects[1];
  slot.size = d.size;
  slot.memory_type_index = d.memory_type_index;
  slot.row_pitch = d.row_pitch;
  return gpures__copy_out(op, out, &slot, sizeof slot);
}

#endif /* __linux__ */
