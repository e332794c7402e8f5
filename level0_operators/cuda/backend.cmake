# The cuda backend (level0_operators/CMakeLists.txt includes this): cuBLAS and
# cuDNN, built when the CUDA toolkit and cuDNN are both found, as the cuda
# plugin (libd5_cuda.so from this folder's files, cuda_plugin.h) that
# ../cuda_plugin.c loads on demand: d5operators itself never links the CUDA
# libraries. D5_HAVE_CUDA_BACKEND tells tests/.
set(D5_HAVE_CUDA_BACKEND 0)
if(D5_HAVE_CUDA)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND TARGET CUDA::cublas)
    set(D5_HAVE_CUDA_BACKEND 1)
    message(STATUS "d5: cuDNN found (${CUDNN_LIBRARY}): the cuda backend is built (plugin)")
  else()
    message(STATUS "d5: cuDNN or cuBLAS not found: the cuda backend is not built")
  endif()
endif()
if(D5_HAVE_CUDA_BACKEND)
  target_sources(d5operators PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cuda_plugin.c)
  file(GLOB d5_cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
  d5_plugin(cuda ${d5_cuda_sources})
  target_include_directories(d5_plugin_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CUDNN_INCLUDE_DIR})
  target_link_libraries(d5_plugin_cuda PRIVATE d5operators d5core CUDA::cudart CUDA::cublas
    CUDA::cublasLt ${CUDNN_LIBRARY} m)
endif()
set(D5_BACKEND_BUILT ${D5_HAVE_CUDA_BACKEND})
set(D5_HAVE_CUDA_BACKEND ${D5_HAVE_CUDA_BACKEND} PARENT_SCOPE)
