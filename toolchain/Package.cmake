# The Debian package of the installed tree (Install.cmake):
#   cd build && cpack -G DEB      -> build/nicemu_<version>_amd64.deb
#   sudo apt install ./build/nicemu_*.deb
# It installs under /usr: /usr/bin/nicemu, /usr/share/nicemu/..., and the
# SDK (headers, libnicemu_host.a, pkg-config and CMake package files, the
# firmware toolchain file and runtime). tests/e2e/deb_package.sh builds it,
# unpacks it and uses it as a user would.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nicemu)
set(CPACK_PACKAGE_VENDOR "nicemu")
set(CPACK_PACKAGE_CONTACT "nicemu maintainers <nicemu@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "firmware and bare-metal NIC processor emulator, with its SDK")
set(CPACK_PACKAGE_DESCRIPTION
    "nicemu runs the firmware of a network card's embedded MIPS32 processor on
modelled hardware (Myrinet LANai 4, Comet VIA, DIMMnet-1, UZURA), one card or
a cluster, with a host program per node, on a deterministic virtual clock.
The package carries the emulator, its models, sample firmware images, the
firmware SDK (CMake toolchain file for clang/lld, runtime library), the host
library with C and C++ headers, pkg-config and CMake package files, the
Wireshark dissector, a man page and bash completion.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # nicemu_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries bin/nicemu and lib/nicemu/libnicemu_clock.so link
# (objdump -p: NEEDED), by the Debian 12 packages that provide them
# (dpkg -S); tests/e2e/deb_package.sh checks that every NEEDED library is
# covered. libm is in libc6. zlib1g: the fabric calls crc32, which the
# Release binary reaches through libelf's own NEEDED libz and the sanitizer
# builds link directly. libopenmpi3: a run spread over MPI ranks
# (docs/distributed.md), started by openmpi-bin's mpirun (recommended).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1, libunicorn2 (>= 2.0), libcapstone4 (>= 4.0), libelf1, libdw1, libboost-context1.74.0, libedit2, zlib1g, libopenmpi3")
# The SDK's users build firmware with clang and lld (nicemu-mipsel.cmake)
# and host programs with a C/C++ compiler, CMake or pkg-config.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "clang, lld, cmake, pkg-config, g++ | c++-compiler, openmpi-bin")
# nicemu plot (gnuplot), run --gdb (gdb-multiarch), reading --pcap captures.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gnuplot-nox, gdb-multiarch, tshark | wireshark")
include(CPack)
