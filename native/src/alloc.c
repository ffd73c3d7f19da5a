/* alloc.c: the one place gpures allocates, so tests can make allocation fail. */
#include <stdlib.h>

#include "internal.h"

void *gpures__alloc(size_t size) { return malloc(size); }
void *gpures__realloc(void *p, size_t size) { return realloc(p, size); }
void gpures__free(void *p) { free(p); }
