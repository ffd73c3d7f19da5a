/*
** wire.c: the message a channel carries, one datagram per handle:
** a gpures__wire_header, the descriptor as bytes, the fds attached.
**
** The receiver trusts nothing in a message. A peer can lie in the header
** (sizes, counts, kind), in the descriptor (fd fields, addresses) and in what
** it attaches (fewer or more fds than named, fds that cannot back a frame,
** memory it can still shrink). gpures__wire_decode() refuses each lie with the
** field at fault before gpures_create() sees the descriptor, and then create
** validates it exactly as for a local caller.
*/
#if !defined(_WIN32)
#include <string.h>

#include "channel.h"

static bool owns_fds(uint32_t kind) {
  const gpures__variant *v = gpures__variant_of(kind);
  return v && v->owns_fds;
}

/* Whether byte range [offset, offset + size) of a descriptor lies within `given` bytes. */
static bool within(uint32_t offset, uint32_t size, uint32_t given) {
  return (uint64_t)offset + size <= given;
}

/* ------------------------------------------------------------------ sending */

/*
** Turns a described descriptor into its wire form: fd fields become their
** positions 0, 1, ... and every address is dropped (an optional group holding
** one is marked absent). Returns the number of fd fields.
*/
static uint32_t to_wire(const gpures__variant *v, void *desc) {
  uint32_t flags, drop = 0, position = 0;
  memcpy(&flags, (unsigned char *)desc + 4, 4);
  for (uint32_t r = 0; r < v->num_fields; r++)
    if (v->fields[r].type == GPURES_FIELD_PTR) drop |= v->fields[r].present_bit;
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type == GPURES_FIELD_FD) {
      uint32_t n = gpures__field_len(f, desc);
      for (uint32_t i = 0; i < n; i++) gpures__field_set(f, desc, i, position++);
    } else if (f->type == GPURES_FIELD_PTR || (f->present_bit & drop)) {
      for (uint32_t i = 0; i < f->count; i++)
        memset((unsigned char *)desc + f->offset + (size_t)i * f->stride, 0, f->size);
    }
  }
  flags &= ~drop;
  memcpy((unsigned char *)desc + 4, &flags, 4);
  return position;
}

int gpures__wire_encode(gpures__op *op, gpures_handle handle, gpures__wire_message *out) {
  uint32_t kind = 0;
  int status = gpures_kind(handle, &kind);
  if (status != GPURES_OK) return gpures__refail(*op, status);
  op->kind = kind;
  if (!owns_fds(kind))
    return gpures__fail(*op, GPURES_E_WRONG_KIND, "resource",
                        "%s is process-local (it names memory or objects of this process); only "
                        "kinds that own fds (DmaBufHandle, VkOpaqueFd) cross processes",
                        gpures__kind_name(kind));
  const gpures__variant *v = gpures__variant_of(kind);
  memset(out, 0, sizeof *out);
  if ((status = gpures_describe(handle, out->body, v->desc_size)) != GPURES_OK)
    return gpures__refail(*op, status);
  out->h.num_fds = to_wire(v, out->body);
  out->h.magic = GPURES__WIRE_MAGIC;
  out->h.abi = gpures_abi_version();
  out->h.header_size = sizeof out->h;
  out->h.kind = kind;
  out->h.desc_size = v->desc_size;
  out->h.type = GPURES__MSG_HANDLE;
  return gpures__wire_add_meta(op, handle, out);
}

size_t gpures__wire_compact(gpures__wire_message *m) {
  if (m->h.type != GPURES__MSG_HANDLE || m->h.meta_size) return gpures__wire_length(m);
  m->h.header_size = GPURES__WIRE_HEADER_1_2;
  memmove((unsigned char *)m + GPURES__WIRE_HEADER_1_2, m->body, m->h.desc_size);
  return GPURES__WIRE_HEADER_1_2 + m->h.desc_size;
}

int gpures__wire_add_meta(gpures__op *op, gpures_handle handle, gpures__wire_message *m) {
  gpures_frame_meta meta;
  memset(&meta, 0, sizeof meta);
  meta.struct_size = sizeof meta;
  int status = gpures_meta_get(handle, &meta);
  if (status != GPURES_OK) return gpures__refail(*op, status);
  m->h.meta_size = meta.flags ? (uint32_t)sizeof meta : 0;
  if (meta.flags) memcpy(m->body + m->h.desc_size, &meta, sizeof meta);
  return GPURES_OK;
}

