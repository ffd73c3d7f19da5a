/* kinds.c: the kind table and every per-kind entry point, expanded from GPURES_KIND_LIST. */
#include "build_os.h"
#include "internal.h"

uint32_t gpures_abi_version(void) { return GPURES_ABI_VERSION; }
uint32_t gpures_build_os(void) { return GPURES__BUILD_OS; }

const char *gpures_os_name(uint32_t bit) {
  switch (bit) {
#define OS_NAME(b, UPPER, name) \
  case b:                       \
    return #name;
    GPURES_OS_LIST(OS_NAME)
#undef OS_NAME
  }
  return NULL;
}

static const gpures__variant *const variants[GPURES_KIND_MAX + 1] = {
#define VARIANT(id, UPPER, snake, Name, own, os) [id] = &gpures__variant_##snake,
  GPURES_KIND_LIST(VARIANT)
#undef VARIANT
};

/* Field counts come from the variants, which live in other translation units. */
static gpures_kind_info kinds[GPURES_KIND_MAX] = {
#define KIND(id, UPPER, snake, Name, own, os) \
  [id - 1] = {id, GPURES_##own, (os), sizeof(gpures_##snake##_desc), 0, 0, #Name, #snake},
  GPURES_KIND_LIST(KIND)
#undef KIND
};

const gpures__variant *gpures__variant_of(uint32_t kind) {
  return kind >= 1 && kind <= GPURES_KIND_MAX ? variants[kind] : NULL;
}

const char *gpures__kind_name(uint32_t kind) {
  return gpures__variant_of(kind) ? kinds[kind - 1].name : "handle";
}

static void fill_field_counts(void) {
  /* Idempotent and word-sized: threads racing here store the same values. */
  for (uint32_t k = 1; k <= GPURES_KIND_MAX; k++)
    atomic_store_explicit((_Atomic uint32_t *)&kinds[k - 1].num_fields, variants[k]->num_fields,
                          memory_order_relaxed);
}

const gpures_kind_info *gpures_kind_table(uint32_t *out_count) {
  fill_field_counts();
  if (out_count) *out_count = GPURES_KIND_MAX;
  return kinds;
}

const gpures_kind_info *gpures_kind_info_of(uint32_t kind) {
  if (!gpures__variant_of(kind)) return NULL;
  fill_field_counts();
  return &kinds[kind - 1];
}

int gpures_kind_supported(uint32_t kind) {
  return gpures__variant_of(kind) && (kinds[kind - 1].platforms & GPURES__BUILD_OS) ? 1 : 0;
}

const gpures_field_info *gpures_kind_fields(uint32_t kind, uint32_t *out_count) {
  const gpures__variant *v = gpures__variant_of(kind);
  if (out_count) *out_count = v ? v->num_fields : 0;
  return v ? v->fields : NULL;
}

#define ENTRY_POINTS(id, UPPER, snake, Name, own, os)                                           \
  int gpures_##snake##_create(const gpures_##snake##_desc *desc,                              \
                              const gpures_create_options *options, gpures_handle *out) {     \
    return gpures_create(id, desc, options, out);                                             \
  }                                                                                           \
  int gpures_##snake##_clone(gpures_handle h) { return gpures__clone_kind(h, id); }           \
  int gpures_##snake##_describe(gpures_handle h, gpures_##snake##_desc *out) {                \
    return gpures__describe_kind(h, id, out);                                                 \
  }                                                                                           \
  int gpures_##snake##_release(gpures_handle h) { return gpures__release_kind(h, id); }
GPURES_KIND_LIST(ENTRY_POINTS)
#undef ENTRY_POINTS
