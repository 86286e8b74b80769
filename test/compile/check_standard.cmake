# Runs one check of graphcap's language floor (called by CTest through `cmake -P`): SOURCE
# compiled with -std=c++17 must fail, its first error must be graphcap's #error, and no other
# error may follow it but the fatal end of the compilation; compiled with -std=c++20 it must
# build. Inputs: COMPILER, SOURCE, FLAGS (a ;-list, without -std), KIND (gxx|nvcc), OUTPUT_DIR.
if(KIND STREQUAL "nvcc")
  set(only_compile -x cu -c -o "${OUTPUT_DIR}/below_cxx20.o")
else()
  set(only_compile -fsyntax-only)
endif()
execute_process(COMMAND "${COMPILER}" -std=c++17 ${FLAGS} ${only_compile} "${SOURCE}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "compiled as C++17, but must stop with graphcap's #error")
endif()
string(REPLACE ";" "," output "${out}${err}") # a ; would split the list below
string(REGEX MATCHALL ": (fatal )?error[^\n]*" errors "${output}")
list(GET errors 0 first)
if(NOT first MATCHES "graphcap needs C\\+\\+20")
  message(FATAL_ERROR "the first error is not graphcap's #error:\n${out}${err}")
endif()
list(LENGTH errors count)
if(count GREATER 2)
  message(FATAL_ERROR "more than the #error and the end of the compilation:\n${out}${err}")
endif()
execute_process(COMMAND "${COMPILER}" -std=c++20 ${FLAGS} ${only_compile} "${SOURCE}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the same file compiled as C++20 must build:\n${out}${err}")
endif()
message(STATUS "below C++20: one #error; C++20: builds")
