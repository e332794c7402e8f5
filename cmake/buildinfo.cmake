# Writes d5_buildinfo.h into the build tree: the commit, compiler and flags that
# every d5 report carries. The commit is read at configure time; a build from a
# tree with uncommitted changes is marked "-dirty".
find_package(Git QUIET)
set(D5_GIT_COMMIT "unknown")
if(GIT_FOUND AND EXISTS ${CMAKE_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE D5_GIT_COMMIT
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT D5_GIT_COMMIT)
    set(D5_GIT_COMMIT "unknown")
  endif()
endif()
string(TOUPPER "${CMAKE_BUILD_TYPE}" _d5_bt)
set(D5_BUILD_FLAGS "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${_d5_bt}}")
if(D5_SANITIZE)
  string(APPEND D5_BUILD_FLAGS " -fsanitize=${D5_SANITIZE}")
endif()
string(STRIP "${D5_BUILD_FLAGS}" D5_BUILD_FLAGS)
configure_file(${CMAKE_SOURCE_DIR}/cmake/d5_buildinfo.h.in ${CMAKE_BINARY_DIR}/generated/d5_buildinfo.h @ONLY)
