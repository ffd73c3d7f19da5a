/*
** json_check.h: a strict, minimal JSON validator for the tests.
**
** json_valid(text) is 1 when text is exactly one JSON value (RFC 8259: objects,
** arrays, strings with escapes, numbers, true, false, null) with nothing but
** whitespace around it, else 0. It builds nothing; it only walks the text.
*/
#ifndef GPURES_TEST_JSON_CHECK_H
#define GPURES_TEST_JSON_CHECK_H

#include <string.h>

static inline const char *json__value(const char *p, int depth);

static inline const char *json__ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static inline int json__hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline const char *json__string(const char *p) {
  if (*p++ != '"') return NULL;
  for (;;) {
    unsigned char c = (unsigned char)*p++;
    if (c == '"') return p;
    if (c < 0x20) return NULL; /* includes the terminating NUL: an unclosed string */
    if (c != '\\') continue;
    c = (unsigned char)*p++;
    if (c == 'u') {
      for (int i = 0; i < 4; i++)
        if (!json__hex(*p++)) return NULL;
    } else if (!strchr("\"\\/bfnrt", c) || c == 0) {
      return NULL;
    }
  }
}

static inline const char *json__number(const char *p) {
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
  else return NULL;
  if (*p == '.') {
    p++;
    if (!(*p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!(*p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  return p;
}

static inline const char *json__value(const char *p, int depth) {
  if (depth > 64) return NULL;
  p = json__ws(p);
  switch (*p) {
    case '{':
      p = json__ws(p + 1);
      if (*p == '}') return p + 1;
      for (;;) {
        p = json__string(json__ws(p));
        if (!p) return NULL;
        p = json__ws(p);
        if (*p++ != ':') return NULL;
        p = json__value(p, depth + 1);
        if (!p) return NULL;
        p = json__ws(p);
        if (*p == '}') return p + 1;
        if (*p++ != ',') return NULL;
      }
    case '[':
      p = json__ws(p + 1);
      if (*p == ']') return p + 1;
      for (;;) {
        p = json__value(p, depth + 1);
        if (!p) return NULL;
        p = json__ws(p);
        if (*p == ']') return p + 1;
        if (*p++ != ',') return NULL;
      }
    case '"': return json__string(p);
    case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default: return json__number(p);
  }
}

static inline int json_valid(const char *text) {
  const char *end = json__value(text, 0);
  return end && *json__ws(end) == '\0';
}

#endif /* GPURES_TEST_JSON_CHECK_H */
