# d5 and its libraries start without loading a CUDA library: none of them
# names one among the libraries it needs (readelf -d: NEEDED), and the
# executable reaches none through another library (ldd). The CUDA parts are
# plugins loaded on demand (core/plugin.h). Where the cuda plugin is built
# (PLUGIN), it must name libcudart: the same check is seen to find one.
# Arguments: FILES (paths separated by '|'), PLUGIN (optional).
set(cuda_libs "lib(cudart|cublas|cublasLt|cudnn|nccl)[.]so")

function(needed file out_var)
  execute_process(COMMAND readelf -d ${file} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${file}: exit ${rc}")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" lines "${out}")
  if(NOT lines)
    message(FATAL_ERROR "${file}: readelf shows no NEEDED entry at all")
  endif()
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" files "${FILES}")
foreach(file ${files})
  needed(${file} lines)
  string(REGEX MATCHALL "${cuda_libs}[^]]*" found "${lines}")
  if(found)
    message(SEND_ERROR "${file} needs ${found} when it loads")
  endif()
endforeach()

list(GET files 0 exe)
execute_process(COMMAND ldd ${exe} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${exe}: exit ${rc}")
endif()
string(REGEX MATCHALL "${cuda_libs}[^ ]*" found "${out}")
list(REMOVE_DUPLICATES found)
if(found)
  message(SEND_ERROR "${exe} loads ${found} through its libraries (ldd)")
endif()

if(PLUGIN)
  needed(${PLUGIN} lines)
  if(NOT "${lines}" MATCHES "libcudart[.]so")
    message(SEND_ERROR "the check sees no libcudart in ${PLUGIN}'s NEEDED entries: ${lines}")
  endif()
endif()
