cmake_minimum_required(VERSION 3.25)
# One row of bad_inputs.txt: runs BIN with ARGS (shell quoting, run in the directory DIR) and
# checks that the bad input is refused as the standards ask: exit status 1 or 2 (no signal, no
# crash), within TIMEOUT seconds, with exactly one line on stderr that matches EXPECT_REGEX, and
# no non-finite number anywhere in the output.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${BIN} ${args} WORKING_DIRECTORY ${DIR} RESULT_VARIABLE status
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT status MATCHES "^[12]$")
  message(FATAL_ERROR "exit status '${status}', expected 1 or 2\nargs: ${ARGS}\n${out}${err}")
endif()
string(REGEX MATCHALL "\n" newlines "${err}")
list(LENGTH newlines n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "stderr has ${n} lines, expected one\nargs: ${ARGS}\n${err}")
endif()
if(NOT err MATCHES "^gpuplan [a-z]+: error: ")
  message(FATAL_ERROR "stderr is not a gpuplan error line\nargs: ${ARGS}\n${err}")
endif()
if(NOT err MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "error does not match '${EXPECT_REGEX}'\nargs: ${ARGS}\n${err}")
endif()
if("${out}" MATCHES "(^|[^a-z])(nan|inf)([^a-z]|$)")
  message(FATAL_ERROR "stdout shows a non-finite number\nargs: ${ARGS}\n${out}")
endif()
