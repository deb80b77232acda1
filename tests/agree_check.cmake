cmake_minimum_required(VERSION 3.25)
# `gpuplan plan` sizes serving on an offer through the same library call as `gpuplan serve
# --offer` (serve.h): for the same job — MODEL, USERS in a closed loop of INPUT -> OUTPUT tokens,
# a p99 time per output token of TPOT, on OFFER — both must answer the same replicas, GPUs and
# tensor-parallel size.
execute_process(
  COMMAND ${BIN} serve ${MODEL} --offer ${OFFER} --input ${INPUT} --output ${OUTPUT}
          --users ${USERS} --target-users ${USERS} --slo-tpot ${TPOT} --json
  RESULT_VARIABLE status OUTPUT_VARIABLE serve ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "serve: exit status ${status}\n${err}")
endif()
execute_process(
  COMMAND ${BIN} plan --task serve --model ${MODEL} --offers ${OFFER} --input-tokens ${INPUT}
          --output-tokens ${OUTPUT} --users ${USERS} --latency-target ${TPOT} --json
  RESULT_VARIABLE status OUTPUT_VARIABLE plan ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "plan: exit status ${status}\n${err}")
endif()
string(JSON serve_replicas GET "${serve}" fleet replicas)
string(JSON serve_gpus GET "${serve}" fleet gpus)
string(JSON serve_tp GET "${serve}" chosen_tp)
string(JSON plan_replicas GET "${plan}" ranked 0 replicas)
string(JSON plan_gpus GET "${plan}" ranked 0 gpus)
string(JSON plan_layout GET "${plan}" ranked 0 layout)
if(NOT serve_replicas EQUAL plan_replicas OR NOT serve_gpus EQUAL plan_gpus)
  message(FATAL_ERROR "serve: ${serve_replicas} replicas, ${serve_gpus} GPUs; "
                      "plan: ${plan_replicas} replicas, ${plan_gpus} GPUs")
endif()
if(NOT plan_layout MATCHES "of tp ${serve_tp}[, ]")
  message(FATAL_ERROR "serve chose tp ${serve_tp}; plan: '${plan_layout}'")
endif()
message(STATUS "both: ${plan_replicas} replicas, ${plan_gpus} GPUs, tp ${serve_tp}")
