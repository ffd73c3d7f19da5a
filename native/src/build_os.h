/*
** build_os.h: GPURES__BUILD_OS, the GPURES_OS_* bit of the OS the compiler
** targets. kinds/kind_table.c gates the kinds with it;
** native/tests/test_platform.c checks the kind table against it at compile
** time, so compiling that file for a target (clang -target
** x86_64-apple-darwin) checks its gating. It stays beside internal.h, where
** that test includes it from.
*/
#ifndef GPURES_BUILD_OS_H
#define GPURES_BUILD_OS_H

#include "gpures.h"

#if defined(__ANDROID__)
#  define GPURES__BUILD_OS GPURES_OS_ANDROID
#elif defined(__linux__)
#  define GPURES__BUILD_OS GPURES_OS_LINUX
#elif defined(_WIN32)
#  define GPURES__BUILD_OS GPURES_OS_WINDOWS
#elif defined(__APPLE__)
#  define GPURES__BUILD_OS GPURES_OS_DARWIN
#elif defined(__FreeBSD__)
#  define GPURES__BUILD_OS GPURES_OS_FREEBSD
#elif defined(__NetBSD__)
#  define GPURES__BUILD_OS GPURES_OS_NETBSD
#elif defined(__OpenBSD__)
#  define GPURES__BUILD_OS GPURES_OS_OPENBSD
#elif defined(_AIX)
#  define GPURES__BUILD_OS GPURES_OS_AIX
#elif defined(__illumos__)
#  define GPURES__BUILD_OS GPURES_OS_ILLUMOS
#elif defined(__sun)
#  define GPURES__BUILD_OS GPURES_OS_SOLARIS
#else
#  error "gpures does not know this operating system"
#endif

#endif /* GPURES_BUILD_OS_H */
