# cmake -DLAYER_TABLE=... -DSOURCE_DIR=... -P CheckLayerIncludes.cmake
#
# The include half of the layer check (Layers.cmake). LAYER_TABLE sets
# `layers` (lowest first), `reach_<layer>` (the layers it may use),
# `module_dirs` and `modules_<dir as C identifier>` (ordered modules, lowest
# first) and `roots` (the top-level folders whose sources are scanned).
# Fails, naming every offending line, when
#   - a file of emulator/<layer>/ includes "<other>/..." for a layer it does
#     not reach;
#   - a public header (emulator/include/, emulator/contracts/) includes a
#     layer's header;
#   - a module's file includes the header of a module after it;
#   - any #include in the roots goes up a folder with "../".
cmake_minimum_required(VERSION 3.25)
include(${LAYER_TABLE})

set(problems "")
foreach(root IN LISTS roots)
  file(GLOB_RECURSE files ${SOURCE_DIR}/${root}/*.cpp ${SOURCE_DIR}/${root}/*.hpp
       ${SOURCE_DIR}/${root}/*.h ${SOURCE_DIR}/${root}/*.c ${SOURCE_DIR}/${root}/*.S)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
    # Which layer the file is in: its first folder under emulator/.
    set(owner "")
    set(allowed "")
    if(rel MATCHES "^emulator/([^/]+)/")
      set(folder ${CMAKE_MATCH_1})
      if(folder IN_LIST layers)
        set(owner ${folder})
        set(allowed ${folder} ${reach_${folder}})
      elseif(folder STREQUAL "include" OR folder STREQUAL "contracts")
        set(owner "${folder} (public headers)")
      endif()
    endif()
    # Which ordered module the file is, and the modules it may include.
    set(module "")
    get_filename_component(file_dir ${rel} DIRECTORY)
    if(file_dir IN_LIST module_dirs)
      string(MAKE_C_IDENTIFIER "${file_dir}" id)
      get_filename_component(stem ${rel} NAME_WE)
      list(FIND modules_${id} "${stem}" at)
      if(at GREATER_EQUAL 0)
        set(module ${stem})
        set(modules ${modules_${id}})
        list(SUBLIST modules 0 ${at} below)
      endif()
    endif()
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line IN LISTS lines)
      if(line MATCHES "#[ \t]*include[ \t]*[\"<]([^\">]*)[\">]")
        set(path ${CMAKE_MATCH_1})
      else()
        continue()
      endif()
      if(path MATCHES "(^|/)\\.\\./")
        string(APPEND problems "  ${rel}: #include \"${path}\" goes up with ../ "
                               "(include contracts as nicemu/..., layers from emulator/)\n")
      endif()
      if(module AND path MATCHES "^([^/]+)\\.hpp$")
        set(other ${CMAKE_MATCH_1})
        if(other IN_LIST modules AND NOT other STREQUAL module
           AND NOT other IN_LIST below)
          string(APPEND problems "  ${rel}: ${module} includes ${path}, a "
                                 "module above it (order: ${modules})\n")
        endif()
      endif()
      if(owner AND path MATCHES "^([^/]+)/")
        set(used ${CMAKE_MATCH_1})
        if(used IN_LIST layers AND NOT used IN_LIST allowed)
          string(APPEND problems "  ${rel}: layer ${owner} includes ${path}, "
                                 "but does not use layer ${used}\n")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "nicemu layers: includes that break the layering "
                      "(docs/architecture.md, \"Layers\"):\n${problems}")
endif()
