/*
** gpures_test_gl: a test-only library that drives OpenGL ES 3 through EGL
** surfaceless, for tests/real_gl_test.ts.
**
** Producers make real GL objects (a 64x64 RGBA8 texture, a buffer) filled with
** known patterns; the test wraps them as gpures handles through the public
** Deno API. Consumers get ONLY a gpures handle (a uint64_t) and read the bytes
** back through gpures's C API: gpures_gl_texture_handle_describe gives the
** texture's name, target and context; gpures_dma_buf_handle_describe and
** gpures_dup_fd give what eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT) needs (the
** dups are closed after the call: EGL does not take ownership). A writer
** renders into a GlTextureHandle, so a DMA-BUF imported as a texture can be
** shown to be the same memory both ways.
**
** NV12: Mesa 25.0.7's llvmpipe lists NV12 in eglQueryDmaBufFormatsEXT but
** fails eglCreateImageKHR for it with EGL_BAD_ALLOC, so the exact check
** imports each plane as its own image (R8, GR88); the one-image YUV import is
** still offered for drivers that have it.
**
** Every function is FFI-friendly: integers, pointers and byte buffers only.
** Functions returning int give 0 on success and -1 on failure, with the reason
** in gpures_test_gl_last_error().
**
** Patterns (tests/real_gl_test.ts computes the same ones independently):
**   texture pixel (x, y), seed s: R = 4x + s, G = 4y + 3s, B = x*y + 5s,
**                                 A = 255 - ((x + y + s) & 127)        (all mod 256)
**   buffer byte i, seed s:        7i + 13(i >> 8) + s                  (mod 256)
*/
#define _GNU_SOURCE
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl32.h>
#include <GLES2/gl2ext.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helper.h"

/* DRM fourccs and modifiers (drm_fourcc.h is in libdrm-dev; not needed for six numbers). */
#define FOURCC(a, b, c, d) \
  ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))
#define DRM_FORMAT_R8 FOURCC('R', '8', ' ', ' ')
#define DRM_FORMAT_GR88 FOURCC('G', 'R', '8', '8')
#define DRM_FORMAT_ABGR8888 FOURCC('A', 'B', '2', '4')
#define DRM_FORMAT_XBGR8888 FOURCC('X', 'B', '2', '4')
#define DRM_FORMAT_NV12 FOURCC('N', 'V', '1', '2')
#define DRM_FORMAT_MOD_INVALID 0x00ffffffffffffffull

static EGLDisplay g_display = EGL_NO_DISPLAY;
static EGLContext g_context = EGL_NO_CONTEXT;
static int g_has_modifiers; /* EGL_EXT_image_dma_buf_import_modifiers */
static PFNEGLCREATEIMAGEKHRPROC p_eglCreateImageKHR;
static PFNEGLDESTROYIMAGEKHRPROC p_eglDestroyImageKHR;
static PFNGLEGLIMAGETARGETTEXTURE2DOESPROC p_glEGLImageTargetTexture2DOES;
static GLuint g_external_program; /* samples a GL_TEXTURE_EXTERNAL_OES (YUV) texture */

/* The last failure's reason. */
API const char *gpures_test_gl_last_error(void) { return helper_error; }

static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && (p = strstr(p, word)) != NULL; p += n) {
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  }
  return 0;
}

/*
** Creates the process's EGL surfaceless display and a GLES 3 context and makes
** it current on the calling thread. Idempotent.
*/
API int gpures_test_gl_init(void) {
  if (g_context != EGL_NO_CONTEXT) {
    if (eglGetCurrentContext() != g_context &&
        !eglMakeCurrent(g_display, EGL_NO_SURFACE, EGL_NO_SURFACE, g_context)) {
      return fail("eglMakeCurrent failed: 0x%x", eglGetError());
    }
    return 0;
  }
  const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (!client || !has_word(client, "EGL_MESA_platform_surfaceless")) {
    return fail("EGL has no EGL_MESA_platform_surfaceless (client extensions: %s)",
                client ? client : "none");
  }
  PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display =
      (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
  if (!get_platform_display) return fail("eglGetPlatformDisplayEXT is missing");
  EGLDisplay display =
      get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, (void *)EGL_DEFAULT_DISPLAY, NULL);
  if (display == EGL_NO_DISPLAY) return fail("no surfaceless EGL display: 0x%x", eglGetError());
  EGLint major = 0, minor = 0;
  if (!eglInitialize(display, &major, &minor)) {
    return fail("eglInitialize failed: 0x%x", eglGetError());
  }
  const char *exts = eglQueryString(display, EGL_EXTENSIONS);
  if (!has_word(exts, "EGL_KHR_surfaceless_context") ||
      !has_word(exts, "EGL_KHR_no_config_context")) {
    eglTerminate(display);
    return fail("EGL %d.%d lacks surfaceless or no-config contexts", major, minor);
  }
  if (!eglBindAPI(EGL_OPENGL_ES_API)) {
    eglTerminate(display);
    return fail("eglBindAPI(GLES) failed: 0x%x", eglGetError());
  }
  static const EGLint attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 1,
                                   EGL_NONE};
  EGLContext context = eglCreateContext(display, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attribs);
  if (context == EGL_NO_CONTEXT) {
    EGLint err = eglGetError();
    eglTerminate(display);
    return fail("eglCreateContext(GLES 3.1) failed: 0x%x", err);
  }
  if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) {
    EGLint err = eglGetError();
    eglDestroyContext(display, context);
    eglTerminate(display);
    return fail("eglMakeCurrent failed: 0x%x", err);
  }
  g_display = display;
  g_context = context;
  g_has_modifiers = has_word(exts, "EGL_EXT_image_dma_buf_import_modifiers");
  p_eglCreateImageKHR = (PFNEGLCREATEIMAGEKHRPROC)eglGetProcAddress("eglCreateImageKHR");
  p_eglDestroyImageKHR = (PFNEGLDESTROYIMAGEKHRPROC)eglGetProcAddress("eglDestroyImageKHR");
  p_glEGLImageTargetTexture2DOES =
      (PFNGLEGLIMAGETARGETTEXTURE2DOESPROC)eglGetProcAddress("glEGLImageTargetTexture2DOES");
  return 0;
}