/* ---------------------------------------------------------------- receiving */

/* The header: ours, of a type we know, and as many bytes as it announces. */
static int check_header(gpures__op *op, const gpures__wire_header *h, size_t n) {
  if (h->magic != GPURES__WIRE_MAGIC)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "message",
                        "the message is not a gpures handle (magic 0x%08x)", h->magic);
  if (h->abi >> 16 != GPURES_ABI_MAJOR)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "abi",
                        "the sender's ABI is %u.%u; this library's major version is %u",
                        h->abi >> 16, h->abi & 0xffffu, GPURES_ABI_MAJOR);
  if (h->header_size != sizeof *h && h->header_size != GPURES__WIRE_HEADER_1_2)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "headerSize",
                        "headerSize is %u, not %zu", h->header_size, sizeof *h);
  if (h->type > GPURES__MSG_REFUSE)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "type", "message type %u does not exist",
                        h->type);
  if (h->desc_size > GPURES__WIRE_MAX_DESC ||
      (uint64_t)h->header_size + h->desc_size + h->meta_size != n)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "descSize",
                        "the header announces %u descriptor and %u metadata bytes but %zu arrived",
                        h->desc_size, h->meta_size, n > h->header_size ? n - h->header_size : 0);
  if (h->meta_size && (h->meta_size < 8 || h->meta_size > GPURES_STRUCT_SIZE_MAX))
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "metaSize",
                        "metaSize is %u; metadata has 8 to %u bytes", h->meta_size,
                        GPURES_STRUCT_SIZE_MAX);
  bool carries = h->type == GPURES__MSG_HANDLE || h->type == GPURES__MSG_FRAME ||
                 h->type == GPURES__MSG_FENCE;
  if (gpures__wire_has_payload(h->type) && (h->meta_size || h->kind))
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "metaSize",
                        "a join, welcome or refusal carries its body alone: no kind, no metadata");
  if (!carries && !gpures__wire_has_payload(h->type) && (h->desc_size || h->meta_size))
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "descSize",
                        "a release, forget, keep or bell message carries no descriptor or metadata");
  return GPURES_OK;
}

/* A descriptor's kind: one that owns fds. */
static int check_kind(gpures__op *op, const gpures__wire_header *h) {
  if (!gpures__variant_of(h->kind))
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "kind", "kind %u does not exist", h->kind);
  op->kind = h->kind;
  if (!owns_fds(h->kind))
    return gpures__fail(*op, GPURES_E_WRONG_KIND, "kind",
                        "%s is process-local; only kinds that own fds cross processes",
                        gpures__kind_name(h->kind));
  return GPURES_OK;
}

int gpures__wire_parse(gpures__op *op, const unsigned char *buf, size_t n, uint32_t nfds,
                       gpures__wire_header *h, unsigned char **body) {
  memset(h, 0, sizeof *h);
  if (n < GPURES__WIRE_HEADER_1_2)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "message",
                        "the message has %zu bytes, fewer than the %u of a header", n,
                        GPURES__WIRE_HEADER_1_2);
  memcpy(h, buf, GPURES__WIRE_HEADER_1_2);
  if (h->header_size == sizeof *h && n >= sizeof *h) memcpy(h, buf, sizeof *h);
  int status = check_header(op, h, n);
  if (status == GPURES_OK &&
      ((h->desc_size && !gpures__wire_has_payload(h->type)) || h->type == GPURES__MSG_HANDLE ||
       h->type == GPURES__MSG_FENCE))
    status = check_kind(op, h);
  bool bell = h->type == GPURES__MSG_BELL; /* the one message whose fd has no descriptor */
  if (status == GPURES_OK && bell && (nfds != 1 || h->num_fds != 1))
    status = gpures__fail(*op, GPURES_E_INVALID_VALUE, "fds",
                          "a BELL carries one fd, its doorbell; %u arrived (the header says %u)",
                          nfds, h->num_fds);
  if (status == GPURES_OK && !bell && (!h->desc_size || gpures__wire_has_payload(h->type)) && nfds)
    status = gpures__fail(*op, GPURES_E_INVALID_VALUE, "fds",
                          "%u fds arrived with a message that has no descriptor", nfds);
  *body = (unsigned char *)buf + h->header_size;
  return status;
}

