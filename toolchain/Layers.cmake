# The emulator's layers (docs/architecture.md, "Layers"), and the checks
# that keep them honest.
#
#   nicemu_layer(NAME [USES layer...] [LIBS lib...] [PUBLIC_LIBS lib...])
#
# declares the layer in emulator/NAME/ (its .cpp files, subfolders included)
# as the static library nicemu_emu_NAME. It links PUBLIC the layers after USES,
# each of which must have been declared before it (that is, lower: the
# order of the calls is the order of the layers), PUBLIC the PUBLIC_LIBS and
# PRIVATE the LIBS. A folder with no sources yet (a layer being started) is
# only recorded in the order; the layers that name it skip it.
#
# With NICEMU_CHECK_LAYERS (ON by default) the build fails when a layer uses
# one it does not declare:
#   - calls: nicemu_layer_check_NAME is an executable made of the whole
#     archive of nicemu_emu_NAME (every object, whether or not anything calls
#     it), linked with nothing but what the layer declares (its USES, their
#     own USES, and the libraries). A call into any other layer, above it or
#     beside it, is an undefined reference: the link fails.
#   - includes: nicemu_layer_includes runs CheckLayerIncludes.cmake over
#     every source and header of the layers: a file of layer L may include
#     "X/..." for a layer X only if X is L or L reaches X through USES. Also
#     checked there: the order of modules (nicemu_module_order below), and
#     that no #include in emulator/, hostlib/, firmware/, tests/ or
#     examples/ goes up with "../". This catches what a link cannot see: a
#     header-only use (a type, an inline function). nicemu_add_include_check()
#     adds it, once everything is declared.
include_guard(GLOBAL)

option(NICEMU_CHECK_LAYERS
       "Fail the build when an emulator layer uses one it does not declare" ON)

set_property(GLOBAL PROPERTY NICEMU_LAYERS "")

function(nicemu_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "USES;LIBS;PUBLIC_LIBS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "nicemu_layer(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  get_property(declared GLOBAL PROPERTY NICEMU_LAYERS)
  # What this layer reaches: its USES and everything they reach.
  set(reach ${arg_USES})
  foreach(lower IN LISTS arg_USES)
    if(NOT lower IN_LIST declared)
      message(FATAL_ERROR "layer ${name} uses ${lower}, which is not a layer "
                          "below it (layers: ${declared})")
    endif()
    get_property(lower_reach GLOBAL PROPERTY NICEMU_LAYER_${lower}_REACH)
    list(APPEND reach ${lower_reach})
  endforeach()
  list(REMOVE_DUPLICATES reach)
  set_property(GLOBAL APPEND PROPERTY NICEMU_LAYERS ${name})
  set_property(GLOBAL PROPERTY NICEMU_LAYER_${name}_REACH ${reach})

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp)
  if(NOT sources)
    message(STATUS "nicemu: layer ${name} has no sources yet")
    return()
  endif()
  add_library(nicemu_emu_${name} STATIC ${sources})
  target_link_libraries(nicemu_emu_${name} PUBLIC nicemu_emu_headers ${arg_PUBLIC_LIBS}
                                        PRIVATE nicemu_warnings ${arg_LIBS})
  foreach(lower IN LISTS arg_USES)
    if(TARGET nicemu_emu_${lower})
      target_link_libraries(nicemu_emu_${name} PUBLIC nicemu_emu_${lower})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY NICEMU_LAYER_TARGETS nicemu_emu_${name})

  if(NICEMU_CHECK_LAYERS)
    set(main ${CMAKE_CURRENT_BINARY_DIR}/layer_checks/main.cpp)
    if(NOT EXISTS ${main})
      file(WRITE ${main} "// The layer checks link a layer's whole archive; this is all they run.\n"
                         "int main() { return 0; }\n")
    endif()
    add_executable(nicemu_layer_check_${name} ${main})
    target_link_libraries(nicemu_layer_check_${name}
      PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,nicemu_emu_${name}>")
    set_target_properties(nicemu_layer_check_${name} PROPERTIES
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/layer_checks)
  endif()
endfunction()

# nicemu_module_order(DIR dir MODULES module...): the files of `dir`
# (relative to the source tree) named after the modules, lowest first,
# where module M is M.cpp and M.hpp. A module's files may include the
# headers of the modules before it only; checked with the includes. The
# VIPL library uses it (hostlib/CMakeLists.txt).
function(nicemu_module_order)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "DIR" "MODULES")
  string(MAKE_C_IDENTIFIER "${arg_DIR}" id)
  set_property(GLOBAL APPEND PROPERTY NICEMU_MODULE_DIRS ${arg_DIR})
  set_property(GLOBAL PROPERTY NICEMU_MODULES_${id} ${arg_MODULES})
endfunction()

# Adds nicemu_layer_includes, once every layer and module order is known
# (the top-level CMakeLists.txt calls it after the subdirectories).
function(nicemu_add_include_check)
  if(NOT NICEMU_CHECK_LAYERS)
    return()
  endif()
  get_property(layers GLOBAL PROPERTY NICEMU_LAYERS)
  set(table "set(layers ${layers})\n")
  foreach(layer IN LISTS layers)
    get_property(reach GLOBAL PROPERTY NICEMU_LAYER_${layer}_REACH)
    string(APPEND table "set(reach_${layer} ${reach})\n")
  endforeach()
  get_property(module_dirs GLOBAL PROPERTY NICEMU_MODULE_DIRS)
  string(APPEND table "set(module_dirs ${module_dirs})\n")
  foreach(dir IN LISTS module_dirs)
    string(MAKE_C_IDENTIFIER "${dir}" id)
    get_property(modules GLOBAL PROPERTY NICEMU_MODULES_${id})
    string(APPEND table "set(modules_${id} ${modules})\n")
  endforeach()
  set(roots emulator hostlib firmware tests examples)
  set(everything)
  foreach(root IN LISTS roots)
    file(GLOB_RECURSE files CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/${root}/*.cpp ${PROJECT_SOURCE_DIR}/${root}/*.hpp
         ${PROJECT_SOURCE_DIR}/${root}/*.h ${PROJECT_SOURCE_DIR}/${root}/*.c
         ${PROJECT_SOURCE_DIR}/${root}/*.S)
    list(APPEND everything ${files})
  endforeach()
  string(APPEND table "set(roots ${roots})\n")
  set(dir ${PROJECT_BINARY_DIR}/emulator/layer_checks)
  set(table_file ${dir}/layers.cmake)
  file(WRITE ${table_file}.new "${table}")
  file(COPY_FILE ${table_file}.new ${table_file} ONLY_IF_DIFFERENT)
  set(stamp ${dir}/includes.stamp)
  set(script ${PROJECT_SOURCE_DIR}/toolchain/CheckLayerIncludes.cmake)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLAYER_TABLE=${table_file}
            -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${script}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${script} ${table_file} ${everything}
    COMMENT "Checking the includes of the layers"
    VERBATIM)
  add_custom_target(nicemu_layer_includes ALL DEPENDS ${stamp})
endfunction()