/* Destroys the context and terminates the display (the tests leave it to process exit). */
API void gpures_test_gl_shutdown(void) {
  if (g_context == EGL_NO_CONTEXT) return;
  if (g_external_program) glDeleteProgram(g_external_program);
  g_external_program = 0;
  eglMakeCurrent(g_display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  eglDestroyContext(g_display, g_context);
  eglTerminate(g_display);
  g_context = EGL_NO_CONTEXT;
  g_display = EGL_NO_DISPLAY;
}

/* The EGLContext (what a GlTextureHandle's context names). */
API void *gpures_test_gl_context(void) { return g_context; }
/* The EGLDisplay. */
API void *gpures_test_gl_display(void) { return g_display; }

/* "GL_RENDERER | GL_VERSION", for the test log. */
API const char *gpures_test_gl_renderer(void) {
  static char text[256];
  if (g_context == EGL_NO_CONTEXT) return "";
  snprintf(text, sizeof text, "%s | %s", (const char *)glGetString(GL_RENDERER),
           (const char *)glGetString(GL_VERSION));
  return text;
}

/* 1 when the display or the context has extension `name` (EGL_... or GL_...). */
API int gpures_test_gl_has_extension(const char *name) {
  if (g_context == EGL_NO_CONTEXT || !name) return 0;
  if (strncmp(name, "EGL_", 4) == 0) {
    return has_word(eglQueryString(g_display, EGL_EXTENSIONS), name) ||
           has_word(eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS), name);
  }
  GLint n = 0;
  glGetIntegerv(GL_NUM_EXTENSIONS, &n);
  for (GLint i = 0; i < n; i++) {
    const char *ext = (const char *)glGetStringi(GL_EXTENSIONS, (GLuint)i);
    if (ext && strcmp(ext, name) == 0) return 1;
  }
  return 0;
}

/*
** The kind id of a handle as this library's gpures sees it, or 0 when it names
** no live handle: the test uses it to check that the helper and the Deno
** module share one loaded libgpures (one handle table).
*/
API uint32_t gpures_test_gl_handle_kind(uint64_t handle) {
  uint32_t kind = 0;
  return gpures_kind(handle, &kind) == GPURES_OK ? kind : 0;
}

/* ------------------------------------------------------------- producers */

static uint8_t texel(uint32_t x, uint32_t y, uint32_t seed, int channel) {
  switch (channel) {
  case 0: return (uint8_t)(4 * x + seed);
  case 1: return (uint8_t)(4 * y + 3 * seed);
  case 2: return (uint8_t)(x * y + 5 * seed);
  default: return (uint8_t)(255 - ((x + y + seed) & 127));
  }
}

/* A new width x height RGBA8 texture (immutable storage) filled with the pattern; 0 on failure. */
API uint32_t gpures_test_gl_make_texture(uint32_t width, uint32_t height, uint32_t seed) {
  if (g_context == EGL_NO_CONTEXT) return fail("GL is not initialized"), 0u;
  uint8_t *pixels = malloc((size_t)width * height * 4);
  if (!pixels) return fail("out of memory"), 0u;
  for (uint32_t y = 0; y < height; y++) {
    for (uint32_t x = 0; x < width; x++) {
      for (int c = 0; c < 4; c++) pixels[((size_t)y * width + x) * 4 + c] = texel(x, y, seed, c);
    }
  }
  GLuint name = 0;
  glGenTextures(1, &name);
  glBindTexture(GL_TEXTURE_2D, name);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, (GLsizei)width, (GLsizei)height);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, (GLsizei)width, (GLsizei)height, GL_RGBA,
                  GL_UNSIGNED_BYTE, pixels);
  glBindTexture(GL_TEXTURE_2D, 0);
  free(pixels);
  GLenum err = glGetError();
  if (err != GL_NO_ERROR) {
    glDeleteTextures(1, &name);
    return fail("making a texture failed: GL error 0x%x", err), 0u;
  }
  return name;
}

/* A new buffer of `size` bytes (glBufferData) filled with the pattern; 0 on failure. */
API uint32_t gpures_test_gl_make_buffer(uint64_t size, uint32_t seed) {
  if (g_context == EGL_NO_CONTEXT) return fail("GL is not initialized"), 0u;
  uint8_t *bytes = malloc(size ? size : 1);
  if (!bytes) return fail("out of memory"), 0u;
  for (uint64_t i = 0; i < size; i++) bytes[i] = (uint8_t)(7 * i + 13 * (i >> 8) + seed);
  GLuint name = 0;
  glGenBuffers(1, &name);
  glBindBuffer(GL_ARRAY_BUFFER, name);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)size, bytes, GL_STATIC_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  free(bytes);
  GLenum err = glGetError();
  if (err != GL_NO_ERROR) {
    glDeleteBuffers(1, &name);
    return fail("making a buffer failed: GL error 0x%x", err), 0u;
  }
  return name;
}

