/*
** egl.c: DmaBufHandle frames into EGLImages and GL textures
** (EGL_EXT_image_dma_buf_import), and what an EGL display can import
** (EGL_EXT_image_dma_buf_import_modifiers).
**
** EGL and GL are reached through eglGetProcAddress (the caller's, or the one
** of the system's libEGL.so.1 opened with dlopen): the library links neither
** and includes no Khronos header: the few ABI-stable types and enum values
** it uses are declared in khronos/egl_min.h, which the GPU test helpers share.
**
** An importer belongs to the EGL context current when it was made: its
** textures are names in that context, so imports are refused (UNSUPPORTED
** naming "context") on a thread where another context, or none, is current.
** ops->free deletes the texture only while that context is current; without
** it (an importer destroyed on another thread, or after eglMakeCurrent(NONE))
** the EGLImage is still destroyed, and the texture name is left to the
** context, which frees it when it is destroyed. The texture kept the image's
** memory alive until then.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "interop.h"

/* ---------------------------------------------------------- EGL and GL ABI */

#include "khronos/egl_min.h"

/* Plane i's attributes of an EGL_LINUX_DMA_BUF_EXT image. */
static const EGLint plane_fd_attr[4] = {EGL_DMA_BUF_PLANE0_FD_EXT, EGL_DMA_BUF_PLANE1_FD_EXT,
                                        EGL_DMA_BUF_PLANE2_FD_EXT, EGL_DMA_BUF_PLANE3_FD_EXT};
static const EGLint plane_offset_attr[4] = {
    EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGL_DMA_BUF_PLANE1_OFFSET_EXT, EGL_DMA_BUF_PLANE2_OFFSET_EXT,
    EGL_DMA_BUF_PLANE3_OFFSET_EXT};
static const EGLint plane_pitch_attr[4] = {
    EGL_DMA_BUF_PLANE0_PITCH_EXT, EGL_DMA_BUF_PLANE1_PITCH_EXT, EGL_DMA_BUF_PLANE2_PITCH_EXT,
    EGL_DMA_BUF_PLANE3_PITCH_EXT};
static const EGLint plane_modifier_lo_attr[4] = {
    EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT,
    EGL_DMA_BUF_PLANE2_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE3_MODIFIER_LO_EXT};
static const EGLint plane_modifier_hi_attr[4] = {
    EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT,
    EGL_DMA_BUF_PLANE2_MODIFIER_HI_EXT, EGL_DMA_BUF_PLANE3_MODIFIER_HI_EXT};

typedef void *(*egl_proc_fn)(const char *name);

typedef struct egl_fns {
  EGLint (*get_error)(void);
  const char *(*query_string)(void *display, EGLint name);
  void *(*current_context)(void);
  void *(*current_display)(void);
  void *(*create_image)(void *display, void *context, uint32_t target, void *buffer,
                        const EGLint *attribs);
  EGLBoolean (*destroy_image)(void *display, void *image);
  /* EGL_EXT_image_dma_buf_import_modifiers; NULL without it */
  EGLBoolean (*query_formats)(void *display, EGLint max, EGLint *formats, EGLint *count);
  EGLBoolean (*query_modifiers)(void *display, EGLint format, EGLint max, uint64_t *modifiers,
                                 EGLBoolean *external_only, EGLint *count);
  /* EGL_EXT_device_query and EGL_EXT_device_persistent_id; NULL without them */
  EGLBoolean (*query_display_attrib)(void *display, EGLint attribute, intptr_t *value);
  const char *(*query_device_string)(void *device, EGLint name);
  EGLBoolean (*query_device_binary)(void *device, EGLint name, EGLint max, void *value,
                                     EGLint *size);
} egl_fns;

typedef struct gl_fns {
  void (*gen_textures)(int32_t n, uint32_t *names);
  void (*delete_textures)(int32_t n, const uint32_t *names);
  void (*bind_texture)(uint32_t target, uint32_t name);
  void (*tex_parameteri)(uint32_t target, uint32_t name, int32_t value);
  void (*get_integerv)(uint32_t name, int32_t *value);
  uint32_t (*get_error)(void);
  const char *(*get_string)(uint32_t name);
  void (*image_target_texture)(uint32_t target, void *image); /* glEGLImageTargetTexture2DOES */
} gl_fns;

