# Checks the deprecated entry headers (called by CTest through `cmake -P`). For each of HEADERS:
#   1. a translation unit that includes it, preprocessed, warns "<header> is deprecated (removed
#      in 0.6): include <the header to write>";
#   2. the same with -DGRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS does not.
# Then one is compiled, not only preprocessed (nvcc: its host compilation), and must warn too.
# (g++ skips the .cuh ones, which refuse a C++ translation unit.)
# Inputs: COMPILER, KIND (gxx|nvcc), FLAGS (a ;-list), HEADERS (a ;-list), OUTPUT_DIR.
if(KIND STREQUAL "nvcc")
  set(language -x cu)
  set(compile_only -c -o "${OUTPUT_DIR}/deprecated_header.o")
else()
  set(language -x c++)
  set(compile_only -fsyntax-only)
endif()
set(source "${OUTPUT_DIR}/deprecated_header_${KIND}.cpp")

function(run_compiler header mode out)
  file(WRITE "${source}" "#include <${header}>\nint main() { return 0; }\n")
  execute_process(COMMAND "${COMPILER}" ${FLAGS} ${ARGN} ${language} ${mode} "${source}"
    RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${header} (${KIND}): did not compile:\n${err}")
  endif()
  set(${out} "${err}" PARENT_SCOPE)
endfunction()

set(checked 0)
foreach(header IN LISTS HEADERS)
  if(KIND STREQUAL "gxx" AND header MATCHES "\\.cuh$")
    continue() # a .cuh header refuses a C++ translation unit (#error): nvcc's run checks it
  endif()
  math(EXPR checked "${checked} + 1")
  string(REPLACE "." "\\." quoted "${header}")
  set(expect "<${quoted}> is deprecated \\(removed in 0\\.6\\): include <graphcap/[a-z_]+\\.(hpp|cuh)>")
  run_compiler(${header} -E warned -o "${OUTPUT_DIR}/deprecated_header.i")
  if(NOT warned MATCHES "${expect}")
    message(FATAL_ERROR "${header} (${KIND}): no deprecation warning naming the header to "
      "include\n  expected (regex): ${expect}\n  got:\n${warned}")
  endif()
  run_compiler(${header} -E silenced -o "${OUTPUT_DIR}/deprecated_header.i"
               -DGRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS)
  if(silenced MATCHES "is deprecated")
    message(FATAL_ERROR "${header} (${KIND}): warns with GRAPHCAP_NO_DEPRECATED_HEADER_WARNINGS "
      "defined:\n${silenced}")
  endif()
endforeach()

# A compilation, not only the preprocessor: the light graphcap/stream.hpp (core/stream_ref.hpp).
run_compiler(graphcap/stream.hpp "${compile_only}" compiled)
if(NOT compiled MATCHES "<graphcap/stream\\.hpp> is deprecated")
  message(FATAL_ERROR "graphcap/stream.hpp (${KIND}): compiled without the warning:\n${compiled}")
endif()
message(STATUS "${checked} deprecated headers warn, and are silenced by the macro")