/* glIsTexture / glIsBuffer: 1 while the name is a live object. */
API int gpures_test_gl_texture_exists(uint32_t name) { return glIsTexture(name) == GL_TRUE; }
API int gpures_test_gl_buffer_exists(uint32_t name) { return glIsBuffer(name) == GL_TRUE; }
API void gpures_test_gl_delete_texture(uint32_t name) { glDeleteTextures(1, &name); }
API void gpures_test_gl_delete_buffer(uint32_t name) { glDeleteBuffers(1, &name); }

/* ------------------------------------------------------------- consumers */

/* Makes the handle's context current (null: the current one must exist). */
static int use_context(void *context) {
  EGLContext want = context ? (EGLContext)context : eglGetCurrentContext();
  if (want == EGL_NO_CONTEXT) return fail("the handle names no context and none is current");
  if (eglGetCurrentContext() == want) return 0;
  if (g_display == EGL_NO_DISPLAY) return fail("the handle's context is not this library's");
  if (!eglMakeCurrent(g_display, EGL_NO_SURFACE, EGL_NO_SURFACE, want)) {
    return fail("cannot make the handle's context %p current: 0x%x", context, eglGetError());
  }
  return 0;
}

/* A new FBO with a texture attached, and the framebuffer binding it replaced. */
typedef struct texture_fbo {
  GLint old_fbo;
  GLuint fbo;
} texture_fbo;

/*
** Binds a new FBO with 2D texture `texture` (level 0) as its color
** attachment: 0, or -1 and why when that is not complete. Either way
** end_fbo() must follow, so the caller's binding comes back.
*/
static int begin_fbo(texture_fbo *t, GLuint texture) {
  t->old_fbo = 0;
  glGetIntegerv(GL_FRAMEBUFFER_BINDING, &t->old_fbo);
  t->fbo = 0;
  glGenFramebuffers(1, &t->fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, t->fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
  GLenum complete = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (complete != GL_FRAMEBUFFER_COMPLETE)
    return fail("texture %u is not a complete framebuffer attachment: 0x%x", texture, complete);
  return 0;
}

/* Puts back the framebuffer binding begin_fbo() replaced and deletes its FBO. */
static void end_fbo(texture_fbo *t) {
  glBindFramebuffer(GL_FRAMEBUFFER, (GLuint)t->old_fbo);
  glDeleteFramebuffers(1, &t->fbo);
}

/* Reads a 2D color-renderable texture level 0 as RGBA8 rows (row 0 first) into out. */
static int read_rgba(GLuint texture, uint32_t width, uint32_t height, uint8_t *out) {
  texture_fbo t;
  int rc = begin_fbo(&t, texture);
  if (rc == 0) {
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, (GLsizei)width, (GLsizei)height, GL_RGBA, GL_UNSIGNED_BYTE, out);
    GLenum err = glGetError();
    if (err != GL_NO_ERROR) rc = fail("glReadPixels failed: GL error 0x%x", err);
  }
  end_fbo(&t);
  return rc;
}

/*
** Consumer of a GlTextureHandle, given only the handle: describes it, makes its
** context current, checks the name is a live 2D texture of the described
** format, and reads level 0 into out as RGBA8 rows. out_extent[0..1] receives
** width and height. The consumer holds its own reference while it reads.
*/
API int gpures_test_gl_read_texture(uint64_t handle, uint8_t *out, uint64_t capacity,
                                    uint32_t *out_extent) {
  gpures_gl_texture_handle_desc desc;
  HELPER_DESCRIBE(gpures_gl_texture_handle_describe, handle, desc);
  if ((status = gpures_clone(handle)) != GPURES_OK) return fail_gpures("gpures_clone", status);
  int rc = use_context(desc.context);
  if (rc == 0 && desc.target != GL_TEXTURE_2D) {
    rc = fail("target 0x%x: this consumer reads GL_TEXTURE_2D", desc.target);
  }
  if (rc == 0 && glIsTexture(desc.name) != GL_TRUE) {
    rc = fail("texture %u is not a texture in context %p", desc.name, desc.context);
  }
  GLint width = 0, height = 0, format = 0;
  if (rc == 0) {
    glBindTexture(GL_TEXTURE_2D, desc.name);
    glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_WIDTH, &width);
    glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_HEIGHT, &height);
    glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_INTERNAL_FORMAT, &format);
    glBindTexture(GL_TEXTURE_2D, 0);
    if (desc.internal_format != 0 && (GLuint)format != desc.internal_format) {
      rc = fail("texture %u has internal format 0x%x, the handle says 0x%x", desc.name,
                (unsigned)format, desc.internal_format);
    } else if (width <= 0 || height <= 0) {
      rc = fail("texture %u has no level 0", desc.name);
    } else if ((uint64_t)width * (uint64_t)height * 4 > capacity) {
      rc = fail("%dx%d RGBA8 needs %llu bytes, out has %llu", width, height,
                (unsigned long long)width * (unsigned long long)height * 4,
                (unsigned long long)capacity);
    }
  }
  if (rc == 0) rc = read_rgba(desc.name, (uint32_t)width, (uint32_t)height, out);
  if (rc == 0 && out_extent) {
    out_extent[0] = (uint32_t)width;
    out_extent[1] = (uint32_t)height;
  }
  gpures_release(handle);
  return rc;
}

