/*
** kind_table.c: the kind table, each kind's variant (its field rows and
** checks, kinds/<family>.c) and the platform gating, all expanded from
** GPURES_KIND_LIST. The families: cpu.c (CpuBytes, CpuPlanes,
** CpuSharedSlot), cuda.c, d3d.c, dma_buf.c (DmaBufHandle), gl.c, metal.c,
** opencl.c, vaapi.c, vulkan.c (VkImage, VkBufferHandle, VkOpaqueFd), wgpu.c.
** The per-kind entry points are the handle table's (table/kind_api.c).
*/
#include "../build_os.h"
#include "../internal.h"

/*
** The tables index by id - 1 and GPURES_KIND_MAX counts the rows, so the ids
** of both lists are 1 .. N, each once, in any order: a new kind of either
** family takes the next id and goes at the end of its family's list. In range,
** with the sums of 1 .. N and of their squares; test_variants.c checks every
** row of the table names its own id.
*/
enum { GPURES_EVERY_KIND_LIST(GPURES__POSITION) KIND_ROWS };
_Static_assert((int)KIND_ROWS == (int)GPURES_KIND_MAX, "GPURES_KIND_MAX counts the kinds");
#define IN_RANGE(id, UPPER, ...) _Static_assert(id >= 1 && id <= KIND_ROWS, #UPPER "'s id is past the last");
GPURES_EVERY_KIND_LIST(IN_RANGE)
#undef IN_RANGE
#define SUM(id, ...) +(id)
#define SQUARES(id, ...) +(id) * (id)
_Static_assert(0 GPURES_EVERY_KIND_LIST(SUM) == KIND_ROWS * (KIND_ROWS + 1) / 2 &&
                   0 GPURES_EVERY_KIND_LIST(SQUARES) ==
                       KIND_ROWS * (KIND_ROWS + 1) * (2 * KIND_ROWS + 1) / 6,
               "two kinds share an id, or an id is missing");
#undef SUM
#undef SQUARES

uint32_t gpures_abi_version(void) { return GPURES_ABI_VERSION; }
uint32_t gpures_build_os(void) { return GPURES__BUILD_OS; }

static const char *const os_names[] = {
#define OS_NAME(bit, UPPER, name) [bit] = #name,
  GPURES_OS_LIST(OS_NAME)
#undef OS_NAME
};

const char *gpures_os_name(uint32_t bit) {
  return bit < GPURES__LEN(os_names) ? os_names[bit] : NULL;
}

GPURES__HIDDEN const gpures__variant *const gpures__variants[GPURES_KIND_MAX + 1] = {
#define VARIANT(id, UPPER, snake, Name, own, os) [id] = &gpures__variant_##snake,
  GPURES_EVERY_KIND_LIST(VARIANT)
#undef VARIANT
};

/* Field counts come from the variants, which live in other translation units. */
static gpures_kind_info kinds[GPURES_KIND_MAX] = {
#define KIND(family, id, UPPER, snake, Name, own, os) \
  [id - 1] = {id, GPURES_##own, (os), sizeof(gpures_##snake##_desc), 0, family, #Name, #snake},
#define RESOURCE_KIND(...) KIND(GPURES_FAMILY_RESOURCE, __VA_ARGS__)
#define SYNC_KIND(...) KIND(GPURES_FAMILY_SYNC, __VA_ARGS__)
  GPURES_KIND_LIST(RESOURCE_KIND)
  GPURES_SYNC_KIND_LIST(SYNC_KIND)
#undef KIND
#undef RESOURCE_KIND
#undef SYNC_KIND
};

static void fill_field_counts(void) {
  /* Idempotent and word-sized: threads racing here store the same values. */
  for (uint32_t k = 1; k <= GPURES_KIND_MAX; k++)
    atomic_store_explicit((_Atomic uint32_t *)&kinds[k - 1].num_fields,
                          gpures__variants[k]->num_fields, memory_order_relaxed);
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
  static const gpures_field_info none[1]; /* NoopSync's rows: none, at a real address */
  if (out_count) *out_count = v ? v->num_fields : 0;
  return v ? (v->fields ? v->fields : none) : NULL;
}