/* ------------------------------------------------------------ loading */

static bool has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && (p = strstr(p, word)) != NULL; p += n) {
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  }
  return false;
}

/* The caller's eglGetProcAddress, else the system libEGL's (kept loaded: the driver is). */
static egl_proc_fn proc_address(gpures__op op, void *given, int *status) {
  if (given) return (egl_proc_fn)given;
  void *lib = dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
  egl_proc_fn fn = lib ? (egl_proc_fn)dlsym(lib, "eglGetProcAddress") : NULL;
  if (!fn) {
    const char *why = dlerror();
    *status = gpures__fail(op, GPURES_E_UNSUPPORTED, "", "libEGL.so.1 cannot be opened: %s",
                           why ? why : "it has no eglGetProcAddress");
  }
  return fn;
}

#define EGL_LOAD(fns, proc, member, name) ((fns)->member = (__typeof__((fns)->member))(proc)(name))

static int egl_load(gpures__op op, void *given, egl_fns *f) {
  int status = GPURES_OK;
  egl_proc_fn proc = proc_address(op, given, &status);
  if (!proc) return status;
  memset(f, 0, sizeof *f);
  /* Core EGL functions through eglGetProcAddress: EGL 1.5 (and every glvnd) answers for them. */
  EGL_LOAD(f, proc, get_error, "eglGetError");
  EGL_LOAD(f, proc, query_string, "eglQueryString");
  EGL_LOAD(f, proc, current_context, "eglGetCurrentContext");
  EGL_LOAD(f, proc, current_display, "eglGetCurrentDisplay");
  EGL_LOAD(f, proc, create_image, "eglCreateImageKHR");
  EGL_LOAD(f, proc, destroy_image, "eglDestroyImageKHR");
  EGL_LOAD(f, proc, query_formats, "eglQueryDmaBufFormatsEXT");
  EGL_LOAD(f, proc, query_modifiers, "eglQueryDmaBufModifiersEXT");
  EGL_LOAD(f, proc, query_display_attrib, "eglQueryDisplayAttribEXT");
  EGL_LOAD(f, proc, query_device_string, "eglQueryDeviceStringEXT");
  EGL_LOAD(f, proc, query_device_binary, "eglQueryDeviceBinaryEXT");
  if (f->get_error && f->query_string && f->current_context && f->current_display &&
      f->create_image && f->destroy_image)
    return GPURES_OK;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "getProcAddress",
                      "eglGetProcAddress gives no eglCreateImageKHR or another core EGL function");
}

static int gl_load(gpures__op op, void *given, gl_fns *g) {
  int status = GPURES_OK;
  egl_proc_fn proc = proc_address(op, given, &status);
  if (!proc) return status;
  EGL_LOAD(g, proc, gen_textures, "glGenTextures");
  EGL_LOAD(g, proc, delete_textures, "glDeleteTextures");
  EGL_LOAD(g, proc, bind_texture, "glBindTexture");
  EGL_LOAD(g, proc, tex_parameteri, "glTexParameteri");
  EGL_LOAD(g, proc, get_integerv, "glGetIntegerv");
  EGL_LOAD(g, proc, get_error, "glGetError");
  EGL_LOAD(g, proc, get_string, "glGetString");
  EGL_LOAD(g, proc, image_target_texture, "glEGLImageTargetTexture2DOES");
  if (g->gen_textures && g->delete_textures && g->bind_texture && g->tex_parameteri &&
      g->get_integerv && g->get_error && g->get_string && g->image_target_texture)
    return GPURES_OK;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "context",
                      "GL has no glEGLImageTargetTexture2DOES (GL_OES_EGL_image) or another "
                      "texture function");
}

static const char *egl_error_name(EGLint error) {
  switch (error) {
  case EGL_SUCCESS: return "EGL_SUCCESS";
  case EGL_NOT_INITIALIZED: return "EGL_NOT_INITIALIZED";
  case EGL_BAD_ACCESS: return "EGL_BAD_ACCESS";
  case EGL_BAD_ALLOC: return "EGL_BAD_ALLOC";
  case EGL_BAD_ATTRIBUTE: return "EGL_BAD_ATTRIBUTE";
  case EGL_BAD_DISPLAY: return "EGL_BAD_DISPLAY";
  case EGL_BAD_MATCH: return "EGL_BAD_MATCH";
  case EGL_BAD_PARAMETER: return "EGL_BAD_PARAMETER";
  case EGL_CONTEXT_LOST: return "EGL_CONTEXT_LOST";
  default: return "an EGL error";
  }
}