/*
** Consumer of a GlBufferHandle, given only the handle: describes it, makes its
** context current, checks the buffer holds at least the described size, and
** copies the described bytes into out through glMapBufferRange(GL_MAP_READ_BIT).
*/
API int gpures_test_gl_read_buffer(uint64_t handle, uint8_t *out, uint64_t capacity) {
  gpures_gl_buffer_handle_desc desc;
  HELPER_DESCRIBE(gpures_gl_buffer_handle_describe, handle, desc);
  if (desc.size > capacity) {
    return fail("the buffer has %llu bytes, out has %llu", (unsigned long long)desc.size,
                (unsigned long long)capacity);
  }
  if ((status = gpures_clone(handle)) != GPURES_OK) return fail_gpures("gpures_clone", status);
  int rc = use_context(desc.context);
  if (rc == 0 && glIsBuffer(desc.name) != GL_TRUE) {
    rc = fail("buffer %u is not a buffer in context %p", desc.name, desc.context);
  }
  if (rc == 0) {
    /* COPY_READ_BUFFER: binding there disturbs no other state, whatever the handle's target. */
    glBindBuffer(GL_COPY_READ_BUFFER, desc.name);
    GLint64 size = 0;
    glGetBufferParameteri64v(GL_COPY_READ_BUFFER, GL_BUFFER_SIZE, &size);
    if ((uint64_t)size < desc.size) {
      rc = fail("buffer %u has %lld bytes, the handle says %llu", desc.name, (long long)size,
                (unsigned long long)desc.size);
    } else {
      const void *mapped =
          glMapBufferRange(GL_COPY_READ_BUFFER, 0, (GLsizeiptr)desc.size, GL_MAP_READ_BIT);
      if (!mapped) {
        rc = fail("glMapBufferRange failed: GL error 0x%x", glGetError());
      } else {
        memcpy(out, mapped, desc.size);
        glUnmapBuffer(GL_COPY_READ_BUFFER);
      }
    }
    glBindBuffer(GL_COPY_READ_BUFFER, 0);
  }
  gpures_release(handle);
  return rc;
}

/* ------------------------------------------------------------- DMA-BUF */

/* What the import needs from a DmaBufHandle, and the dups made for it. */
typedef struct import_ctx {
  uint64_t handle;
  gpures_dma_buf_handle_desc desc;
  int fds[4]; /* dup of each object, -1 until needed */
} import_ctx;

static int import_begin(import_ctx *ic, uint64_t handle) {
  memset(ic, 0, sizeof *ic);
  ic->handle = handle;
  for (int i = 0; i < 4; i++) ic->fds[i] = -1;
  ic->desc.struct_size = sizeof ic->desc;
  if (g_context == EGL_NO_CONTEXT) return fail("GL is not initialized");
  if (!p_eglCreateImageKHR || !p_eglDestroyImageKHR || !p_glEGLImageTargetTexture2DOES) {
    return fail("EGL_KHR_image_base or GL_OES_EGL_image is missing");
  }
  if (!gpures_test_gl_has_extension("EGL_EXT_image_dma_buf_import")) {
    return fail("EGL has no EGL_EXT_image_dma_buf_import");
  }
  if (use_context(g_context) != 0) return -1;
  int status = gpures_dma_buf_handle_describe(handle, &ic->desc);
  if (status != GPURES_OK) return fail_gpures("gpures_dma_buf_handle_describe", status);
  return 0;
}

/* Closes the dups: EGL does not take ownership of the fds it imports. */
static void import_end(import_ctx *ic) {
  for (int i = 0; i < 4; i++) {
    if (ic->fds[i] >= 0) close(ic->fds[i]);
    ic->fds[i] = -1;
  }
}

