# Runs one compile-fail test (called by CTest through `cmake -P`):
#   1. the file compiled as is must FAIL, and the compiler's output must match EXPECT;
#   2. the same file compiled with -DGRAPHCAP_CONTROL must SUCCEED,
# so that a test cannot pass because of a typo, a missing include or a broken flag.
# Inputs: COMPILER, SOURCE, EXPECT (a regex), FLAGS (a ;-list), KIND (gxx|nvcc), OUTPUT_DIR.
if(KIND STREQUAL "nvcc")
  set(only_compile -x cu -c -o "${OUTPUT_DIR}/ignored.o")
else()
  set(only_compile -fsyntax-only)
endif()

execute_process(COMMAND "${COMPILER}" ${FLAGS} ${only_compile} "${SOURCE}"
  RESULT_VARIABLE failing_status OUTPUT_VARIABLE failing_out ERROR_VARIABLE failing_err)
if(failing_status EQUAL 0)
  message(FATAL_ERROR "compiled, but must not:\n  ${SOURCE}")
endif()
string(REGEX MATCH "${EXPECT}" matched "${failing_out}${failing_err}")
if(NOT matched)
  message(FATAL_ERROR "failed to compile as it should, but without the expected diagnostic\n"
    "  expected (regex): ${EXPECT}\n  got:\n${failing_out}${failing_err}")
endif()

execute_process(COMMAND "${COMPILER}" ${FLAGS} -DGRAPHCAP_CONTROL ${only_compile} "${SOURCE}"
  RESULT_VARIABLE control_status OUTPUT_VARIABLE control_out ERROR_VARIABLE control_err)
if(NOT control_status EQUAL 0)
  message(FATAL_ERROR "the control build (-DGRAPHCAP_CONTROL) must compile, but failed:\n"
    "${control_out}${control_err}")
endif()
message(STATUS "fails as expected (${EXPECT}); control compiles")
