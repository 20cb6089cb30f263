# nicemu-mpicc and nicemu-mpicxx (toolchain/nicemu-mpicc.in), the mpicc of
# nicemu's MPI (docs/mpi.md): one pair for the build tree, in build/bin
# (absolute paths into the source and build trees), and one pair that
# Install.cmake installs into <prefix>/bin (paths found from the script's
# own place, so an installation may move). Both link with the flags the
# library was built for (CMAKE_EXE_LINKER_FLAGS: a sanitizer build's
# library needs its runtime).
set(NICEMU_MPI_WRAPPER_DIR ${CMAKE_BINARY_DIR}/bin)
set(NICEMU_MPI_LINK_FLAGS "${CMAKE_EXE_LINKER_FLAGS}")
set(_nicemu_mpi_permissions OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

function(_nicemu_mpi_wrapper name language source variable compiler)
  set(NICEMU_MPI_WRAPPER ${name})
  set(NICEMU_MPI_SOURCE ${source})
  set(NICEMU_MPI_LANGUAGE ${language})
  set(NICEMU_MPI_CC_VARIABLE ${variable})
  set(NICEMU_MPI_COMPILER ${compiler})
  # The build tree's.
  set(NICEMU_MPI_LOCATE
      "includedir=${PROJECT_SOURCE_DIR}/hostlib/include\nlibdir=$<TARGET_FILE_DIR:nicemu_host>")
  configure_file(${PROJECT_SOURCE_DIR}/toolchain/nicemu-mpicc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/${name}.build.in @ONLY)
  file(GENERATE OUTPUT ${NICEMU_MPI_WRAPPER_DIR}/${name}
       INPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}.build.in
       FILE_PERMISSIONS ${_nicemu_mpi_permissions})
  # The installed one's.
  set(NICEMU_MPI_LOCATE [=[
self=$(readlink -f "$0" 2>/dev/null || echo "$0")
prefix=$(cd "$(dirname "$self")/.." && pwd)]=])
  string(APPEND NICEMU_MPI_LOCATE
         "\nincludedir=$prefix/${CMAKE_INSTALL_INCLUDEDIR}"
         "\nlibdir=$prefix/${CMAKE_INSTALL_LIBDIR}")
  configure_file(${PROJECT_SOURCE_DIR}/toolchain/nicemu-mpicc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/installed/${name} @ONLY)
endfunction()

_nicemu_mpi_wrapper(nicemu-mpicc C prog.c NICEMU_MPICC_CC
                    "${CMAKE_C_COMPILER}")
_nicemu_mpi_wrapper(nicemu-mpicxx C++ prog.cpp NICEMU_MPICXX_CXX
                    "${CMAKE_CXX_COMPILER}")
unset(_nicemu_mpi_permissions)