/*
** An EGLImage of `count` planes of the handle starting at `first`, imported as
** `fourcc` of width x height. Each object's fd is duplicated with gpures_dup_fd
** once and closed by import_end after eglCreateImageKHR.
*/
static EGLImageKHR import_planes(import_ctx *ic, uint32_t fourcc, uint32_t width,
                                 uint32_t height, uint32_t first, uint32_t count) {
  static const EGLint fd_attr[] = {EGL_DMA_BUF_PLANE0_FD_EXT, EGL_DMA_BUF_PLANE1_FD_EXT,
                                   EGL_DMA_BUF_PLANE2_FD_EXT, EGL_DMA_BUF_PLANE3_FD_EXT};
  static const EGLint offset_attr[] = {
      EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGL_DMA_BUF_PLANE1_OFFSET_EXT,
      EGL_DMA_BUF_PLANE2_OFFSET_EXT, EGL_DMA_BUF_PLANE3_OFFSET_EXT};
  static const EGLint pitch_attr[] = {EGL_DMA_BUF_PLANE0_PITCH_EXT, EGL_DMA_BUF_PLANE1_PITCH_EXT,
                                      EGL_DMA_BUF_PLANE2_PITCH_EXT, EGL_DMA_BUF_PLANE3_PITCH_EXT};
  static const EGLint mod_lo_attr[] = {
      EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT,
      EGL_DMA_BUF_PLANE2_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE3_MODIFIER_LO_EXT};
  static const EGLint mod_hi_attr[] = {
      EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT,
      EGL_DMA_BUF_PLANE2_MODIFIER_HI_EXT, EGL_DMA_BUF_PLANE3_MODIFIER_HI_EXT};
  EGLint attribs[64];
  int n = 0;
  attribs[n++] = EGL_WIDTH;
  attribs[n++] = (EGLint)width;
  attribs[n++] = EGL_HEIGHT;
  attribs[n++] = (EGLint)height;
  attribs[n++] = EGL_LINUX_DRM_FOURCC_EXT;
  attribs[n++] = (EGLint)fourcc;
  int with_modifier = ic->desc.modifier != DRM_FORMAT_MOD_INVALID && g_has_modifiers;
  for (uint32_t i = 0; i < count; i++) {
    const gpures_dma_buf_plane *plane = &ic->desc.planes[first + i];
    uint32_t object = plane->object_index;
    if (object >= 4) {
      fail("plane %u names object %u", first + i, object);
      return EGL_NO_IMAGE_KHR;
    }
    if (ic->fds[object] < 0) {
      int status = gpures_dup_fd(ic->handle, object, &ic->fds[object]);
      if (status != GPURES_OK) {
        fail_gpures("gpures_dup_fd", status);
        return EGL_NO_IMAGE_KHR;
      }
    }
    attribs[n++] = fd_attr[i];
    attribs[n++] = ic->fds[object];
    attribs[n++] = offset_attr[i];
    attribs[n++] = (EGLint)plane->offset;
    attribs[n++] = pitch_attr[i];
    attribs[n++] = (EGLint)plane->stride;
    if (with_modifier) {
      attribs[n++] = mod_lo_attr[i];
      attribs[n++] = (EGLint)(uint32_t)(ic->desc.modifier & 0xffffffffu);
      attribs[n++] = mod_hi_attr[i];
      attribs[n++] = (EGLint)(uint32_t)(ic->desc.modifier >> 32);
    }
  }
  if (fourcc == DRM_FORMAT_NV12) {
    attribs[n++] = EGL_YUV_COLOR_SPACE_HINT_EXT;
    attribs[n++] = EGL_ITU_REC601_EXT;
    attribs[n++] = EGL_SAMPLE_RANGE_HINT_EXT;
    attribs[n++] = EGL_YUV_NARROW_RANGE_EXT;
  }
  attribs[n++] = EGL_NONE;
  EGLImageKHR image =
      p_eglCreateImageKHR(g_display, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL, attribs);
  if (image == EGL_NO_IMAGE_KHR) {
    fail("eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT, fourcc 0x%08x, %ux%u, %u plane(s)%s) "
         "failed: 0x%x",
         fourcc, width, height, count, with_modifier ? ", with modifier" : "", eglGetError());
  }
  return image;
}

/* A texture of `target` bound to the image; 0 on failure. */
static GLuint texture_of(EGLImageKHR image, GLenum target) {
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(target, texture);
  glTexParameteri(target, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(target, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(target, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(target, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  p_glEGLImageTargetTexture2DOES(target, (GLeglImageOES)image);
  glBindTexture(target, 0);
  GLenum err = glGetError();
  if (err != GL_NO_ERROR) {
    glDeleteTextures(1, &texture);
    fail("glEGLImageTargetTexture2DOES(0x%x) failed: GL error 0x%x", target, err);
    return 0;
  }
  return texture;
}

static int is_rgb32(uint32_t fourcc) {
  return fourcc == DRM_FORMAT_ABGR8888 || fourcc == DRM_FORMAT_XBGR8888;
}

static GLuint compile(GLenum type, const char *source) {
  GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, NULL);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[512] = "";
    glGetShaderInfoLog(shader, sizeof log, NULL, log);
    fail("shader compile failed: %s", log);
    glDeleteShader(shader);
    return 0;
  }
  return shader;
}

/* A program that copies a samplerExternalOES texture to the target, pixel for pixel. */
static GLuint external_program(void) {
  if (g_external_program) return g_external_program;
  if (!gpures_test_gl_has_extension("GL_OES_EGL_image_external_essl3")) {
    fail("GL has no GL_OES_EGL_image_external_essl3");
    return 0;
  }
  /* One triangle that covers the viewport: (-1,-1), (3,-1), (-1,3). */
  static const char *vs =
      "#version 300 es\n"
      "void main() {\n"
      "  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));\n"
      "  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
      "}\n";
  static const char *fs = "#version 300 es\n"
                          "#extension GL_OES_EGL_image_external_essl3 : require\n"
                          "precision highp float;\n"
                          "uniform samplerExternalOES image;\n"
                          "uniform vec2 extent;\n"
                          "out vec4 color;\n"
                          "void main() { color = texture(image, gl_FragCoord.xy / extent); }\n";
  GLuint v = compile(GL_VERTEX_SHADER, vs);
  if (!v) return 0;
  GLuint f = compile(GL_FRAGMENT_SHADER, fs);
  if (!f) {
    glDeleteShader(v);
    return 0;
  }
  GLuint program = glCreateProgram();
  glAttachShader(program, v);
  glAttachShader(program, f);
  glLinkProgram(program);
  glDeleteShader(v);
  glDeleteShader(f);
  GLint ok = 0;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[512] = "";
    glGetProgramInfoLog(program, sizeof log, NULL, log);
    glDeleteProgram(program);
    fail("program link failed: %s", log);
    return 0;
  }
  g_external_program = program;
  return program;
}

/* Draws an external (YUV) texture into a new RGBA8 texture of width x height and reads it. */
static int read_external(GLuint external, uint32_t width, uint32_t height, uint8_t *out) {
  GLuint program = external_program();
  if (!program) return -1;
  GLuint target = 0, fbo = 0, vao = 0;
  glGenTextures(1, &target);
  glBindTexture(GL_TEXTURE_2D, target);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, (GLsizei)width, (GLsizei)height);
  glBindTexture(GL_TEXTURE_2D, 0);
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target, 0);
  glViewport(0, 0, (GLsizei)width, (GLsizei)height);
  glUseProgram(program);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_EXTERNAL_OES, external);
  glUniform1i(glGetUniformLocation(program, "image"), 0);
  glUniform2f(glGetUniformLocation(program, "extent"), (GLfloat)width, (GLfloat)height);
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  glBindVertexArray(0);
  glDeleteVertexArrays(1, &vao);
  glBindTexture(GL_TEXTURE_EXTERNAL_OES, 0);
  glUseProgram(0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &fbo);
  GLenum err = glGetError();
  int rc = err == GL_NO_ERROR ? read_rgba(target, width, height, out)
                              : fail("drawing the external texture failed: GL error 0x%x", err);
  glDeleteTextures(1, &target);
  return rc;
}

