# Cross-builds firmware/ (the runtime and the samples) as an external
# project: it needs its own toolchain (clang for mipsel, ld.lld), which one
# CMake project cannot mix with the host compiler of the emulator.
#
# Results:
#   ${NICEMU_FIRMWARE_BUILD_DIR}/NAME.{elf,img}  the samples, for the tests
#   ${NICEMU_FIRMWARE_STAGING_DIR}               the firmware SDK (runtime
#                                                library, headers, samples),
#                                                installed by Install.cmake
include(ExternalProject)

# NICEMU_FIRMWARE_BINARY_DIR, _STAGING_DIR and _BUILD_DIR: CMakeLists.txt.
ExternalProject_Add(firmware
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/firmware
  BINARY_DIR ${NICEMU_FIRMWARE_BINARY_DIR}
  PREFIX ${CMAKE_BINARY_DIR}/firmware-ep
  INSTALL_DIR ${NICEMU_FIRMWARE_STAGING_DIR}
  CMAKE_ARGS
    -DCMAKE_TOOLCHAIN_FILE=${PROJECT_SOURCE_DIR}/toolchain/nicemu-mipsel.cmake
    -DCMAKE_INSTALL_PREFIX=<INSTALL_DIR>
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    -DNICEMU_TOOL=$<TARGET_FILE:nicemu>
    -DNICEMU_CONTRACTS_DIR=${NICEMU_CONTRACTS_DIR}
  # The inner build decides what is out of date (sources, the nicemu tool,
  # model files); the outer one cannot see those dependencies.
  BUILD_ALWAYS TRUE
  DEPENDS nicemu)
