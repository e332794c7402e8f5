# d5's plugins (core/plugin.h): the parts of d5 that need the CUDA toolkit or
# NCCL are shared objects that d5 loads with dlopen the first time they are
# asked for, so that neither d5 nor its libraries need those libraries to
# start. A plugin NAME is libd5_NAME.so in the folder d5/ beside libd5core:
# core/d5 in the build tree, ${CMAKE_INSTALL_LIBDIR}/d5 once installed.
set(D5_PLUGIN_BUILD_DIR ${PROJECT_BINARY_DIR}/core/d5)
set(D5_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/d5)

# d5_plugin(NAME SOURCES...): the MODULE target d5_plugin_NAME; link its
# libraries with target_link_libraries(d5_plugin_NAME PRIVATE ...).
function(d5_plugin name)
  set(target d5_plugin_${name})
  add_library(${target} MODULE ${ARGN})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME d5_${name} PREFIX lib
    LIBRARY_OUTPUT_DIRECTORY ${D5_PLUGIN_BUILD_DIR}
    INSTALL_RPATH "$ORIGIN/..;${CMAKE_INSTALL_RPATH};${CUDAToolkit_LIBRARY_DIR}")
  target_compile_options(${target} PRIVATE ${D5_WARNINGS})
  if(NOT D5_SANITIZE)
    # Every symbol a plugin uses is resolved when it is linked, not when it loads.
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${D5_PLUGIN_INSTALL_DIR})
endfunction()
