# Cross-compiles gpures for 64-bit Windows with Debian's mingw-w64 (gcc-mingw-w64-x86-64).
#   cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/mingw-w64.cmake
#   cmake --build build-windows && ctest --test-dir build-windows
# The tests run under Wine when wine64 (or wine) is installed: it becomes
# CMAKE_CROSSCOMPILING_EMULATOR, so ctest runs each test.exe through it.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(GPURES_MINGW_TRIPLE x86_64-w64-mingw32 CACHE STRING "The mingw-w64 target triple")
set(triple ${GPURES_MINGW_TRIPLE})
# Debian installs the win32-threads compiler as -win32 and the posix-threads one as -posix;
# either works (the library uses Win32 only, the tests link winpthreads statically).
find_program(CMAKE_C_COMPILER NAMES ${triple}-gcc ${triple}-gcc-win32 ${triple}-gcc-posix REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${triple}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${triple})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# C99 printf (%zu, %llu) whatever msvcrt.dll the program meets.
set(CMAKE_C_FLAGS_INIT "-D__USE_MINGW_ANSI_STDIO=1")
# Static libgcc and winpthreads: gpures.dll and the tests import only system DLLs.
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libgcc -static")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static-libgcc -static")

find_program(GPURES_WINE NAMES wine64 wine PATHS /usr/lib/wine NO_CMAKE_FIND_ROOT_PATH)
if(GPURES_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${GPURES_WINE})
endif()