/*
** Consumer of a DmaBufHandle, given only the handle: imports the whole layout
** (every plane, the handle's fourcc and modifier) as one EGLImage and reads it
** as width x height RGBA8 rows into out.
**   - AB24/XB24: bound to GL_TEXTURE_2D and read through an FBO, so out holds
**     the memory's bytes exactly.
**   - NV12: bound to GL_TEXTURE_EXTERNAL_OES (the only binding a YUV image has)
**     and drawn into an RGBA8 target, so out holds the driver's BT.601
**     narrow-range conversion of the planes, not their bytes.
*/
API int gpures_test_gl_dma_buf_read_rgba(uint64_t handle, uint8_t *out, uint64_t capacity) {
  import_ctx ic;
  if (import_begin(&ic, handle) != 0) return -1;
  const gpures_dma_buf_handle_desc *d = &ic.desc;
  if ((uint64_t)d->width * d->height * 4 > capacity) {
    return fail("%ux%u RGBA8 needs %llu bytes, out has %llu", d->width, d->height,
                (unsigned long long)d->width * d->height * 4, (unsigned long long)capacity);
  }
  int yuv = d->fourcc == DRM_FORMAT_NV12;
  if (!yuv && !is_rgb32(d->fourcc)) {
    return fail("fourcc 0x%08x: this consumer reads AB24, XB24 and NV12", d->fourcc);
  }
  EGLImageKHR image = import_planes(&ic, d->fourcc, d->width, d->height, 0, d->num_planes);
  import_end(&ic);
  if (image == EGL_NO_IMAGE_KHR) return -1;
  GLenum target = yuv ? GL_TEXTURE_EXTERNAL_OES : GL_TEXTURE_2D;
  GLuint texture = texture_of(image, target);
  int rc = -1;
  if (texture) {
    rc = yuv ? read_external(texture, d->width, d->height, out)
             : read_rgba(texture, d->width, d->height, out);
    glDeleteTextures(1, &texture);
  }
  p_eglDestroyImageKHR(g_display, image);
  return rc;
}

/*
** Consumer of a two-plane NV12 DmaBufHandle that reads the planes' bytes
** exactly: each plane is imported as its own EGLImage (plane 0 as R8 of
** width x height, plane 1 as GR88 of ceil(width/2) x ceil(height/2), each with
** that plane's object, offset and pitch), bound to GL_TEXTURE_2D and read
** through an FBO. out receives plane 0 then plane 1, rows packed (width bytes,
** then 2 * ceil(width/2) bytes per row); *out_length the bytes written.
*/
API int gpures_test_gl_dma_buf_read_planes(uint64_t handle, uint8_t *out, uint64_t capacity,
                                           uint64_t *out_length) {
  import_ctx ic;
  if (import_begin(&ic, handle) != 0) return -1;
  const gpures_dma_buf_handle_desc *d = &ic.desc;
  if (d->fourcc != DRM_FORMAT_NV12 || d->num_planes != 2) {
    return fail("fourcc 0x%08x with %u planes: this consumer reads two-plane NV12", d->fourcc,
                d->num_planes);
  }
  uint32_t widths[2] = {d->width, (d->width + 1) / 2};
  uint32_t heights[2] = {d->height, (d->height + 1) / 2};
  uint32_t fourccs[2] = {DRM_FORMAT_R8, DRM_FORMAT_GR88};
  uint32_t channels[2] = {1, 2};
  uint64_t need = (uint64_t)widths[0] * heights[0] + (uint64_t)widths[1] * heights[1] * 2;
  if (need > capacity) {
    return fail("the planes need %llu bytes, out has %llu", (unsigned long long)need,
                (unsigned long long)capacity);
  }
  uint8_t *rgba = malloc((size_t)widths[0] * heights[0] * 4);
  if (!rgba) return fail("out of memory");
  EGLImageKHR images[2] = {EGL_NO_IMAGE_KHR, EGL_NO_IMAGE_KHR};
  int rc = 0;
  for (int p = 0; p < 2 && rc == 0; p++) {
    images[p] = import_planes(&ic, fourccs[p], widths[p], heights[p], (uint32_t)p, 1);
    if (images[p] == EGL_NO_IMAGE_KHR) rc = -1;
  }
  import_end(&ic);
  uint64_t at = 0;
  for (int p = 0; p < 2 && rc == 0; p++) {
    GLuint texture = texture_of(images[p], GL_TEXTURE_2D);
    if (!texture) {
      rc = -1;
      break;
    }
    rc = read_rgba(texture, widths[p], heights[p], rgba);
    glDeleteTextures(1, &texture);
    for (uint64_t i = 0; rc == 0 && i < (uint64_t)widths[p] * heights[p]; i++) {
      for (uint32_t c = 0; c < channels[p]; c++) out[at++] = rgba[i * 4 + c];
    }
  }
  for (int p = 0; p < 2; p++) {
    if (images[p] != EGL_NO_IMAGE_KHR) p_eglDestroyImageKHR(g_display, images[p]);
  }
  free(rgba);
  if (rc == 0 && out_length) *out_length = at;
  return rc;
}

