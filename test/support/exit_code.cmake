# Runs BINARY with ARGS (a ;-list) and fails unless its exit code is EXPECT, or, with
# EXPECT_NOT, unless it is none of 0 and EXPECT_NOT. For the skip facility's own test
# (test/support/skip_probe.cpp): CTest's SKIP_RETURN_CODE would report a 77 as skipped, not check it.
execute_process(COMMAND "${BINARY}" ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(DEFINED EXPECT AND NOT status STREQUAL "${EXPECT}")
  message(FATAL_ERROR "${BINARY} ${ARGS}: exit code ${status}, expected ${EXPECT}\n${out}${err}")
endif()
if(DEFINED EXPECT_NOT AND (status STREQUAL "0" OR status STREQUAL "${EXPECT_NOT}"))
  message(FATAL_ERROR
    "${BINARY} ${ARGS}: exit code ${status}, expected a failure (not 0, not ${EXPECT_NOT})\n"
    "${out}${err}")
endif()
if(DEFINED EXPECT_OUTPUT AND NOT out MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "${BINARY} ${ARGS}: output does not match ${EXPECT_OUTPUT}\n${out}${err}")
endif()
message(STATUS "exit code ${status}, as expected")