/*
** The display's extension string, or the reason there is none: a display
** that was never initialized (or was terminated), or a pointer that names no
** display (EGL implementations look displays up in their own list).
*/
static const char *display_extensions(gpures__op op, const egl_fns *f, void *display,
                                      int *status) {
  if (!display) {
    *status = gpures__fail(op, GPURES_E_NULL_POINTER, "display", "display is null");
    return NULL;
  }
  const char *exts = f->query_string(display, EGL_EXTENSIONS);
  if (!exts) {
    EGLint error = f->get_error();
    *status = gpures__fail(op, GPURES_E_INVALID_VALUE, "display",
                           "eglQueryString refused display %p: %s (0x%x)%s", display,
                           egl_error_name(error), (unsigned)error,
                           error == EGL_NOT_INITIALIZED ? ": call eglInitialize first" : "");
    return NULL;
  }
  if (!has_word(exts, "EGL_EXT_image_dma_buf_import")) {
    *status = gpures__fail(op, GPURES_E_UNSUPPORTED, "display",
                           "the display has no EGL_EXT_image_dma_buf_import");
    return NULL;
  }
  return exts;
}

/* ------------------------------------------------------ what it imports */

/* One (fourcc, modifier) the display imports; modifier INVALID: it lists none for the fourcc. */
typedef struct egl_row {
  uint32_t fourcc;
  uint32_t external_only;
  uint64_t modifier;
} egl_row;

typedef struct egl_rows {
  egl_row *rows;
  uint32_t count;
} egl_rows;

static int egl_oom(gpures__op op, const char *what) {
  return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for %s", what);
}

static int query_refused(gpures__op op, const egl_fns *f, const char *what) {
  EGLint error = f->get_error();
  return gpures__fail(op, GPURES_E_INVALID_VALUE, "display", "%s failed: %s (0x%x)", what,
                      egl_error_name(error), (unsigned)error);
}

/* Appends one format's rows: each modifier the display lists, or one implicit-modifier row. */
static int add_format_rows(gpures__op op, const egl_fns *f, void *display, EGLint fourcc,
                           egl_rows *out) {
  EGLint n = 0;
  if (!f->query_modifiers(display, fourcc, 0, NULL, NULL, &n) || n < 0)
    return query_refused(op, f, "eglQueryDmaBufModifiersEXT");
  uint32_t room = n ? (uint32_t)n : 1u, written = 0;
  uint64_t *modifiers = gpures__alloc(sizeof *modifiers * room);
  EGLBoolean *external = gpures__alloc(sizeof *external * room);
  egl_row *grown = gpures__realloc(out->rows, sizeof *grown * (out->count + room));
  int status = GPURES_OK;
  if (grown) out->rows = grown;
  if (!modifiers || !external || !grown) {
    status = egl_oom(op, "the display's modifiers");
  } else if (n == 0) { /* listed with no modifier: the driver's implicit layout */
    modifiers[0] = GPURES_MODIFIER_INVALID;
    external[0] = 0;
    written = 1;
  } else {
    /* Zeroed first: Mesa 25's llvmpipe never writes external_only, leaving what was there. */
    memset(external, 0, sizeof *external * room);
    if (!f->query_modifiers(display, fourcc, n, modifiers, external, &n) || n < 0)
      status = query_refused(op, f, "eglQueryDmaBufModifiersEXT");
    else
      written = (uint32_t)n < room ? (uint32_t)n : room;
  }
  for (uint32_t i = 0; status == GPURES_OK && i < written; i++)
    out->rows[out->count++] = (egl_row){(uint32_t)fourcc, external[i] ? 1u : 0u, modifiers[i]};
  gpures__free(modifiers);
  gpures__free(external);
  return status;
}

