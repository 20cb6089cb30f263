# What `cmake --install` puts under the prefix:
#   bin/nicemu                          the emulator and its tools
#   bin/nicemu-mpicc, nicemu-mpicxx     mpicc for nicemu's MPI (docs/mpi.md)
#   include/nicemu/                     public headers (register map, host
#                                       library, emulator types)
#   lib/libnicemu_host.a                the host library, with
#   lib/cmake/nicemu/                   nicemuConfig.cmake: find_package(nicemu)
#                                       gives nicemu::host, nicemu::mpi and
#                                       nicemu::nicemu
#   lib/pkgconfig/nicemu.pc             pkg-config --cflags --libs nicemu
#   lib/pkgconfig/nicemu-fm2.pc         ... nicemu-fm2: "fm.h" is FM 2.x's
#   lib/pkgconfig/nicemu-mpi.pc         ... nicemu-mpi: "mpi.h" is nicemu's MPI
#   share/nicemu/models/                the hardware profiles
#   share/nicemu/cmake/                 the firmware toolchain file and
#                                       NicemuFirmware.cmake
#   lib/nicemu/mipsel/                  the firmware runtime (libnicemu_rt.a,
#                                       its headers, nicemu-rt-targets.cmake)
#   share/nicemu/firmware/              the sample firmware images and
#                                       niam.img
#   lib/nicemu/examples/                the host programs `nicemu bench niam`
#                                       and `nicemu bench via` run
#   lib/nicemu/libnicemu_clock.so       the clock shim `nicemu run` preloads
#   share/nicemu/examples/firmware-hello/  an out-of-tree firmware to copy
#   share/nicemu/wireshark/nicemu.lua   the dissector of --pcap captures
#   share/man/man1/nicemu.1             the man page (if help2man was found)
#   share/bash-completion/completions/nicemu  bash completion
# The tree is relocatable: nicemu finds everything of it relative to
# /proc/self/exe (<exe>/../share/nicemu, <exe>/../lib/nicemu), and the
# pkg-config and CMake package files relative to themselves; so the same
# tree works under any --prefix and unpacked from the .deb
# (toolchain/Package.cmake) anywhere. What nicemu finds relative to itself
# is under lib/nicemu whatever CMAKE_INSTALL_LIBDIR is (it could be
# lib/x86_64-linux-gnu with a /usr prefix).
include(CMakePackageConfigHelpers)

set(NICEMU_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nicemu)
set(NICEMU_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/nicemu)

install(TARGETS nicemu EXPORT nicemuTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS nicemu_host EXPORT nicemuTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS nicemu_mpi EXPORT nicemuTargets)
install(PROGRAMS ${CMAKE_CURRENT_BINARY_DIR}/installed/nicemu-mpicc
                 ${CMAKE_CURRENT_BINARY_DIR}/installed/nicemu-mpicxx
  DESTINATION ${CMAKE_INSTALL_BINDIR})
# nicemu_host links nicemu_warnings privately; a static library's private
# dependencies still appear (link-only) in its export, so the interface
# target is exported too. Its compile options never reach users.
install(TARGETS nicemu_warnings EXPORT nicemuTargets)
# The clock shim `nicemu run` preloads into host programs.
install(TARGETS nicemu_clock LIBRARY DESTINATION lib/nicemu)
# The host programs the benches run (found next to nicemu), and examples
# to run as they are.
install(TARGETS niam_bench_barrier niam_bench_bcopy niam_bench_am niam_bench_logp
                vipl_pingpong fm_pingpong aotf_pingpong dimmnet_bench
                dimm_collectives dimm_sendrecv ring_stream uzura_bench
                uzura_transpose mpi_pingpong mpi_onesided
  RUNTIME DESTINATION lib/nicemu/examples)
# The out-of-tree firmware example, as a user copies it to start from
# (firmware.md); its CMakeLists.txt finds the SDK by the toolchain file.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/firmware-hello
  DESTINATION ${NICEMU_INSTALL_DATADIR}/examples)
# The Wireshark dissector of the --pcap captures (docs/profiling.md).
install(FILES ${PROJECT_SOURCE_DIR}/tools/wireshark/nicemu.lua
  DESTINATION ${NICEMU_INSTALL_DATADIR}/wireshark)
