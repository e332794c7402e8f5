# LeNet on MNIST, one epoch, 4 ranks (oversubscribed on small machines:
# correctness counts, timings do not), every scheme, from the command line
# (cmake -P). -DD5=<d5> -DMPIEXEC=<mpiexec> -DNP_FLAG=-n "-DPREFLAGS=..."
# -DMNIST=<dir>. Exits with 77 (skipped) when MNIST is not there.
# The hyperparameters follow the scheme: synchronous schemes on 4 workers
# train with a global batch of 256 (lr 0.1); the asynchronous ones apply
# every worker's gradient in turn, so a smaller step. asgd and ssp depend on
# the order in which pushes reach the server, which a busy machine changes:
# ssp measured 96.1% to 97.7% over five runs, so both are held to 95% here. With
# lr 0.15 ssp once diverged (11% accuracy: gradients two steps stale with a large
# step); it takes asgd's 0.1.
if(NOT EXISTS "${MNIST}/train-images-idx3-ubyte" AND NOT EXISTS "${MNIST}/train-images-idx3-ubyte.gz")
  message(STATUS "no MNIST in ${MNIST} (scripts/setup_data.sh): skipped")
  # CMake cannot exit with a chosen status from -P; the test's SKIP_REGULAR_EXPRESSION
  # matches this line.
  message(STATUS "D5_TEST_SKIPPED")
  return()
endif()
set(work ${CMAKE_CURRENT_BINARY_DIR}/dist_accuracy_work)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
# scheme, minimum test accuracy in percent, options (comma-separated)
set(cases
  "dsgd|97|--lr,0.1"
  "pssgd|97|--lr,0.1"
  "ssp|95|--optimizer,sgd,--lr,0.1,--servers,1,--staleness,2"
  "mavg|96|--lr,0.05"
  "asgd|95|--optimizer,sgd,--lr,0.1,--servers,1"
  "dpsgd|95|--lr,0.05")
foreach(c IN LISTS cases)
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 scheme)
  list(GET parts 1 want)
  list(GET parts 2 opts)
  string(REPLACE "," ";" opts "${opts}")
  execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 4 ${PREFLAGS} ${D5} train --model lenet
    --dataset mnist:${MNIST} --epochs 1 --batch 64 --threads 1 --distributed ${scheme} ${opts}
    --json ${work}/${scheme}.json
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 900)
  if(NOT rc EQUAL 0)
    message(SEND_ERROR "${scheme}: exit status ${rc}\n${out}\n${err}")
    continue()
  endif()
  file(READ ${work}/${scheme}.json doc)
  string(JSON acc GET "${doc}" final_test_accuracy)
  # Percent with two decimals, as an integer in hundredths.
  math(EXPR got "0")
  string(REGEX MATCH "^0\\.([0-9][0-9])([0-9][0-9])" m "${acc}")
  if(NOT m)
    message(SEND_ERROR "${scheme}: test accuracy '${acc}'")
    continue()
  endif()
  set(got "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" got "${got}")
  if(want MATCHES "\\.")
    string(REGEX MATCH "^([0-9]+)\\.([0-9])$" m "${want}")
    math(EXPR need "${CMAKE_MATCH_1} * 100 + ${CMAKE_MATCH_2} * 10")
  else()
    math(EXPR need "${want} * 100")
  endif()
  if(got LESS need)
    message(SEND_ERROR "${scheme}: test accuracy ${acc}, expected at least ${want}%")
  else()
    message(STATUS "${scheme} on 4 ranks, one epoch: test accuracy ${acc} (at least ${want}%)")
  endif()
endforeach()
