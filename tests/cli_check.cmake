cmake_minimum_required(VERSION 3.25)
# Runs BIN with ARGS (a ;-list); checks the exit status and that stdout+stderr match EXPECT_REGEX,
# and that an error is one line on stderr (unless ONE_LINE is OFF: mpirun adds its own banner).
execute_process(COMMAND ${BIN} ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT status STREQUAL EXPECT_STATUS)
  message(FATAL_ERROR "exit status ${status}, expected ${EXPECT_STATUS}\nargs: ${ARGS}\n${all}")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'\nargs: ${ARGS}\n${all}")
endif()
if(NOT EXPECT_STATUS STREQUAL "0" AND NOT ONE_LINE STREQUAL "OFF")
  # An error is one line.
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "error output is ${n} lines, expected one:\n${err}")
  endif()
endif()
