# nicemu_add_firmware(): build a firmware ELF and its flashable image.
#
#   include(NicemuFirmware)          # found through the toolchain file
#   nicemu_add_firmware(NAME SOURCES a.cpp b.cpp [MODEL lanai4]
#                       [LIBRARIES lib...])
#
# Produces, in the current binary directory:
#   NAME.ld   linker script for the model  (nicemu ldscript --model M)
#   NAME.elf  the firmware, linked against the runtime (target NAME)
#   NAME.img  the checked image            (nicemu image, target NAME-image)
#
# Cache variables:
#   NICEMU_TOOL   the `nicemu` program; default: the SDK's bin/ directory
#                 next to this file's installation, then PATH
#   NICEMU_MODEL  the model used when MODEL is not given (lanai4)
#
# The runtime is the target nicemu::rt. In the source tree it is built by
# firmware/CMakeLists.txt (define it before including this file); from an
# installed SDK it is imported from
# <prefix>/lib/nicemu/mipsel/cmake/nicemu-rt-targets.cmake.
include_guard(GLOBAL)

# Installed as <prefix>/share/nicemu/cmake/NicemuFirmware.cmake.
get_filename_component(NICEMU_SDK_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.."
                       ABSOLUTE)
set(_nicemu_rt_targets
    "${NICEMU_SDK_PREFIX}/lib/nicemu/mipsel/cmake/nicemu-rt-targets.cmake")

if(NOT TARGET nicemu::rt)
  if(NOT EXISTS "${_nicemu_rt_targets}")
    message(FATAL_ERROR
      "nicemu: no firmware runtime. Expected an installed SDK with "
      "${_nicemu_rt_targets}, or a target nicemu::rt defined before "
      "include(NicemuFirmware).")
  endif()
  include("${_nicemu_rt_targets}")
endif()

find_program(NICEMU_TOOL nicemu
  HINTS "${NICEMU_SDK_PREFIX}/bin"
  DOC "The nicemu program (generates linker scripts, packs images)")
if(NOT NICEMU_TOOL)
  message(FATAL_ERROR
    "nicemu: the `nicemu` program was not found in ${NICEMU_SDK_PREFIX}/bin "
    "or on PATH; set NICEMU_TOOL to its path.")
endif()

set(NICEMU_MODEL lanai4 CACHE STRING
    "Model for nicemu_add_firmware() calls that do not name one")

# The linker script is regenerated on every build into a temporary file and
# copied only when it changed: it depends on the model file, which the
# nicemu tool finds on its own search path, so no file dependency can say
# when it is stale. An unchanged script does not relink anything.
function(_nicemu_linker_script name model script)
  add_custom_target(${name}-ldscript
    COMMAND "${NICEMU_TOOL}" ldscript --model "${model}" -o "${script}.new"
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${script}.new" "${script}"
    COMMAND "${CMAKE_COMMAND}" -E remove "${script}.new"
    BYPRODUCTS "${script}"
    COMMENT "Linker script ${name}.ld for model ${model}"
    VERBATIM)
endfunction()

# The debug information of functions and data --gc-sections dropped
# points at 0xffffffff, not at lld's default 0, a real address here (where
# _start lives), so that neither GDB nor nicemu takes it for code there:
# line-table entries (.debug_line), functions and variables (.debug_info,
# and .debug_addr where DWARF 5 keeps their addresses), frame descriptions
# (.debug_frame) and address ranges (.debug_aranges). Not .debug_ranges or
# .debug_loc (DWARF 4), where 0xffffffff starts a base address entry: lld's
# own 1 is right there. Options of the link itself, not of the toolchain's
# initial flags, so that a build tree configured before keeps up.
function(_nicemu_dead_code_debug_options out)
  set(options)
  foreach(section IN ITEMS .debug_line .debug_info .debug_addr .debug_frame
                           .debug_aranges)
    list(APPEND options "-zdead-reloc-in-nonalloc=${section}=0xffffffff")
  endforeach()
  set(${out} ${options} PARENT_SCOPE)
endfunction()

function(nicemu_add_firmware name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MODEL" "SOURCES;LIBRARIES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
      "nicemu_add_firmware(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "nicemu_add_firmware(${name}): no SOURCES")
  endif()
  if(NOT arg_MODEL)
    set(arg_MODEL "${NICEMU_MODEL}")
  endif()

  set(script "${CMAKE_CURRENT_BINARY_DIR}/${name}.ld")
  set(image "${CMAKE_CURRENT_BINARY_DIR}/${name}.img")
  _nicemu_linker_script(${name} "${arg_MODEL}" "${script}")

  add_executable(${name} ${arg_SOURCES})
  add_dependencies(${name} ${name}-ldscript)
  target_link_libraries(${name} PRIVATE nicemu::rt ${arg_LIBRARIES})
  _nicemu_dead_code_debug_options(dead_code)
  target_link_options(${name} PRIVATE "--script=${script}" ${dead_code})
  set_target_properties(${name} PROPERTIES
    LINK_DEPENDS "${script}"
    RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
    NICEMU_MODEL "${arg_MODEL}")

  add_custom_command(OUTPUT "${image}"
    COMMAND "${NICEMU_TOOL}" image "$<TARGET_FILE:${name}>"
            --model "${arg_MODEL}" -o "${image}"
    DEPENDS ${name} "$<TARGET_FILE:${name}>" "${NICEMU_TOOL}"
    COMMENT "Firmware image ${name}.img"
    VERBATIM)
  add_custom_target(${name}-image ALL DEPENDS "${image}")
endfunction()
