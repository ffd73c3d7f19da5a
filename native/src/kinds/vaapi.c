/* vaapi.c: VaapiSurface (Linux). */
#include "../internal.h"

#define T gpures_vaapi_surface_desc
static const gpures_field_info vaapi_surface_fields[] = {
  GPURES__ROW(T, surface, "surface", GPURES_FIELD_U32, 0, 0, "VASurfaceID; 0 is a legal id"),
  GPURES__ROW(T, display, "display", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "VADisplay"),
};
GPURES__VARIANT(vaapi_surface, vaapi_surface_fields, NULL);
#undef T
