# CMake toolchain file for nicemu firmware: freestanding C++ for the NIC's
# MIPS32 little-endian core (no FPU, no MMU), compiled by clang and linked by
# ld.lld.
#
#   cmake -S fw -B fw/build -DCMAKE_TOOLCHAIN_FILE=<this file>
#
# Works from the source tree (toolchain/) and from an installed SDK
# (<prefix>/share/nicemu/cmake/). Its directory is added to
# CMAKE_MODULE_PATH, so a project can `include(NicemuFirmware)` and call
# nicemu_add_firmware(). docs/firmware.md explains every flag below.

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR mips)

list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")
list(REMOVE_DUPLICATES CMAKE_MODULE_PATH)

# clang and lld: the unversioned names first, then Debian's versioned ones.
set(_nicemu_llvm_versions 19 18 17 16 15 14)
list(TRANSFORM _nicemu_llvm_versions PREPEND "clang-" OUTPUT_VARIABLE _names)
find_program(NICEMU_CLANG NAMES clang ${_names} REQUIRED)
list(TRANSFORM _nicemu_llvm_versions PREPEND "clang++-" OUTPUT_VARIABLE _names)
find_program(NICEMU_CLANGXX NAMES clang++ ${_names} REQUIRED)
list(TRANSFORM _nicemu_llvm_versions PREPEND "ld.lld-" OUTPUT_VARIABLE _names)
find_program(NICEMU_LLD NAMES ld.lld ${_names} REQUIRED)
list(TRANSFORM _nicemu_llvm_versions PREPEND "llvm-ar-" OUTPUT_VARIABLE _names)
find_program(NICEMU_LLVM_AR NAMES llvm-ar ${_names} REQUIRED)
list(TRANSFORM _nicemu_llvm_versions PREPEND "llvm-ranlib-"
     OUTPUT_VARIABLE _names)
find_program(NICEMU_LLVM_RANLIB NAMES llvm-ranlib ${_names} REQUIRED)
unset(_names)

set(CMAKE_C_COMPILER "${NICEMU_CLANG}")
set(CMAKE_CXX_COMPILER "${NICEMU_CLANGXX}")
set(CMAKE_ASM_COMPILER "${NICEMU_CLANG}")
set(CMAKE_LINKER "${NICEMU_LLD}")
set(CMAKE_AR "${NICEMU_LLVM_AR}")
set(CMAKE_RANLIB "${NICEMU_LLVM_RANLIB}")

set(NICEMU_TARGET_TRIPLE mipsel-unknown-none-elf)
foreach(lang C CXX ASM)
  set(CMAKE_${lang}_COMPILER_TARGET ${NICEMU_TARGET_TRIPLE})
endforeach()

# The core: MIPS32 (mul, clz, wait...), little-endian, soft-float, absolute
# addressing (no PIC, no $gp-relative small data).
set(NICEMU_TARGET_FLAGS "-march=mips32 -EL -msoft-float -mno-abicalls -fno-pic -G0")
# Freestanding: no C library and no host headers (-nostdlibinc keeps only
# the compiler's own stdint.h, stddef.h, stdarg.h...). One section per
# function and object so the link drops what is unused; no unwind tables
# (no exceptions to unwind). Frame pointers in every function, leaves too
# ($fp, as clang does for MIPS by default; said, so that no clang version
# changes it): GDB and `nicemu debug` read frames and locals by it.
set(_nicemu_common
    "${NICEMU_TARGET_FLAGS} -ffreestanding -nostdlibinc -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-omit-frame-pointer")
set(CMAKE_C_FLAGS_INIT "${_nicemu_common} -O2 -g")
set(CMAKE_CXX_FLAGS_INIT
    "${_nicemu_common} -fno-exceptions -fno-rtti -fno-threadsafe-statics -O2 -g")
set(CMAKE_ASM_FLAGS_INIT "${NICEMU_TARGET_FLAGS} -g")
unset(_nicemu_common)

# Linked by ld.lld itself: the clang driver has no bare-metal MIPS link
# support and would hand the link to the host's gcc. Nothing is linked
# implicitly (no crt files, no libc); the linker script comes from
# nicemu_add_firmware.
# Where the debug information of what --gc-sections drops points:
# nicemu_add_firmware() (NicemuFirmware.cmake), on every link.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-EL --gc-sections --build-id -z max-page-size=4096")
foreach(lang C CXX ASM)
  set(CMAKE_${lang}_LINK_EXECUTABLE
      "<CMAKE_LINKER> <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")
endforeach()
set(CMAKE_EXECUTABLE_SUFFIX .elf)
foreach(lang C CXX ASM)
  set(CMAKE_EXECUTABLE_SUFFIX_${lang} .elf)
endforeach()

# Compiler checks cannot link without a linker script: compile only.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# find_program() looks for host tools (nicemu) on the host even if a
# project sets CMAKE_FIND_ROOT_PATH.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
