cmake_minimum_required(VERSION 3.25)
# The planning binary BIN loads none of the measurement libraries (issue 12): MPI, NCCL, CUDA's
# runtime and cuBLAS, and BLAS are gpuplan-measure's alone, so that every planning command and
# --help starts without them.
execute_process(COMMAND ldd ${BIN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "ldd ${BIN} failed: ${err}")
endif()
if(out MATCHES "(libmpi[^ ]*|libnccl[^ ]*|libcudart[^ ]*|libcublas[^ ]*|libopenblas[^ ]*|libblas[^ ]*)")
  message(FATAL_ERROR "${BIN} loads ${CMAKE_MATCH_1}:\n${out}")
endif()
