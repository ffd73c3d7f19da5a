/*
** struct_size.c: the struct sizes a caller may pass. Descriptors and options
** begin with their own size so that they can grow: an older (shorter) struct
** that ends between two fields is read as far as it goes, a newer (longer)
** one whose extra bytes are zero is read as far as the library knows. Any
** other size is refused before a byte past the library's own struct is read.
*/
#include "table.h"

/*
** A struct_size the library can believe: struct_size and flags at least, and
** at most GPURES_STRUCT_SIZE_MAX. Anything else is no older or newer struct
** but an unset struct_size, and believing it would read or write that many
** bytes of the caller's memory.
*/
int gpures__check_struct_size(gpures__op op, const char *field, uint32_t given) {
  if (given < 8)
    return gpures__fail(op, GPURES_E_ABI_MISMATCH, field,
                        "%s is %u; set it to the size of the struct", field, given);
  if (given > GPURES_STRUCT_SIZE_MAX)
    return gpures__fail(op, GPURES_E_ABI_MISMATCH, field,
                        "%s is %u (0x%x), above GPURES_STRUCT_SIZE_MAX (%u): not the size of "
                        "any struct; set it to the size of the struct",
                        field, given, given, (unsigned)GPURES_STRUCT_SIZE_MAX);
  return GPURES_OK;
}

int gpures__copy_versioned(gpures__op op, const char *field, const void *in, uint32_t own,
                           void *out) {
  uint32_t given = struct_size_of(in);
  int status = gpures__check_struct_size(op, field, given);
  if (status != GPURES_OK) return status;
  memcpy(out, in, given < own ? given : own);
  if (given < own) memset((unsigned char *)out + given, 0, own - given); /* an older struct: absent */
  for (uint32_t i = own; i < given; i++)
    if (((const unsigned char *)in)[i])
      return gpures__fail(op, GPURES_E_ABI_MISMATCH, field,
                          "the struct has %u bytes and byte %u is set; this library knows %u",
                          given, i, own);
  ((uint32_t *)out)[0] = own;
  return GPURES_OK;
}

/*
** A struct shorter than the library's (an older caller's) must end between
** two fields. One that ends inside a value or inside an array would leave a
** pointer, an fd or a count half given: refuse it rather than read it.
*/
int gpures__check_short_desc(gpures__op op, const gpures__variant *v, uint32_t given) {
  if (given >= v->desc_size) return GPURES_OK;
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    uint32_t begin = f->offset, end = f->offset + (f->count - 1u) * f->stride + f->size;
    if (begin < given && given < end)
      return gpures__fail(op, GPURES_E_ABI_MISMATCH, "structSize",
                          "structSize %u ends inside %s (bytes %u to %u)", given, f->path, begin,
                          end);
  }
  return GPURES_OK;
}

/* The same for the options struct, whose fields are pointers and 64-bit values. */
int gpures__check_short_options(gpures__op op, const gpures_create_options *options) {
  static const uint32_t ends[] = {
      offsetof(gpures_create_options, keep_alive),
      offsetof(gpures_create_options, keep_alive.release),
      offsetof(gpures_create_options, keep_alive.mark_consumed),
      offsetof(gpures_create_options, event_queue),
      offsetof(gpures_create_options, reserved),
      offsetof(gpures_create_options, event_token)};
  uint32_t given = struct_size_of(options);
  if (given >= sizeof *options) return GPURES_OK;
  for (uint32_t i = 0; i < GPURES__LEN(ends); i++)
    if (given == ends[i]) return GPURES_OK;
  return gpures__fail(op, GPURES_E_ABI_MISMATCH, "options.structSize",
                      "options.structSize %u ends inside a field", given);
}