/* The descriptor's struct_size and the fds: what the header and the datagram say. */
static int check_sizes(gpures__op *op, const gpures__wire_header *h, const unsigned char *desc,
                       uint32_t nfds) {
  if (h->desc_size < 8)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "structSize",
                        "the descriptor has %u bytes, fewer than its struct_size and flags",
                        h->desc_size);
  uint32_t struct_size;
  memcpy(&struct_size, desc, 4);
  if (struct_size != h->desc_size)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "structSize",
                        "structSize is %u but the message carries %u descriptor bytes",
                        struct_size, h->desc_size);
  if (h->num_fds != nfds)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "fds",
                        "the header announces %u fds but %u arrived", h->num_fds, nfds);
  if (nfds > GPURES__WIRE_MAX_FDS)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "fds",
                        "%u fds arrived; a descriptor names at most %u", nfds,
                        GPURES__WIRE_MAX_FDS);
  return GPURES_OK;
}

/* Array lengths first: create says the same, but before any fd is looked at. */
static int check_counts(gpures__op *op, const gpures__variant *v, const unsigned char *desc) {
  for (uint32_t row = 0; row < v->num_fields; row++) {
    const gpures_field_info *f = &v->fields[row];
    uint32_t entries = f->type == GPURES_FIELD_COUNT ? (uint32_t)gpures__field_get(f, desc, 0) : 0;
    if (entries > f->count)
      return gpures__fail(*op, GPURES_E_INVALID_VALUE, f->path,
                          "%s has %u entries; at most %u are allowed", f->path, entries, f->count);
  }
  return GPURES_OK;
}

/* One element of a field: no address; an fd field names the next attached fd, which then goes in. */
static int place_element(gpures__op *op, const gpures_field_info *f, uint32_t i,
                         unsigned char *desc, uint32_t desc_size, const int *fds, uint32_t nfds,
                         uint32_t *position) {
  char path[96];
  if (f->type == GPURES_FIELD_PTR && gpures__field_get(f, desc, i) != 0) {
    gpures__field_path(f, i, path, sizeof path);
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, path,
                        "%s is an address of the sending process; addresses do not cross "
                        "processes", path);
  }
  if (f->type != GPURES_FIELD_FD) return GPURES_OK;
  gpures__field_path(f, i, path, sizeof path);
  if (!within(f->offset + i * f->stride, f->size, desc_size))
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, path,
                        "%s lies past the descriptor's %u bytes", path, desc_size);
  int64_t value = (int64_t)gpures__field_get(f, desc, i);
  if (value != (int64_t)*position || *position >= nfds)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, path,
                        "%s is %lld; in a message it must be %u, the position of an attached "
                        "fd (%u arrived)", path, (long long)value, *position, nfds);
  gpures__field_set(f, desc, i, (uint64_t)(int64_t)fds[*position]);
  (*position)++;
  return GPURES_OK;
}

/* Puts the received fds into the descriptor's fd fields; every attached fd must be named. */
static int place_fds(gpures__op *op, const gpures__variant *v, unsigned char *desc,
                     uint32_t desc_size, const int *fds, uint32_t nfds) {
  uint32_t position = 0;
  for (uint32_t row = 0; row < v->num_fields; row++) {
    const gpures_field_info *f = &v->fields[row];
    uint32_t used = gpures__field_len(f, desc);
    for (uint32_t i = 0; i < used; i++) {
      int status = place_element(op, f, i, desc, desc_size, fds, nfds, &position);
      if (status != GPURES_OK) return status;
    }
  }
  if (position != nfds)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "fds",
                        "the descriptor names %u fds but %u arrived", position, nfds);
  return GPURES_OK;
}