/* Every (fourcc, modifier) the display lists, in its order. Needs query_formats. */
static int query_rows(gpures__op op, const egl_fns *f, void *display, egl_rows *out) {
  out->rows = NULL;
  out->count = 0;
  EGLint n = 0;
  if (!f->query_formats(display, 0, NULL, &n) || n < 0)
    return query_refused(op, f, "eglQueryDmaBufFormatsEXT");
  EGLint *formats = gpures__alloc(sizeof *formats * (n ? (size_t)n : 1u));
  if (!formats) return egl_oom(op, "the display's formats");
  int status = GPURES_OK;
  if (n && !f->query_formats(display, n, formats, &n))
    status = query_refused(op, f, "eglQueryDmaBufFormatsEXT");
  for (EGLint i = 0; status == GPURES_OK && i < n; i++)
    status = add_format_rows(op, f, display, formats[i], out);
  gpures__free(formats);
  if (status != GPURES_OK) {
    gpures__free(out->rows);
    out->rows = NULL;
    out->count = 0;
  }
  return status;
}

/* GL_MAX_TEXTURE_SIZE when a context of `display` is current (GL can be asked), else 0. */
static uint32_t max_texture_size(const egl_fns *f, void *display, void *get_proc) {
  if (!f->current_context() || f->current_display() != display) return 0;
  gl_fns g;
  int32_t size = 0;
  if (gl_load((gpures__op){"", 0}, get_proc, &g) != GPURES_OK) return 0;
  g.get_integerv(GL_MAX_TEXTURE_SIZE, &size);
  return size > 0 ? (uint32_t)size : 0;
}

int gpures_caps_egl(void *display, gpures_format_cap *out, uint32_t capacity,
                    uint32_t *out_count) {
  gpures__op op = {"list the formats of an EGL display", 0};
  int status = gpures__caps_args(op, out, capacity, out_count);
  if (status != GPURES_OK) return status;
  egl_fns f;
  status = egl_load(op, NULL, &f);
  const char *exts = status == GPURES_OK ? display_extensions(op, &f, display, &status) : NULL;
  if (!exts) return status;
  if (!has_word(exts, "EGL_EXT_image_dma_buf_import_modifiers") || !f.query_formats ||
      !f.query_modifiers)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "display",
                        "the display has no EGL_EXT_image_dma_buf_import_modifiers: what it "
                        "imports cannot be asked");
  egl_rows rows;
  if ((status = query_rows(op, &f, display, &rows)) != GPURES_OK) return status;
  uint32_t extent = max_texture_size(&f, display, NULL);
  uint32_t count = 0;
  for (uint32_t i = 0; i < rows.count; i++) {
    const gpures_pixel_format_info *format = gpures_pixel_format_from_fourcc(rows.rows[i].fourcc);
    if (!format) continue; /* a fourcc gpures has no PixelFormat for */
    gpures_format_cap cap = {format->id, GPURES_MEMORY_DMA_BUF, rows.rows[i].modifier, extent,
                             extent, 0, rows.rows[i].external_only ? GPURES_CAP_EXTERNAL_ONLY : 0};
    gpures__caps_put(out, capacity, &count, &cap);
  }
  gpures__free(rows.rows);
  return gpures__caps_end(op, capacity, count, out_count);
}

/* ----------------------------------------------------------- the importer */

typedef struct egl_api {
  egl_fns egl;
  gl_fns gl;
  void *display;
  void *context;     /* the one its textures are names in */
  bool modifiers;    /* EGL_EXT_image_dma_buf_import_modifiers: rows holds what it imports */
  bool external;     /* GL_OES_EGL_image_external: YUV images can be bound */
  egl_rows rows;
} egl_api;

typedef struct egl_payload {
  void *image;
  void *context;
  uint32_t texture;
  uint32_t target;
} egl_payload;

/* "NV12", or "'AB24'" for a fourcc gpures has no PixelFormat for; in `buf`. */
static const char *fourcc_name(uint32_t fourcc, char buf[16]) {
  const gpures_pixel_format_info *format = gpures_pixel_format_from_fourcc(fourcc);
  if (format) return gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format->id);
  char c[4];
  for (int i = 0; i < 4; i++) {
    char ch = (char)((fourcc >> (8 * i)) & 0xff);
    c[i] = ch >= 0x20 && ch < 0x7f ? ch : '?';
  }
  snprintf(buf, 16, "'%c%c%c%c'", c[0], c[1], c[2], c[3]);
  return buf;
}

