/*
** layout_dump.c: prints everything the Deno module checks a library against
** when it loads it (SPEC section 7): the ABI version, the kind table with every
** field row, the enumerations, the pixel formats and the sizes of the public
** structs. Nothing OS-specific is printed, so two builds must print the same
** text: .ci/portability.sh compares gpures.dll under Wine with the Linux
** build, from which ffi/gen/kinds.ts is generated. Not a test on its own.
*/
#include <stdio.h>

#include "gpures.h"

int main(void) {
  printf("abi 0x%x\n", (unsigned)gpures_abi_version());
  printf("sizeof kind_info %u field_info %u enum_value %u pixel_format_info %u\n",
         (unsigned)sizeof(gpures_kind_info), (unsigned)sizeof(gpures_field_info),
         (unsigned)sizeof(gpures_enum_value), (unsigned)sizeof(gpures_pixel_format_info));
  printf("sizeof create_options %u keep_alive %u event %u\n",
         (unsigned)sizeof(gpures_create_options), (unsigned)sizeof(gpures_keep_alive),
         (unsigned)sizeof(gpures_event));

  uint32_t n = 0;
  const gpures_kind_info *kinds = gpures_kind_table(&n);
  for (uint32_t k = 0; k < n; k++) {
    const gpures_kind_info *info = &kinds[k];
    printf("kind %u %s %s ownership %u platforms 0x%x desc_size %u fields %u\n",
           (unsigned)info->id, info->name, info->snake, (unsigned)info->ownership,
           (unsigned)info->platforms, (unsigned)info->desc_size, (unsigned)info->num_fields);
    uint32_t rows = 0;
    const gpures_field_info *f = gpures_kind_fields(info->id, &rows);
    for (uint32_t r = 0; r < rows; r++)
      printf("  %s type %u offset %u size %u count %u stride %u count_offset %u present_bit %u"
             " enum_set %u zero_status %u flags %u\n",
             f[r].path, (unsigned)f[r].type, (unsigned)f[r].offset, (unsigned)f[r].size,
             (unsigned)f[r].count, (unsigned)f[r].stride, (unsigned)f[r].count_offset,
             (unsigned)f[r].present_bit, (unsigned)f[r].enum_set, (unsigned)f[r].zero_status,
             (unsigned)f[r].flags);
  }

  const gpures_enum_value *values = gpures_enum_table(&n);
  for (uint32_t i = 0; i < n; i++)
    printf("enum %s %u %s\n", gpures_enum_set_name(values[i].set), (unsigned)values[i].value,
           values[i].name);

  const gpures_pixel_format_info *formats = gpures_pixel_format_table(&n);
  for (uint32_t i = 0; i < n; i++) {
    const gpures_pixel_format_info *p = &formats[i];
    printf("format %u planes %u bits %u flags 0x%x fourcc 0x%08x", (unsigned)p->id,
           (unsigned)p->num_planes, (unsigned)p->bits_per_sample, (unsigned)p->flags,
           (unsigned)p->drm_fourcc);
    for (uint32_t j = 0; j < p->num_planes && j < 4; j++)
      printf(" [%u %u %u %u %u]", p->planes[j].hsub, p->planes[j].vsub, p->planes[j].channels,
             p->planes[j].block_width, (unsigned)p->planes[j].bytes_per_sample);
    printf("\n");
  }

  for (int s = 0; gpures_status_name(s); s++)
    printf("status %d %s %s\n", s, gpures_status_name(s), gpures_status_message(s));
  for (uint32_t bit = 0; gpures_os_name(bit); bit++) printf("os %u %s\n", (unsigned)bit, gpures_os_name(bit));
  return 0;
}