/*
** Whether the kind's fd is a driver's opaque export, which the importing
** driver resolves and nothing maps: NVIDIA's (memory and Vulkan semaphores
** alike) are opens of /dev/nvidiactl. A sync-fd semaphore is a sync_file,
** which the host polls, so a device cannot stand for one.
*/
static bool is_opaque_export(uint32_t kind, const unsigned char *desc) {
  if (kind == GPURES_KIND_VK_OPAQUE_FD || kind == GPURES_KIND_CUDA_VMM_FD) return true;
  if (kind != GPURES_KIND_VK_SEMAPHORE_FD) return false;
  gpures_vk_semaphore_fd_desc d;
  memcpy(&d, desc, sizeof d);
  return d.handle_type == 1u; /* SemaphoreHandleType opaqueFd */
}

/*
** Each fd as the descriptor names it: one that cannot back a frame, or whose
** memory the peer could still shrink under a mapping here, is refused now
** (not at map time, when the frame is already in use).
*/
static int check_fds(gpures__op *op, const gpures__variant *v, const unsigned char *desc,
                     bool allow_unsealed) {
  for (uint32_t row = 0; row < v->num_fields; row++) {
    const gpures_field_info *f = &v->fields[row];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t used = gpures__field_len(f, desc);
    for (uint32_t i = 0; i < used; i++) {
      char path[96];
      gpures__field_path(f, i, path, sizeof path);
      int fd = (int)(int64_t)gpures__field_get(f, desc, i);
      bool memory = op->kind == GPURES_KIND_VK_OPAQUE_FD || op->kind == GPURES_KIND_CUDA_VMM_FD ||
                    op->kind == GPURES_KIND_DMA_BUF_HANDLE;
      uint32_t flags = (allow_unsealed ? GPURES__FRAME_FD_ALLOW_UNSEALED : 0) |
                       (is_opaque_export(op->kind, desc) ? GPURES__FRAME_FD_OPAQUE : 0) |
                       (memory ? GPURES__FRAME_FD_MEMORY : 0);
      int status = gpures__check_frame_fd(*op, path, fd, flags);
      if (status != GPURES_OK) return status;
    }
  }
  return GPURES_OK;
}

int gpures__wire_meta(gpures__op *op, const gpures__wire_header *h, const unsigned char *body,
                      uint32_t width, uint32_t height, gpures_frame_meta *out) {
  memset(out, 0, sizeof *out);
  if (!h->meta_size) return GPURES_OK;
  const unsigned char *meta = body + h->desc_size;
  uint32_t struct_size;
  memcpy(&struct_size, meta, 4);
  if (struct_size != h->meta_size)
    return gpures__fail(*op, GPURES_E_INVALID_VALUE, "meta.structSize",
                        "meta.structSize is %u but the message carries %u metadata bytes",
                        struct_size, h->meta_size);
  int status = gpures__copy_versioned(*op, "meta.structSize", meta, sizeof *out, out);
  out->struct_size = sizeof *out;
  if (status == GPURES_OK) status = gpures__meta_validate(*op, out, width, height);
  return status;
}

int gpures__wire_decode(gpures__op *op, const gpures__wire_header *h, unsigned char *body,
                        const int *fds, uint32_t nfds, bool allow_unsealed,
                        gpures_handle *out_handle) {
  /* The descriptor is copied out, zero past what arrived, so fields it does not reach read as 0. */
  unsigned char desc[GPURES__WIRE_MAX_DESC + 8];
  memset(desc, 0, sizeof desc);
  memcpy(desc, body, h->desc_size);
  int status = check_sizes(op, h, desc, nfds);
  const gpures__variant *v = gpures__variant_of(h->kind);
  if (status == GPURES_OK) status = check_counts(op, v, desc);
  if (status == GPURES_OK) status = place_fds(op, v, desc, h->desc_size, fds, nfds);
  gpures_frame_meta meta;
  uint32_t width = 0, height = 0;
  gpures__desc_extent(v, desc, &width, &height);
  if (status == GPURES_OK) status = gpures__wire_meta(op, h, body, width, height, &meta);
  if (status == GPURES_OK) status = check_fds(op, v, desc, allow_unsealed);
  if (status != GPURES_OK) return status;

  gpures_create_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.flags = GPURES_CREATE_TAKE_OWNERSHIP;
  status = gpures_create(h->kind, desc, &options, out_handle); /* create's own message and field */
  /* Checked above against the same extent: storing it cannot fail. */
  if (status == GPURES_OK && meta.flags) (void)gpures_meta_set(*out_handle, &meta);
  return status;
}
#endif