/*
** Whether the display takes the frame's fourcc and modifier (UNSUPPORTED
** naming "format" or "modifier" when not), and whether it takes that pair
** only as an external texture. Without the modifiers extension the display
** cannot be asked: only LINEAR and the implicit modifier are given to EGL.
*/
static int check_format(gpures__op op, const egl_api *api, const gpures_dma_buf_handle_desc *d,
                        bool *external_only) {
  char buf[16];
  *external_only = false;
  if (!api->modifiers) {
    if (d->modifier == GPURES_MODIFIER_LINEAR || d->modifier == GPURES_MODIFIER_INVALID)
      return GPURES_OK;
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "modifier",
                        "modifier 0x%016llx: the display has no "
                        "EGL_EXT_image_dma_buf_import_modifiers, so it takes LINEAR and implicit "
                        "layouts only",
                        (unsigned long long)d->modifier);
  }
  bool listed = false, matched = false;
  for (uint32_t i = 0; i < api->rows.count; i++) {
    const egl_row *r = &api->rows.rows[i];
    if (r->fourcc != d->fourcc) continue;
    listed = true;
    /* An implicit-modifier frame may get any of the format's layouts: the strictest binding. */
    if (d->modifier == GPURES_MODIFIER_INVALID || r->modifier == d->modifier ||
        r->modifier == GPURES_MODIFIER_INVALID) {
      matched = true;
      *external_only = *external_only || r->external_only;
    }
  }
  if (!listed)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                        "the EGL display does not import %s (eglQueryDmaBufFormatsEXT)",
                        fourcc_name(d->fourcc, buf));
  if (!matched)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "modifier",
                        "the EGL display does not import %s with modifier 0x%016llx "
                        "(eglQueryDmaBufModifiersEXT)",
                        fourcc_name(d->fourcc, buf), (unsigned long long)d->modifier);
  return GPURES_OK;
}

/* EGL takes offsets and pitches as EGLint: larger values would reach it negative. */
static int check_attrib_ranges(gpures__op op, const gpures_dma_buf_handle_desc *d) {
  for (uint32_t i = 0; i < d->num_planes; i++) {
    const gpures_dma_buf_plane *p = &d->planes[i];
    if (p->stride <= INT32_MAX && p->offset <= INT32_MAX) continue;
    char field[32];
    snprintf(field, sizeof field, "planes[%u].%s", i, p->stride > INT32_MAX ? "stride" : "offset");
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "%s is %u: EGL takes offsets and pitches below 2^31", field,
                        p->stride > INT32_MAX ? p->stride : p->offset);
  }
  if (d->width > INT32_MAX || d->height > INT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, d->width > INT32_MAX ? "width" : "height",
                        "%ux%u: EGL takes extents below 2^31", d->width, d->height);
  return GPURES_OK;
}

#define ATTRIBS_MAX (6 + 4 * 10 + 4 + 1)

/* eglCreateImageKHR's attributes: every plane's fd, offset and pitch, and the modifier. */
static void dma_buf_attribs(const egl_api *api, const gpures_dma_buf_handle_desc *d, bool yuv,
                            EGLint attribs[ATTRIBS_MAX]) {
  int n = 0;
  attribs[n++] = EGL_WIDTH;
  attribs[n++] = (EGLint)d->width;
  attribs[n++] = EGL_HEIGHT;
  attribs[n++] = (EGLint)d->height;
  attribs[n++] = EGL_LINUX_DRM_FOURCC_EXT;
  attribs[n++] = (EGLint)d->fourcc;
  /* Implicit: the driver's own layout, which only a display without the extension is asked for. */
  bool modifier = api->modifiers && d->modifier != GPURES_MODIFIER_INVALID;
  for (uint32_t i = 0; i < d->num_planes; i++) {
    attribs[n++] = plane_fd_attr[i];
    attribs[n++] = d->fds[d->planes[i].object_index];
    attribs[n++] = plane_offset_attr[i];
    attribs[n++] = (EGLint)d->planes[i].offset;
    attribs[n++] = plane_pitch_attr[i];
    attribs[n++] = (EGLint)d->planes[i].stride;
    if (modifier) {
      attribs[n++] = plane_modifier_lo_attr[i];
      attribs[n++] = (EGLint)(uint32_t)(d->modifier & 0xffffffffu);
      attribs[n++] = plane_modifier_hi_attr[i];
      attribs[n++] = (EGLint)(uint32_t)(d->modifier >> 32);
    }
  }
  if (yuv) { /* the extension's defaults, said outright: drivers differ when they are left out */
    attribs[n++] = EGL_YUV_COLOR_SPACE_HINT_EXT;
    attribs[n++] = EGL_ITU_REC601_EXT;
    attribs[n++] = EGL_SAMPLE_RANGE_HINT_EXT;
    attribs[n++] = EGL_YUV_NARROW_RANGE_EXT;
  }
  attribs[n] = EGL_NONE;
}

