# The build tree laid out around build/emulator/nicemu as an installation is
# around <prefix>/bin/nicemu, so that nicemu finds what it ships, relative
# to itself, the same way in both (docs/benchmarks.md, "Where the benches
# find their files"):
#   <exe>/../lib/nicemu/libnicemu_clock.so  the clock shim `nicemu run`
#                                           preloads into host programs
#   <exe>/../lib/nicemu/examples/           the host programs of `nicemu bench`
#   <exe>/../share/nicemu/firmware/         the firmware images (those of the
#                                           staged firmware SDK)
# Here they are symbolic links to where the build makes them, remade by
# every build of nicemu. Nothing of this is installed.
function(_nicemu_output_dir target kind out)
  get_target_property(dir ${target} ${kind}_OUTPUT_DIRECTORY)
  if(NOT dir)
    get_target_property(dir ${target} BINARY_DIR)
  endif()
  set(${out} ${dir} PARENT_SCOPE)
endfunction()

_nicemu_output_dir(nicemu RUNTIME _nicemu_bin)
get_filename_component(_nicemu_prefix ${_nicemu_bin}/.. ABSOLUTE)
_nicemu_output_dir(niam_bench_barrier RUNTIME _nicemu_examples)
set(_nicemu_layout_commands
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_nicemu_prefix}/lib/nicemu
  COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE:nicemu_clock>
          ${_nicemu_prefix}/lib/nicemu/$<TARGET_FILE_NAME:nicemu_clock>
  COMMAND ${CMAKE_COMMAND} -E create_symlink ${_nicemu_examples}
          ${_nicemu_prefix}/lib/nicemu/examples)
if(TARGET firmware OR NICEMU_FIRMWARE_FROM)
  list(APPEND _nicemu_layout_commands
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_nicemu_prefix}/share/nicemu
    COMMAND ${CMAKE_COMMAND} -E create_symlink
            ${NICEMU_FIRMWARE_STAGING_DIR}/share/nicemu/firmware
            ${_nicemu_prefix}/share/nicemu/firmware)
endif()
add_custom_target(nicemu_build_tree_layout ${_nicemu_layout_commands}
  COMMENT "Laying out the build tree as installed around nicemu"
  VERBATIM)
add_dependencies(nicemu_build_tree_layout nicemu_clock)
add_dependencies(nicemu nicemu_build_tree_layout)
unset(_nicemu_bin)
unset(_nicemu_prefix)
unset(_nicemu_examples)
unset(_nicemu_layout_commands)
