# d5_add_library(NAME [GLOB PATTERN...] [SOURCES FILE...] [EXCLUDE FILE...]
#                [FOREIGN FILE...] [LINK ARG...])
#
# One of d5's libraries: the target d5NAME, its alias d5::NAME (exported under
# that name), built from
#   GLOB     the files matching these patterns, relative to the folder of the
#            calling CMakeLists.txt ("*.c", "schemes/*.c"); CMake globs again
#            at each build, so a new file needs no edit here;
#   SOURCES  files named one by one (optional parts chosen by the caller);
#   EXCLUDE  files the patterns match that are not to be built (relative);
#   FOREIGN  generated code: built without d5's warnings (which stay errors
#            in d5's own files).
# LINK is passed to target_link_libraries as written (PUBLIC ... PRIVATE ...),
# so that the order of the link line is the caller's.
#
# Every library gets the same frame: version and soversion of the project,
# the public headers of include/ (in the build and installed), the private
# headers of its own folder, d5's warnings as errors, and its place in the
# export set d5Targets (d5Config.cmake) with the install rules.
function(d5_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "GLOB;SOURCES;EXCLUDE;FOREIGN;LINK")
  set(target d5${name})
  set(globbed)
  foreach(pattern IN LISTS arg_GLOB)
    file(GLOB found CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
      ${CMAKE_CURRENT_SOURCE_DIR}/${pattern})
    list(APPEND globbed ${found})
  endforeach()
  if(arg_EXCLUDE)
    list(REMOVE_ITEM globbed ${arg_EXCLUDE})
  endif()
  list(SORT globbed)
  set(own ${globbed} ${arg_SOURCES})
  add_library(${target} ${own} ${arg_FOREIGN})
  add_library(d5::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name}
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  if(arg_FOREIGN)
    # Warnings per file: the generated files are foreign.
    set_source_files_properties(${own} PROPERTIES COMPILE_OPTIONS "${D5_WARNINGS}")
  else()
    target_compile_options(${target} PRIVATE ${D5_WARNINGS})
  endif()
  if(arg_LINK)
    target_link_libraries(${target} ${arg_LINK})
  endif()
  install(TARGETS ${target} EXPORT d5Targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()
