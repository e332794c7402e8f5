# The cuda backend (level0_operators/CMakeLists.txt includes this): cuBLAS and
# cuDNN, built when the CUDA toolkit and cuDNN are both found, as the cuda
# plugin (libd5_cuda.so from this folder's files, cuda_plugin.h) that
# ../cuda_plugin.c loads on demand: d5operators itself never links the CUDA
# libraries. D5_HAVE_CUDA_BACKEND tells tests/.
set(D5_HAVE_CUDA_BACKEND 0)
if(D5_HAVE_CUDA)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND TARGET CUDA::cublas
     AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
    set(D5_HAVE_CUDA_BACKEND 1)
    message(STATUS "d5: cuDNN found (${CUDNN_LIBRARY}): the cuda backend is built (plugin)")
  else()
    message(STATUS "d5: cuDNN, cuBLAS or nvcc not found: the cuda backend is not built")
  endif()
endif()
if(D5_HAVE_CUDA_BACKEND)
  target_sources(d5operators PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cuda_plugin.c)
  file(GLOB d5_cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
  # The backend's own kernels (kernels.cu) compiled by nvcc into an object of
  # the plugin: machine code for Ampere (sm_80) and Hopper (sm_90), and PTX
  # that the driver compiles for later GPUs; C++ without exceptions or
  # thread-safe statics, so that the plugin needs no C++ runtime.
  set(d5_cuda_kernels ${CMAKE_CURRENT_BINARY_DIR}/cuda_kernels.o)
  add_custom_command(OUTPUT ${d5_cuda_kernels}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -c -O3 -std=c++17
      -Xcompiler=-fPIC,-fno-exceptions,-fno-threadsafe-statics
      --generate-code arch=compute_80,code=sm_80
      --generate-code arch=compute_90,code=[sm_90,compute_90]
      ${CMAKE_CURRENT_LIST_DIR}/kernels.cu -o ${d5_cuda_kernels}
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kernels.cu ${CMAKE_CURRENT_LIST_DIR}/kernels.h
    COMMENT "nvcc: the cuda backend's kernels" VERBATIM)
  d5_plugin(cuda ${d5_cuda_sources} ${d5_cuda_kernels})
  target_include_directories(d5_plugin_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CUDNN_INCLUDE_DIR})
  target_link_libraries(d5_plugin_cuda PRIVATE d5operators d5core CUDA::cudart CUDA::cublas
    CUDA::cublasLt ${CUDNN_LIBRARY} m)
endif()
set(D5_BACKEND_BUILT ${D5_HAVE_CUDA_BACKEND})
set(D5_HAVE_CUDA_BACKEND ${D5_HAVE_CUDA_BACKEND} PARENT_SCOPE)
