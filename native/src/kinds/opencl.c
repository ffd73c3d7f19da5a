/* opencl.c: OpenClMem. */
#include "rows.h"

#define T gpures_open_cl_mem_desc
static const gpures_field_info open_cl_mem_fields[] = {
  GPURES__ROW(T, mem, "mem", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "cl_mem"),
  GPURES__ROW(T, queue, "queue", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, GPURES_FIELD_DEVICE(GPURES_DEVICE_OPENCL), "cl_command_queue that orders access"),
  GPURES__ROW_PITCH_ROW(T),
};
GPURES__VARIANT(open_cl_mem, open_cl_mem_fields, NULL);
#undef T
