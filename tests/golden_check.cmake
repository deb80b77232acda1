# Runs BIN with the arguments in EXAMPLE.args (one per line) from the repository root ROOT, and
# compares stdout byte for byte with EXAMPLE.out. To accept a deliberate change, regenerate the
# .out file and review the diff.
cmake_minimum_required(VERSION 3.25)
file(STRINGS ${EXAMPLE}.args args)
execute_process(COMMAND ${BIN} ${args} WORKING_DIRECTORY ${ROOT} RESULT_VARIABLE status
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "exit status ${status}\n${err}")
endif()
file(READ ${EXAMPLE}.out expected)
if(NOT out STREQUAL expected)
  file(WRITE ${EXAMPLE}.actual "${out}")
  message(FATAL_ERROR "output differs from ${EXAMPLE}.out; see ${EXAMPLE}.actual")
endif()
