# d5 scaling end to end (cmake -P): a strong-scaling series of real
# `d5 train --distributed dsgd` runs on 1 and 2 ranks under mpirun, with
# modelled rows whose alpha and beta d5 pingpong --fit measures first.
#   -DD5=<d5 binary> -DSOURCE_DIR=<d5's source tree>
# MNIST when it is in the default dataset folder, else synthetic data.
set(work ${CMAKE_CURRENT_BINARY_DIR}/cli_scaling_work)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})

set(dataset synthetic)
if(EXISTS ${SOURCE_DIR}/data/mnist/train-images-idx3-ubyte
    OR EXISTS ${SOURCE_DIR}/data/mnist/train-images-idx3-ubyte.gz)
  set(dataset mnist)
endif()

set(cmd ${D5} scaling --ranks 1,2 --mode strong --model-ranks 4,16
  --json ${work}/series.json --csv ${work}/series.csv
  -- d5 train --model lenet --dataset ${dataset} --distributed dsgd --sampler sharded-batch
  --batch 32 --max-batches 10)
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT 600)
message(STATUS "${out}\n${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "d5 scaling: exit status ${rc}, expected 0\n${cmd}")
endif()

# The table: two measured rows (ranks, workers, the global batch 32), then
# two modelled ones, and where alpha and beta came from.
foreach(regex "\n +1 +1 +32  [0-9.]+ \\[" "\n +2 +2 +32  [0-9.]+ \\["
    "\n +4 +4 +32  [0-9.]+ .*modelled\n" "\n +16 +16 +32  [0-9.]+ .*modelled\n"
    "alpha = -?[0-9.]+ us, beta = -?[0-9.]+ ns/B .*from measured now: .*pingpong --fit"
    "modelled, not measured")
  if(NOT out MATCHES "${regex}")
    message(SEND_ERROR "the output does not match '${regex}'")
  endif()
endforeach()

file(READ ${work}/series.json json)
string(JSON n LENGTH "${json}" series)
if(NOT n EQUAL 4)
  message(SEND_ERROR "series.json: ${n} rows, expected 4")
endif()
string(JSON complete GET "${json}" context complete)
if(NOT complete)
  message(SEND_ERROR "series.json: context.complete is ${complete}")
endif()
foreach(i 0 1 2 3)
  string(JSON modelled GET "${json}" series ${i} modelled)
  string(JSON ranks GET "${json}" series ${i} ranks)
  string(JSON batch GET "${json}" series ${i} global_batch)
  string(JSON x GET "${json}" series ${i} samples_per_second)
  string(JSON eff GET "${json}" series ${i} efficiency)
  if(i LESS 2)
    set(want_modelled OFF)
  else()
    set(want_modelled ON)
  endif()
  if((modelled AND NOT want_modelled) OR (NOT modelled AND want_modelled))
    message(SEND_ERROR "series.json row ${i} (ranks ${ranks}): modelled is ${modelled}")
  endif()
  if(NOT batch EQUAL 32)
    message(SEND_ERROR "series.json row ${i}: global_batch ${batch}, expected 32")
  endif()
  if(NOT x GREATER 0 OR NOT eff GREATER 0)
    message(SEND_ERROR "series.json row ${i}: samples_per_second ${x}, efficiency ${eff}")
  endif()
endforeach()
string(JSON eff1 GET "${json}" series 0 efficiency)
if(NOT eff1 EQUAL 1)
  message(SEND_ERROR "series.json: the 1-rank run's efficiency is ${eff1}, expected 1")
endif()

file(STRINGS ${work}/series.csv lines)
list(LENGTH lines n)
if(NOT n EQUAL 5)
  message(SEND_ERROR "series.csv: ${n} lines, expected a header and 4 rows")
endif()