/* The plane whose pitch is least aligned: the one a driver most likely refused. */
static uint32_t least_aligned_plane(const gpures_dma_buf_handle_desc *d) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < d->num_planes; i++) {
    uint32_t a = d->planes[i].stride | d->planes[i].offset;
    uint32_t b = d->planes[best].stride | d->planes[best].offset;
    if ((a & -a) < (b & -b)) best = i;
  }
  return best;
}

/* eglCreateImageKHR's refusal as the field it most likely concerns. */
static int image_refused(gpures__op op, const gpures_dma_buf_handle_desc *d, EGLint error) {
  char buf[16], field[32];
  const char *format = fourcc_name(d->fourcc, buf);
  const char *name = egl_error_name(error);
  switch (error) {
  case EGL_BAD_MATCH: /* a fourcc or modifier the driver cannot pair with this layout */
    return gpures__fail(op, GPURES_E_INVALID_VALUE,
                        d->modifier == GPURES_MODIFIER_INVALID ? "fourcc" : "modifier",
                        "eglCreateImageKHR refused %s with modifier 0x%016llx: %s (0x%x)", format,
                        (unsigned long long)d->modifier, name, (unsigned)error);
  case EGL_BAD_ACCESS: /* Mesa: a pitch or offset it cannot use */
  case EGL_BAD_ATTRIBUTE:
  case EGL_BAD_PARAMETER: {
    uint32_t i = least_aligned_plane(d);
    snprintf(field, sizeof field, "planes[%u].stride", i);
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "eglCreateImageKHR refused the %s layout (plane %u: offset %u, pitch %u): "
                        "%s (0x%x)",
                        format, i, d->planes[i].offset, d->planes[i].stride, name,
                        (unsigned)error);
  }
  case EGL_BAD_ALLOC: /* also a listed format the driver cannot make (Mesa 25 llvmpipe: NV12) */
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                        "eglCreateImageKHR could not import %s %ux%u: %s (0x%x): the driver "
                        "lists it but cannot make this image, or is out of memory",
                        format, d->width, d->height, name, (unsigned)error);
  case EGL_CONTEXT_LOST:
    return gpures__fail(op, GPURES_E_DEVICE_LOST, "context", "eglCreateImageKHR: %s (0x%x)",
                        name, (unsigned)error);
  default:
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "frame",
                        "eglCreateImageKHR refused %s: %s (0x%x)", format, name, (unsigned)error);
  }
}

/* Errors left from the caller's own GL calls would be blamed on the import: read them first. */
static void drain_gl_errors(const gl_fns *g) {
  for (int i = 0; i < 16 && g->get_error() != GL_NO_ERROR; i++) {
  }
}