/*
** Imports an AB24 or XB24 DmaBufHandle, given only the handle, as a GL_TEXTURE_2D
** of the current context and returns its name (0 on failure). The texture keeps
** the imported memory (the EGLImage is destroyed once bound), so reads and
** writes through it reach the fd's memory with no copy. Delete it with
** gpures_test_gl_delete_texture.
*/
API uint32_t gpures_test_gl_dma_buf_import_texture(uint64_t handle) {
  import_ctx ic;
  if (import_begin(&ic, handle) != 0) return 0;
  const gpures_dma_buf_handle_desc *d = &ic.desc;
  if (!is_rgb32(d->fourcc)) {
    fail("fourcc 0x%08x: this importer takes AB24 and XB24", d->fourcc);
    return 0;
  }
  EGLImageKHR image = import_planes(&ic, d->fourcc, d->width, d->height, 0, d->num_planes);
  import_end(&ic);
  if (image == EGL_NO_IMAGE_KHR) return 0;
  GLuint texture = texture_of(image, GL_TEXTURE_2D);
  p_eglDestroyImageKHR(g_display, image);
  return texture;
}

static void clear_rgba(uint32_t rgba) {
  glClearColor((float)(rgba & 0xff) / 255.0f, (float)((rgba >> 8) & 0xff) / 255.0f,
               (float)((rgba >> 16) & 0xff) / 255.0f, (float)(rgba >> 24) / 255.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

/*
** Renders into 2D texture `name` of the current context: clears it to
** `background`, then the rectangle x, y, w, h to `foreground` (colors as bytes
** R | G << 8 | B << 16 | A << 24), and waits with glFinish.
*/
static int fill_texture_name(uint32_t name, uint32_t background, uint32_t foreground, uint32_t x,
                             uint32_t y, uint32_t w, uint32_t h) {
  if (glIsTexture(name) != GL_TRUE) {
    return fail("texture %u is not a texture in context %p", name, eglGetCurrentContext());
  }
  GLint width = 0, height = 0;
  glBindTexture(GL_TEXTURE_2D, name);
  glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_WIDTH, &width);
  glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_HEIGHT, &height);
  glBindTexture(GL_TEXTURE_2D, 0);
  texture_fbo t;
  int rc = begin_fbo(&t, name);
  if (rc == 0) {
    glViewport(0, 0, width, height);
    clear_rgba(background);
    glEnable(GL_SCISSOR_TEST);
    glScissor((GLint)x, (GLint)y, (GLsizei)w, (GLsizei)h);
    clear_rgba(foreground);
    glDisable(GL_SCISSOR_TEST);
    glFinish();
    GLenum err = glGetError();
    rc = err == GL_NO_ERROR ? 0 : fail("rendering into texture %u failed: GL error 0x%x", name,
                                       err);
  }
  end_fbo(&t);
  return rc;
}

/*
** A GL writer given only a GlTextureHandle (a 2D color-renderable texture):
** renders into it (clears it to `background`, then clears the rectangle
** x, y, w, h to `foreground`; colors as bytes R | G << 8 | B << 16 | A << 24)
** and waits with glFinish.
*/
API int gpures_test_gl_fill_texture(uint64_t handle, uint32_t background, uint32_t foreground,
                                    uint32_t x, uint32_t y, uint32_t w, uint32_t h) {
  gpures_gl_texture_handle_desc desc;
  HELPER_DESCRIBE(gpures_gl_texture_handle_describe, handle, desc);
  if (use_context(desc.context) != 0) return -1;
  if (desc.target != GL_TEXTURE_2D) {
    return fail("target 0x%x: this writer renders into GL_TEXTURE_2D", desc.target);
  }
  return fill_texture_name(desc.name, background, foreground, x, y, w, h);
}

/* ------------------------------------------------------- textures by name */
/*
** For tests/interop_egl_test.ts, whose textures come from gpures's EGL
** importer (a GL name of the current context, not a handle): read one back,
** sample one through a shader, render into one. The context must be current
** (gpures_test_gl_init()).
*/

/*
** Checks a read of texture `name` by name: a context is current, `name` is a
** texture of it, and `capacity` holds width x height RGBA8 texels. 0, or -1 and why.
*/
static int check_name_read(uint32_t name, uint32_t width, uint32_t height, uint64_t capacity) {
  if (eglGetCurrentContext() == EGL_NO_CONTEXT) return fail("no EGL context is current");
  if ((uint64_t)width * height * 4 > capacity) return fail("out is too small");
  if (glIsTexture(name) != GL_TRUE) return fail("texture %u is not a texture here", name);
  return 0;
}

/* Reads 2D texture `name` (level 0, width x height) as RGBA8 rows, row 0 first, through an FBO. */
API int gpures_test_gl_read_texture_name(uint32_t name, uint32_t width, uint32_t height,
                                         uint8_t *out, uint64_t capacity) {
  if (check_name_read(name, width, height, capacity) != 0) return -1;
  return read_rgba(name, width, height, out);
}

/*
** Draws GL_TEXTURE_EXTERNAL_OES texture `name` (a YUV image) into an RGBA8
** target of width x height with a samplerExternalOES shader, pixel centres
** sampled once each, and reads the target: the driver's YUV to RGB conversion.
*/
API int gpures_test_gl_sample_external_name(uint32_t name, uint32_t width, uint32_t height,
                                            uint8_t *out, uint64_t capacity) {
  if (check_name_read(name, width, height, capacity) != 0) return -1;
  return read_external(name, width, height, out);
}

