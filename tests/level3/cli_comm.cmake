# d5 allreduce and d5 pingpong, alone and under mpiexec (cmake -P).
#   -DD5=<d5 binary> -DMPIEXEC=<mpiexec> -DNP_FLAG=-n "-DPREFLAGS=--oversubscribe;..."
# Each case checks the exit status and the output.
set(work ${CMAKE_CURRENT_BINARY_DIR}/cli_comm_work)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
set(failures 0)

include(${CMAKE_CURRENT_LIST_DIR}/cli_run.cmake)

# Every table row's last column (#wrong) is 0, and there are `rows` of them.
function(expect_no_wrong name rows)
  string(REPLACE "\n" ";" lines "${out_${name}}")
  set(n 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "^ +[0-9]+ +[0-9]+ +(float|double) ")
      math(EXPR n "${n} + 1")
      if(NOT line MATCHES " 0$")
        message(SEND_ERROR "${name}: a row with wrong elements: ${line}")
      endif()
    endif()
  endforeach()
  if(NOT n EQUAL rows)
    message(SEND_ERROR "${name}: ${n} rows, expected ${rows}:\n${out_${name}}")
  endif()
endfunction()

# Two ranks, d5's ring, every element checked; JSON with the counters.
run(allreduce_np2 2 0 allreduce --check -b 8 -e 64K -f 8 --time 0.05 --comm ring
  --json ${work}/allreduce.json)
expect(allreduce_np2 "#wrong")
expect_no_wrong(allreduce_np2 5)
file(READ ${work}/allreduce.json json)
foreach(key algbw busbw bytes_sent bytes_recv "\"ranks\": 2" "allreduce/ring/float32/32768")
  if(NOT json MATCHES "${key}")
    message(SEND_ERROR "allreduce.json lacks ${key}")
  endif()
endforeach()

# Three ranks (not a power of two), recursive doubling, float64; on this
# machine's two cores the job is oversubscribed and must say so.
run(allreduce_np3 3 0 allreduce --check -b 8 -e 8K -f 32 --time 0.05 --comm recdbl --dtype f64
  --mpi-thread funneled)
expect_no_wrong(allreduce_np3 3)
execute_process(COMMAND nproc OUTPUT_VARIABLE cpus OUTPUT_STRIP_TRAILING_WHITESPACE)
if(cpus LESS 3)
  expect(allreduce_np3 "oversubscribed: timings not meaningful")
endif()

# Alone: a job of one rank; sizes from a CSV in DeepBench's format.
file(WRITE ${work}/sizes.csv "size_floats,repeat\n16,10\n1000,10\n")
run(allreduce_alone 0 0 allreduce --check --sizes ${work}/sizes.csv --time 0.05)
expect_no_wrong(allreduce_alone 2)
expect(allreduce_alone "ranks: 1 ")

# Bad usage and what cannot run here.
run(allreduce_bogus 0 2 allreduce --comm bogus)
expect(allreduce_bogus "--comm bogus: no such communicator backend \\(backends: mpi, ring, recdbl, nccl\\)")
run(allreduce_dtype 0 2 allreduce --dtype f16)
run(allreduce_range 0 2 allreduce -b 1M -e 1K)
run(allreduce_thread 0 2 allreduce --mpi-thread many)
execute_process(COMMAND ${D5} allreduce --comm nccl -e 1K --time 0.05 RESULT_VARIABLE rc
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 AND NOT "${out}${err}" MATCHES "not run: no CUDA device|built without NCCL")
  message(SEND_ERROR "allreduce --comm nccl: exit ${rc} without saying why:\n${out}\n${err}")
endif()

# Ping-pong with the alpha-beta fit; alone it needs a second rank.
run(pingpong_np2 2 0 pingpong --fit -e 64K -f 4 --time 0.05)
expect(pingpong_np2 "alpha = [0-9.]+ us")
expect(pingpong_np2 "beta = -?[0-9.]+ ns/B")
expect(pingpong_np2 "R\\^2 = ")
expect(pingpong_np2 "piecewise fit of the one-way time \\([1-4] segments?")
# A ring's step: the exchange's piecewise model and the sum's line, in the
# JSON file as bench/allreduce/bench_alpha_beta.sh reads them.
run(pingpong_exchange 2 0 pingpong --exchange --fit -b 256 -e 64K -f 4 --time 0.05
  --json ${work}/exchange.json)
expect(pingpong_exchange "exchange\\(us\\) median")
expect(pingpong_exchange "piecewise fit of the exchange")
expect(pingpong_exchange "reduction \\(float32 sum")
file(READ ${work}/exchange.json exchange_json)
foreach(key exchange_segments exchange_0_alpha_s exchange_0_beta_s_per_byte reduce_s_per_byte)
  if(NOT exchange_json MATCHES "\"${key}\"")
    message(SEND_ERROR "pingpong_exchange: no ${key} in exchange.json")
  endif()
endforeach()
run(pingpong_alone 0 2 pingpong)
expect(pingpong_alone "needs 2 ranks")

# A time-out that does not strike: the same exact sums; one Perfetto trace
# with a process per rank.
run(allreduce_timeout_trace 2 0 allreduce --check -b 8 -e 4K -f 8 --time 0.05 --comm recdbl
  --comm-timeout 10 --trace ${work}/trace.json)
expect_no_wrong(allreduce_timeout_trace 4)
expect(allreduce_timeout_trace "# communication time-out: 10 s")
expect(allreduce_timeout_trace "# trace: .*trace.json")
file(READ ${work}/trace.json trace)
string(JSON nevents LENGTH "${trace}" traceEvents)
set(process_names "")
math(EXPR last "${nevents} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${trace}" traceEvents ${i} name)
  if(name STREQUAL "process_name")
    string(JSON pname GET "${trace}" traceEvents ${i} args name)
    list(APPEND process_names "${pname}")
  endif()
endforeach()
if(NOT process_names MATCHES "^rank 0 \\([^)]*\\);rank 1 \\([^)]*\\)$")
  message(SEND_ERROR "trace.json: processes '${process_names}', expected rank 0 and rank 1")
endif()
if(NOT trace MATCHES "\"name\":\"4 KiB\"" OR NOT trace MATCHES "\"name\":\"BATCH\"")
  message(SEND_ERROR "trace.json lacks the regions of a size or of its batches")
endif()
run(pingpong_timeout 2 0 pingpong -e 1K -f 4 --time 0.05 --comm-timeout 10)
expect(pingpong_timeout "# communication time-out: 10 s")
run(allreduce_timeout_negative 0 2 allreduce --comm-timeout -1)
run(allreduce_trace_folder 0 3 allreduce -e 1K --time 0.05 --trace ${work}/no/such/folder/t.json)