/* A new texture of `target` whose storage is `image`; the caller's binding is put back. */
static int texture_of_image(gpures__op op, const egl_api *api, void *image, uint32_t target,
                            uint32_t *out_texture) {
  const gl_fns *g = &api->gl;
  int32_t bound = 0;
  drain_gl_errors(g);
  g->get_integerv(target == GL_TEXTURE_2D ? GL_TEXTURE_BINDING_2D : GL_TEXTURE_BINDING_EXTERNAL_OES,
                  &bound);
  uint32_t texture = 0;
  g->gen_textures(1, &texture);
  g->bind_texture(target, texture);
  /* No mipmaps: the default minifying filter would leave a 2D texture incomplete. */
  g->tex_parameteri(target, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  g->tex_parameteri(target, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  g->tex_parameteri(target, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  g->tex_parameteri(target, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  g->image_target_texture(target, image);
  uint32_t error = g->get_error();
  g->bind_texture(target, (uint32_t)bound);
  if (error == GL_NO_ERROR && texture != 0) {
    *out_texture = texture;
    return GPURES_OK;
  }
  g->delete_textures(1, &texture);
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                      "glEGLImageTargetTexture2DOES(%s) refused the image: GL error 0x%x",
                      target == GL_TEXTURE_2D ? "GL_TEXTURE_2D" : "GL_TEXTURE_EXTERNAL_OES",
                      error);
}

static int egl_make(void *api_, gpures__op op, const gpures__frame *frame, void *payload) {
  egl_api *api = api_;
  const gpures_dma_buf_handle_desc *d = &frame->desc.dma_buf;
  const gpures_pixel_format_info *format = gpures_pixel_format_from_fourcc(d->fourcc);
  bool yuv = format && (format->flags & GPURES_PF_FLAG_YUV);
  bool external_only = false;
  int status = check_format(op, api, d, &external_only);
  if (status == GPURES_OK) status = check_attrib_ranges(op, d);
  if (status != GPURES_OK) return status;
  uint32_t target = yuv || external_only ? GL_TEXTURE_EXTERNAL_OES : GL_TEXTURE_2D;
  char buf[16];
  if (target == GL_TEXTURE_EXTERNAL_OES && !api->external)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                        "%s is bound as GL_TEXTURE_EXTERNAL_OES, and the context has no "
                        "GL_OES_EGL_image_external",
                        fourcc_name(d->fourcc, buf));
  EGLint attribs[ATTRIBS_MAX];
  dma_buf_attribs(api, d, yuv, attribs);
  /* EGL reads the fds during the call and keeps its own references: they stay the frame's. */
  void *image = api->egl.create_image(api->display, NULL, EGL_LINUX_DMA_BUF_EXT, NULL, attribs);
  if (!image) return image_refused(op, d, api->egl.get_error());
  uint32_t texture = 0;
  if ((status = texture_of_image(op, api, image, target, &texture)) != GPURES_OK) {
    api->egl.destroy_image(api->display, image);
    return status;
  }
  *(egl_payload *)payload = (egl_payload){image, api->context, texture, target};
  return GPURES_OK;
}

static void egl_free(void *api_, void *payload) {
  egl_api *api = api_;
  egl_payload *p = payload;
  /* A name means nothing outside its context (another context's 3 is another texture). */
  if (p->texture && api->egl.current_context() == p->context)
    api->gl.delete_textures(1, &p->texture);
  api->egl.destroy_image(api->display, p->image);
}

static void egl_destroy(void *api_) {
  egl_api *api = api_;
  gpures__free(api->rows.rows);
  gpures__free(api);
}

static const gpures__import_ops egl_ops = {
    "EGL", 1ull << GPURES_KIND_DMA_BUF_HANDLE, sizeof(egl_payload), egl_make, egl_free, egl_destroy,
};

_Static_assert(sizeof(egl_payload) <= GPURES__PAYLOAD_MAX, "the EGL payload outgrew the cache");

/*
** Whether the importer's context (or, at create, any context of `display`)
** is current on this thread. Each EGL query costs a getpid() in glvnd (its
** fork check), so an import, which passes `expected`, asks for the context
** only: a context is of one display.
*/
static int check_current(gpures__op op, const egl_fns *f, void *display, void *expected) {
  void *context = f->current_context();
  if (context && context == expected) return GPURES_OK;
  if (!context)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "context",
                        "no EGL context is current on this thread: make the importer's context "
                        "current (eglMakeCurrent) first");
  if (f->current_display() != display)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "context",
                        "the current EGL context is of display %p, not the importer's %p",
                        f->current_display(), display);
  if (expected)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "context",
                        "EGL context %p is current, but the importer's textures are names in "
                        "context %p: make that one current",
                        context, expected);
  return GPURES_OK;
}

