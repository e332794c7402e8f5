# What the cmake -P scripts that run d5 under mpiexec share (include()d):
#   run(NAME NP EXPECT_RC ARGS...)  runs d5 with ARGS on NP ranks (0: without
#                                   mpiexec), checks the exit status and leaves
#                                   the output in out_NAME (CLI_RUN_TIMEOUT
#                                   seconds at most, default 120)
#   expect(NAME REGEX)              checks that out_NAME matches REGEX
# Needs -DD5=<d5 binary> -DMPIEXEC=<mpiexec> -DNP_FLAG=-n "-DPREFLAGS=...".
if(NOT CLI_RUN_TIMEOUT)
  set(CLI_RUN_TIMEOUT 120)
endif()

function(run name np want_rc)
  if(np EQUAL 0)
    set(cmd ${D5} ${ARGN})
  else()
    set(cmd ${MPIEXEC} ${NP_FLAG} ${np} ${PREFLAGS} ${D5} ${ARGN})
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    TIMEOUT ${CLI_RUN_TIMEOUT})
  set(out_${name} "${out}\n${err}" PARENT_SCOPE)
  if(NOT "${rc}" STREQUAL "${want_rc}")
    message(SEND_ERROR "${name}: exit status ${rc}, expected ${want_rc}\n${cmd}\n${out}\n${err}")
  else()
    message(STATUS "${name}: exit status ${rc} as expected")
  endif()
endfunction()

function(expect name regex)
  if(NOT "${out_${name}}" MATCHES "${regex}")
    message(SEND_ERROR "${name}: output does not match '${regex}':\n${out_${name}}")
  endif()
endfunction()