/* fill_texture_name for a texture of the current context: 0, or -1 and why. */
API int gpures_test_gl_fill_texture_name(uint32_t name, uint32_t background, uint32_t foreground,
                                         uint32_t x, uint32_t y, uint32_t w, uint32_t h) {
  if (eglGetCurrentContext() == EGL_NO_CONTEXT) return fail("no EGL context is current");
  return fill_texture_name(name, background, foreground, x, y, w, h);
}

/* eglGetProcAddress of the library this helper links (what an application would pass gpures). */
API void *gpures_test_gl_get_proc_address(void) { return (void *)eglGetProcAddress; }

/* glGetError: what a test checks after an import, so gpures leaves no GL error behind. */
API uint32_t gpures_test_gl_error(void) { return glGetError(); }

/* The texture bound to GL_TEXTURE_2D: an import must put the caller's binding back. */
API uint32_t gpures_test_gl_bound_texture_2d(void) {
  GLint bound = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
  return (uint32_t)bound;
}

/* Binds `name` to GL_TEXTURE_2D (0: unbinds). */
API void gpures_test_gl_bind_texture_2d(uint32_t name) { glBindTexture(GL_TEXTURE_2D, name); }

/* ------------------------------------------------------------- sync points */
/*
** For tests/sync_real_test.ts: an RGBA8 texture behind a framebuffer, cleared
** to a colour; a clear to another colour followed by glFenceSync, whose GLsync
** the test wraps as a GlSync; glReadPixels of the framebuffer; and dropping
** the context current on this thread (eglMakeCurrent(NO_CONTEXT)) to show a
** wait where no context is current. gpures_test_gl_init() makes it current again.
*/
static GLuint g_sync_fbo, g_sync_texture;
static uint32_t g_sync_width, g_sync_height;

static void clear_to(uint32_t rgba) {
  glBindFramebuffer(GL_FRAMEBUFFER, g_sync_fbo);
  glViewport(0, 0, (GLsizei)g_sync_width, (GLsizei)g_sync_height);
  glClearColor((float)(rgba & 0xff) / 255.0f, (float)((rgba >> 8) & 0xff) / 255.0f,
               (float)((rgba >> 16) & 0xff) / 255.0f, (float)((rgba >> 24) & 0xff) / 255.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

/* A width x height texture and framebuffer, cleared to `rgba` (bytes R,G,B,A from the low end) and finished. */
API int gpures_test_gl_sync_begin(uint32_t width, uint32_t height, uint32_t rgba) {
  if (g_sync_fbo) return fail("a sync framebuffer exists already");
  glGenTextures(1, &g_sync_texture);
  glBindTexture(GL_TEXTURE_2D, g_sync_texture);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, (GLsizei)width, (GLsizei)height);
  glGenFramebuffers(1, &g_sync_fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, g_sync_fbo);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, g_sync_texture, 0);
  GLenum complete = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (complete != GL_FRAMEBUFFER_COMPLETE) return fail("framebuffer incomplete: 0x%x", complete);
  g_sync_width = width;
  g_sync_height = height;
  clear_to(rgba);
  glFinish();
  GLenum err = glGetError();
  return err == GL_NO_ERROR ? 0 : fail("GL error 0x%x setting up the framebuffer", err);
}

/* Clears to `rgba`, then glFenceSync; the GLsync (not flushed: the waiter flushes), or NULL. */
API void *gpures_test_gl_sync_clear_fence(uint32_t rgba) {
  if (!g_sync_fbo) return fail("no sync framebuffer"), NULL;
  clear_to(rgba);
  GLsync sync = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (!sync) fail("glFenceSync failed: 0x%x", glGetError());
  return sync;
}

/* GL_SYNC_STATUS of a sync: 1 signalled, 0 not, -1 on error. */
API int gpures_test_gl_sync_status(void *sync) {
  GLint status = 0;
  glGetSynciv((GLsync)sync, GL_SYNC_STATUS, 1, NULL, &status);
  if (glGetError() != GL_NO_ERROR) return -1;
  return status == GL_SIGNALED;
}

API void gpures_test_gl_sync_delete(void *sync) { glDeleteSync((GLsync)sync); }

/* glReadPixels of the whole framebuffer (RGBA8, rows bottom-up) into out. */
API int gpures_test_gl_sync_read(uint8_t *out, uint64_t capacity) {
  if (!g_sync_fbo) return fail("no sync framebuffer");
  if (capacity < (uint64_t)g_sync_width * g_sync_height * 4) return fail("out is too small");
  glBindFramebuffer(GL_FRAMEBUFFER, g_sync_fbo);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, (GLsizei)g_sync_width, (GLsizei)g_sync_height, GL_RGBA, GL_UNSIGNED_BYTE, out);
  GLenum err = glGetError();
  return err == GL_NO_ERROR ? 0 : fail("glReadPixels failed: 0x%x", err);
}

/* Deletes the framebuffer and texture. */
API void gpures_test_gl_sync_end(void) {
  if (g_sync_fbo) glDeleteFramebuffers(1, &g_sync_fbo);
  if (g_sync_texture) glDeleteTextures(1, &g_sync_texture);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  g_sync_fbo = g_sync_texture = 0;
}

/* Makes no context current on this thread: 0, or -1 and why. */
API int gpures_test_gl_release_current(void) {
  if (!eglMakeCurrent(g_display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT))
    return fail("eglMakeCurrent(NO_CONTEXT) failed: 0x%x", eglGetError());
  return 0;
}
