# The dnnl backend (level0_operators/CMakeLists.txt includes this): oneDNN
# (libdnnl-dev), built when it is found. D5_HAVE_DNNL tells tests/ and bench/.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(DNNL_LIBRARY dnnl)
set(D5_HAVE_DNNL 0)
if(DNNL_INCLUDE_DIR AND DNNL_LIBRARY)
  set(D5_HAVE_DNNL 1)
  message(STATUS "d5: oneDNN found (${DNNL_LIBRARY}): the dnnl backend is built")
  file(GLOB d5_dnnl_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
  target_sources(d5operators PRIVATE ${d5_dnnl_sources})
  target_include_directories(d5operators PRIVATE ${DNNL_INCLUDE_DIR})
  target_link_libraries(d5operators PRIVATE ${DNNL_LIBRARY})
  # The backend's own C kernels share oneDNN's OpenMP threads. Debian's oneDNN
  # runs on GCC's libgomp: only GCC's OpenMP is used, so that one process never
  # holds two OpenMP runtimes; other compilers build the kernels serial.
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    find_package(OpenMP COMPONENTS C)
    if(OpenMP_C_FOUND)
      target_link_libraries(d5operators PRIVATE OpenMP::OpenMP_C)
    endif()
  endif()
else()
  message(STATUS "d5: oneDNN not found: the dnnl backend is not built")
endif()
set(D5_BACKEND_BUILT ${D5_HAVE_DNNL})
set(D5_HAVE_DNNL ${D5_HAVE_DNNL} PARENT_SCOPE)