/*
** The importer's device: a UUID when the display's device says one
** (EGL_EXT_device_persistent_id gives the deviceUUID Vulkan and CUDA give),
** else NONE (nothing to compare frames against); named by GL_RENDERER.
*/
static void egl_device(const egl_api *api, gpures_device_info *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  const char *renderer = api->gl.get_string(GL_RENDERER);
  const char *vendor = api->egl.query_string(api->display, EGL_VENDOR);
  snprintf(out->name, sizeof out->name, "%s", renderer ? renderer : vendor ? vendor : "EGL");
  intptr_t device = 0;
  const egl_fns *f = &api->egl;
  if (!f->query_display_attrib || !f->query_device_string || !f->query_device_binary ||
      !f->query_display_attrib(api->display, EGL_DEVICE_EXT, &device) || !device)
    return;
  const char *exts = f->query_device_string((void *)device, EGL_EXTENSIONS);
  EGLint size = 0;
  uint8_t uuid[16];
  if (has_word(exts, "EGL_EXT_device_persistent_id") &&
      f->query_device_binary((void *)device, EGL_DEVICE_UUID_EXT, 16, uuid, &size) && size == 16) {
    out->id.kind = GPURES_DEVICE_VULKAN_UUID;
    memcpy(out->id.bytes, uuid, 16);
  }
}

/* The API state: EGL and GL functions, the display's formats, the context's extensions. */
static int egl_api_new(gpures__op op, const gpures_egl_importer_desc *desc, egl_api **out) {
  egl_api *api = gpures__alloc(sizeof *api);
  if (!api) return egl_oom(op, "an EGL importer");
  memset(api, 0, sizeof *api);
  api->display = desc->display;
  int status = egl_load(op, desc->get_proc_address, &api->egl);
  const char *exts =
      status == GPURES_OK ? display_extensions(op, &api->egl, desc->display, &status) : NULL;
  if (exts) status = check_current(op, &api->egl, desc->display, NULL);
  if (exts && status == GPURES_OK) status = gl_load(op, desc->get_proc_address, &api->gl);
  if (exts && status == GPURES_OK) {
    api->context = api->egl.current_context();
    api->external = has_word(api->gl.get_string(GL_EXTENSIONS), "GL_OES_EGL_image_external");
    api->modifiers = has_word(exts, "EGL_EXT_image_dma_buf_import_modifiers") &&
                     api->egl.query_formats && api->egl.query_modifiers;
    if (api->modifiers) status = query_rows(op, &api->egl, desc->display, &api->rows);
  }
  if (status != GPURES_OK) {
    egl_destroy(api);
    return status;
  }
  *out = api;
  return GPURES_OK;
}

int gpures_egl_importer_create(const gpures_egl_importer_desc *desc,
                               gpures_importer **out_importer) {
  gpures__op op = {"create an EGL importer", 0};
  gpures_egl_importer_desc d;
  int status = gpures__importer_desc(op, desc, sizeof d, &d, out_importer);
  if (status != GPURES_OK) return status;
  if (d.flags != 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x; none are defined",
                        d.flags);
  if (!d.display) /* before EGL is opened: a refusal costs no dlopen */
    return gpures__fail(op, GPURES_E_NULL_POINTER, "display", "display is null");
  egl_api *api = NULL;
  if ((status = egl_api_new(op, &d, &api)) != GPURES_OK) return status;
  gpures_device_info device;
  egl_device(api, &device);
  return gpures__importer_new(op, &egl_ops, api, &device, d.capacity, out_importer);
}

int gpures_egl_import(gpures_importer *importer, gpures_handle frame,
                      gpures_egl_imported *out) {
  gpures__op op = {"import into EGL", 0};
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  egl_api *api = gpures__importer_api(importer, &egl_ops);
  /* Before the shared import: it frees imports whose buffers went away, which needs the context. */
  int status = api ? check_current(op, &api->egl, api->display, api->context) : GPURES_OK;
  if (status != GPURES_OK) return status;
  egl_payload p;
  gpures_egl_imported r = {sizeof r, 0, 0, 0, NULL};
  status = gpures__importer_import(importer, &egl_ops, "import into EGL", frame, &p, &r.cached);
  if (status != GPURES_OK) return status;
  r.texture = p.texture;
  r.target = p.target;
  r.image = p.image;
  return gpures__copy_out(op, out, &r, sizeof r);
}

#endif /* __linux__ */
