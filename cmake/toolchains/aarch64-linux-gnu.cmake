# Cross-compiling weft for 64-bit Arm Linux with Debian's cross toolchain
# (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) and running what it builds
# under qemu-user: ctest prefixes every test program with the emulator, so
# the suite runs here as it would on an Arm machine, only slower. The
# aarch64 preset (CMakePresets.json) uses this file; scripts/install-deps
# installs the toolchain and qemu-user on an x86-64 host, and
# scripts/cross-cmocka builds the static cmocka the tests link.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(_triple aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${_triple}-gcc)
set(CMAKE_CXX_COMPILER ${_triple}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${_triple})

# Headers and libraries of the target only; programs of the host.
set(CMAKE_FIND_ROOT_PATH /usr/${_triple} /usr/lib/${_triple})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config must look at the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${_triple}/pkgconfig:/usr/share/pkgconfig")

# -L: where qemu finds the target's dynamic loader and libraries.
find_program(WEFT_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${WEFT_QEMU_AARCH64};-L;/usr/${_triple}")