# bash completion, where bash-completion loads it on demand.
install(FILES ${PROJECT_SOURCE_DIR}/tools/bash-completion/nicemu
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# The man page, made from `nicemu --help` by help2man (Debian package
# help2man; toolchain/setup.sh installs it). Without help2man, none.
find_program(NICEMU_HELP2MAN help2man)
if(NICEMU_HELP2MAN)
  set(_nicemu_man ${CMAKE_CURRENT_BINARY_DIR}/man/nicemu.1)
  set(_nicemu_h2m ${PROJECT_SOURCE_DIR}/tools/man/nicemu.h2m)
  add_custom_command(OUTPUT ${_nicemu_man}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
    COMMAND ${NICEMU_HELP2MAN} --no-info --no-discard-stderr
            --include=${_nicemu_h2m} --output=${_nicemu_man}
            $<TARGET_FILE:nicemu>
    DEPENDS nicemu ${_nicemu_h2m}
    COMMENT "Generating the man page nicemu.1 with help2man"
    VERBATIM)
  add_custom_target(nicemu_man ALL DEPENDS ${_nicemu_man})
  install(FILES ${_nicemu_man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  unset(_nicemu_man)
  unset(_nicemu_h2m)
else()
  message(STATUS "help2man not found: no man page (apt-get install help2man)")
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/emulator/include/nicemu/
                  ${PROJECT_SOURCE_DIR}/hostlib/include/nicemu/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nicemu
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
# From the contracts, the register map and the error type, as before they
# moved there (the protocol headers and the channel layout are between nicemu's
# own firmwares, emulator and host library).
install(FILES ${NICEMU_CONTRACTS_DIR}/nicemu/regs.h
              ${NICEMU_CONTRACTS_DIR}/nicemu/error.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nicemu)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/emulator/models/
  DESTINATION ${NICEMU_INSTALL_DATADIR}/models
  FILES_MATCHING PATTERN "*.toml")

install(FILES ${PROJECT_SOURCE_DIR}/toolchain/nicemu-mipsel.cmake
              ${PROJECT_SOURCE_DIR}/toolchain/NicemuFirmware.cmake
  DESTINATION ${NICEMU_INSTALL_DATADIR}/cmake)

# The firmware SDK, staged by the external project (FirmwareBuild.cmake).
if(TARGET firmware OR NICEMU_FIRMWARE_FROM)
  install(DIRECTORY ${NICEMU_FIRMWARE_STAGING_DIR}/
    DESTINATION .
    USE_SOURCE_PERMISSIONS)
endif()

# Package configuration for host programs.
install(EXPORT nicemuTargets NAMESPACE nicemu::
  DESTINATION ${NICEMU_INSTALL_CMAKEDIR})

set(_nicemu_config_in ${CMAKE_CURRENT_BINARY_DIR}/nicemuConfig.cmake.in)
file(WRITE ${_nicemu_config_in} [=[
# nicemu: find_package(nicemu) for host programs.
#   nicemu::host           the host library (link it into your program)
#   nicemu::mpi            nicemu's MPI: mpi.h and the host library
#   nicemu::nicemu         the emulator executable
#   NICEMU_EXECUTABLE      its path
#   NICEMU_TOOLCHAIN_FILE  the firmware toolchain file (for firmware builds)
#   NICEMU_MODEL_DIR       the installed hardware profiles
@PACKAGE_INIT@

include("${CMAKE_CURRENT_LIST_DIR}/nicemuTargets.cmake")

set_and_check(NICEMU_EXECUTABLE "@PACKAGE_CMAKE_INSTALL_BINDIR@/nicemu")
set_and_check(NICEMU_TOOLCHAIN_FILE
              "@PACKAGE_NICEMU_INSTALL_DATADIR@/cmake/nicemu-mipsel.cmake")
set_and_check(NICEMU_MODEL_DIR "@PACKAGE_NICEMU_INSTALL_DATADIR@/models")

check_required_components(nicemu)
]=])
configure_package_config_file(${_nicemu_config_in}
  ${CMAKE_CURRENT_BINARY_DIR}/nicemuConfig.cmake
  INSTALL_DESTINATION ${NICEMU_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR NICEMU_INSTALL_DATADIR)
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/nicemuConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/nicemuConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/nicemuConfigVersion.cmake
  DESTINATION ${NICEMU_INSTALL_CMAKEDIR})
unset(_nicemu_config_in)

# pkg-config for C programs: lib/pkgconfig/nicemu.pc, relocatable (paths
# from the file's own place, so `cmake --install --prefix` anywhere works).
file(RELATIVE_PATH NICEMU_PC_TO_PREFIX
     "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
foreach(pc nicemu nicemu-fm2 nicemu-mpi)
  configure_file(${PROJECT_SOURCE_DIR}/toolchain/${pc}.pc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# The Debian package: `cpack -G DEB` in the build directory
# (toolchain/Package.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/Package.cmake)
