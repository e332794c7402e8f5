# d5 train --distributed under mpiexec (cmake -P).
#   -DD5=<d5 binary> -DMPIEXEC=<mpiexec> -DNP_FLAG=-n "-DPREFLAGS=--oversubscribe;..."
# Bad combinations are refused with exit 2 before training; dsgd with the
# sharded-batch sampler on 2 and 4 ranks computes the loss curve of one rank
# with the whole batch (to a relative 1e-5 over 100 LeNet steps); every
# scheme runs from the command line and writes its JSON figures.
set(work ${CMAKE_CURRENT_BINARY_DIR}/cli_train_dist_work)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
set(failures 0)

set(CLI_RUN_TIMEOUT 600)
include(${CMAKE_CURRENT_LIST_DIR}/cli_run.cmake)

# ---- Refused before anything starts ----
run(asgd_no_server 2 2 train --distributed asgd --servers 0 --dataset synthetic --max-batches 2)
expect(asgd_no_server "asgd needs at least one dedicated server rank")
run(too_many_servers 2 2 train --distributed ssp --servers 2 --dataset synthetic --max-batches 2)
expect(too_many_servers "leave no worker")
run(not_divisible 2 2 train --distributed dsgd --sampler sharded-batch --batch 63
  --dataset synthetic --max-batches 2)
expect(not_divisible "--batch 63 is not divisible by the 2 workers")
run(unknown_scheme 0 2 train --distributed allreduce)
expect(unknown_scheme "unknown distributed scheme 'allreduce'; the schemes are local, dsgd")
run(servers_alone 0 2 train --servers 1)
expect(servers_alone "configure --distributed, which is not given")
run(target 0 2 train --distributed dsgd --target-accuracy 0.9)
expect(target "only the local scheme")
run(nccl 0 2 train --distributed dsgd --comm nccl)
expect(nccl "--comm nccl: NCCL reduces device memory")
run(same_batches 0 2 train --distributed dsgd --sampler shuffled)
expect(same_batches "gives every worker the same batches")

# ---- dsgd + sharded-batch = one rank with the whole batch ----
# Plain SGD at a small rate: the curves differ only by the order of sums
# (about 1e-7). With momentum and larger rates training is chaotic enough
# that such differences grow to 1e-4 and more within 100 steps (docs/level3.md).
set(common --model lenet --dataset synthetic --batch 64 --max-batches 100 --threads 1
  --optimizer sgd --lr 0.01 --seed 3)
run(one_rank 0 0 train ${common} --sampler shuffled --json ${work}/one.json)
file(READ ${work}/one.json one)
foreach(np 2 4)
  run(sharded_${np} ${np} 0 train ${common} --distributed dsgd --sampler sharded-batch
    --json ${work}/sharded_${np}.json)
  expect(sharded_${np} "parameters identical on every worker")
  file(READ ${work}/sharded_${np}.json many)
  execute_process(COMMAND ${JSON_CLOSE} ${work}/one.json ${work}/sharded_${np}.json losses 1e-5
    100 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(SEND_ERROR "sharded_${np}: the loss curve differs from one rank's: ${out}${err}")
  else()
    message(STATUS "sharded_${np}: ${out}")
  endif()
endforeach()

# ---- Every scheme from the command line ----
foreach(scheme local dsgd pssgd asgd ssp mavg dpsgd)
  set(np 3)
  run(${scheme} ${np} 0 train --model lenet --dataset synthetic --batch 16 --max-batches 20
    --threads 1 --distributed ${scheme} --json ${work}/${scheme}.json)
  expect(${scheme} "distributed: ${scheme} on 3 ranks")
  expect(${scheme} "oversubscribed|throughput")
  file(READ ${work}/${scheme}.json doc)
  string(JSON ranks GET "${doc}" distributed ranks)
  string(JSON steps GET "${doc}" distributed steps)
  if(NOT ranks EQUAL 3 OR NOT steps EQUAL 20)
    message(SEND_ERROR "${scheme}: JSON says ${ranks} ranks and ${steps} steps")
  endif()
endforeach()
file(READ ${work}/ssp.json doc)
string(JSON lead GET "${doc}" distributed ssp_lead_max)
string(JSON bound GET "${doc}" distributed ssp_staleness_bound)
if(lead GREATER bound)
  message(SEND_ERROR "ssp: a worker led by ${lead} steps, bound ${bound}")
endif()
