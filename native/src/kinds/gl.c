/* gl.c: GlTextureHandle and GlBufferHandle. */
#include "rows.h"

#define CONTEXT_ROW(T) GPURES__GL_CONTEXT_ROW(T, "GL context; absent means the current one")

#define T gpures_gl_texture_handle_desc
static const gpures_field_info gl_texture_handle_fields[] = {
  GPURES__ROW(T, name, "name", GPURES_FIELD_U32, GPURES_E_NULL_HANDLE, 0, "GL texture name"),
  GPURES__ENUM_ROW(T, target, "target", GPURES_ENUM_GL_TEXTURE_TARGET, "GL texture target"),
  GPURES__ENUM_ROW(T, internal_format, "internalFormat", GPURES_ENUM_GL_INTERNAL_FORMAT, "GL sized internal format"),
  CONTEXT_ROW(T),
  GPURES__SHARE_GROUP_ROW(T),
};
GPURES__VARIANT(gl_texture_handle, gl_texture_handle_fields, NULL);
#undef T

#define T gpures_gl_buffer_handle_desc
static const gpures_field_info gl_buffer_handle_fields[] = {
  GPURES__ROW(T, name, "name", GPURES_FIELD_U32, GPURES_E_NULL_HANDLE, 0, "GL buffer name"),
  GPURES__ENUM_ROW(T, target, "target", GPURES_ENUM_GL_BUFFER_TARGET, "GL buffer target"),
  GPURES__SIZE_ROW(T),
  CONTEXT_ROW(T),
  GPURES__SHARE_GROUP_ROW(T),
};
GPURES__VARIANT(gl_buffer_handle, gl_buffer_handle_fields, NULL);
#undef T
