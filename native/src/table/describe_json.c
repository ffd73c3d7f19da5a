/*
** describe_json.c: one JSON object per handle, written from the field rows.
** 64-bit values are strings so no consumer loses precision; addresses are
** "0x..." strings; absent optional fields are null.
*/
#include <stdio.h>
#include <string.h>

#include "../internal.h"

/* Keeps counting past the end, so the caller learns the size it needs. */
typedef struct writer {
  char *buffer;
  size_t capacity;
  size_t length;
} writer;

static void put(writer *w, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++, w->length++)
    if (w->length + 1 < w->capacity) w->buffer[w->length] = s[i];
}

static void putf(writer *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void putf(writer *w, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) put(w, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void put_string(writer *w, const char *s) {
  put(w, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      put(w, "\\", 1);
      put(w, s, 1);
    } else if (c < 0x20) {
      putf(w, "\\u%04x", c);
    } else {
      put(w, s, 1);
    }
  }
  put(w, "\"", 1);
}

static void put_key(writer *w, const char *key, size_t n, bool *first) {
  if (!*first) put(w, ",", 1);
  *first = false;
  put(w, "\"", 1);
  put(w, key, n);
  put(w, "\":", 2);
}

static void put_value(writer *w, const gpures_field_info *f, const void *desc, uint32_t i) {
  uint64_t v = gpures__field_get(f, desc, i);
  if ((f->flags & GPURES_FIELD_OPTIONAL) && v == 0) {
    put(w, "null", 4);
    return;
  }
  switch (f->type) {
    case GPURES_FIELD_I32:
    case GPURES_FIELD_FD: putf(w, "%d", (int)(int32_t)v); break;
    case GPURES_FIELD_U64: putf(w, "\"%llu\"", (unsigned long long)v); break;
    case GPURES_FIELD_I64: putf(w, "%lld", (long long)(int64_t)v); break;
    case GPURES_FIELD_PTR: putf(w, "\"0x%llx\"", (unsigned long long)v); break;
    case GPURES_FIELD_BOOL: put(w, v ? "true" : "false", v ? 4 : 5); break;
    case GPURES_FIELD_ENUM: {
      const char *name = gpures_enum_name(f->enum_set, (uint32_t)v);
      if (name) put_string(w, name);
      else putf(w, "%u", (unsigned)v);
      break;
    }
    case GPURES_FIELD_UUID: {
      const unsigned char *u = (const unsigned char *)desc + f->offset;
      put(w, "\"", 1);
      for (int b = 0; b < 16; b++) {
        if (b == 4 || b == 6 || b == 8 || b == 10) put(w, "-", 1);
        putf(w, "%02x", u[b]);
      }
      put(w, "\"", 1);
      break;
    }
    default: putf(w, "%u", (unsigned)v); break;
  }
}

/* Length of the group prefix of a path ("planes[]." or "luid."), or 0 for a plain field. */
static size_t group_length(const char *path) {
  const char *dot = strchr(path, '.');
  return dot ? (size_t)(dot - path) + 1 : 0;
}

/* Writes rows [r, end) that share one group; returns end. */
static uint32_t put_group(writer *w, const gpures__variant *v, uint32_t r, const void *desc,
                          bool *first) {
  const gpures_field_info *f = &v->fields[r];
  size_t prefix = group_length(f->path);
  uint32_t end = r + 1;
  while (end < v->num_fields && strncmp(v->fields[end].path, f->path, prefix) == 0) end++;
  bool array = prefix > 3 && strncmp(f->path + prefix - 3, "[].", 3) == 0;
  put_key(w, f->path, prefix - (array ? 3 : 1), first);
  uint32_t n = gpures__field_len(f, desc);
  if (!array && n == 0) {
    put(w, "null", 4);
    return end;
  }
  if (array) put(w, "[", 1);
  for (uint32_t i = 0; i < (array ? n : 1); i++) {
    bool inner = true;
    put(w, i ? ",{" : "{", i ? 2 : 1);
    for (uint32_t m = r; m < end; m++) {
      put_key(w, v->fields[m].path + prefix, strlen(v->fields[m].path + prefix), &inner);
      put_value(w, &v->fields[m], desc, i);
    }
    put(w, "}", 1);
  }
  if (array) put(w, "]", 1);
  return end;
}

static void put_field(writer *w, const gpures_field_info *f, const void *desc, bool *first) {
  const char *brackets = strstr(f->path, "[]");
  uint32_t n = gpures__field_len(f, desc);
  put_key(w, f->path, brackets ? (size_t)(brackets - f->path) : strlen(f->path), first);
  if (brackets) {
    put(w, "[", 1);
    for (uint32_t i = 0; i < n; i++) {
      if (i) put(w, ",", 1);
      put_value(w, f, desc, i);
    }
    put(w, "]", 1);
  } else if (n == 0) {
    put(w, "null", 4);
  } else {
    put_value(w, f, desc, 0);
  }
}

int gpures_describe_json(gpures_handle handle, char *buffer, size_t capacity, size_t *out_length) {
  unsigned char desc[GPURES__DESC_MAX];
  uint32_t kind, refcount;
  int status = gpures__snapshot(handle, "describe", &kind, &refcount, desc);
  if (status != GPURES_OK) return status;
  writer w = {buffer, buffer ? capacity : 0, 0};
  const gpures__variant *v = gpures__variant_of(kind);
  bool first = true;
  put(&w, "{", 1);
  put_key(&w, "kind", 4, &first);
  put_string(&w, gpures__kind_name(kind));
  put_key(&w, "kindId", 6, &first);
  putf(&w, "%u", kind);
  put_key(&w, "refcount", 8, &first);
  putf(&w, "%u", refcount);
  for (uint32_t r = 0; r < v->num_fields;) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type == GPURES_FIELD_COUNT) {
      r++;
    } else if (group_length(f->path)) {
      r = put_group(&w, v, r, desc, &first);
    } else {
      put_field(&w, f, desc, &first);
      r++;
    }
  }
  put(&w, "}", 1);
  if (w.capacity) w.buffer[w.length < w.capacity ? w.length : w.capacity - 1] = '\0';
  if (out_length) *out_length = w.length;
  if (w.length + 1 > w.capacity) {
    gpures__op op = {"describe", kind};
    return gpures__fail(op, GPURES_E_BUFFER_TOO_SMALL, "capacity",
                        "capacity %llu is below the %llu bytes the JSON needs",
                        (unsigned long long)capacity, (unsigned long long)(w.length + 1));
  }
  return GPURES_OK;
}
