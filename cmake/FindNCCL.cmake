# FindNCCL - NCCL's header and library, for graphcap's NCCL example.
#
# Looks, in order, in:
#   NCCL_ROOT (CMake or environment variable): <root>/include/nccl.h, <root>/lib*/libnccl.so
#   the CUDA toolkit (CUDAToolkit_INCLUDE_DIRS / CUDAToolkit_LIBRARY_DIR) and the system paths
#   Python's site-packages: nvidia/nccl/{include,lib} of the nvidia-nccl-cu12/-cu13 wheels that
#   PyTorch installs (these ship libnccl.so.2 without the libnccl.so link)
# Defines NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION and the imported target
# NCCL::nccl.

set(_nccl_hints)
foreach(root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(root)
    list(APPEND _nccl_hints "${root}")
  endif()
endforeach()

# Site-packages directories of the Python 3 interpreter on PATH (system and user).
set(_nccl_python_roots)
find_program(_nccl_python NAMES python3 python)
if(_nccl_python)
  execute_process(
    COMMAND "${_nccl_python}" -c
            "import site, sysconfig; print(';'.join([sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib'], *site.getsitepackages(), site.getusersitepackages()]))"
    OUTPUT_VARIABLE _nccl_site_packages OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE _nccl_python_status)
  if(_nccl_python_status EQUAL 0)
    foreach(dir IN LISTS _nccl_site_packages)
      if(EXISTS "${dir}/nvidia/nccl")
        list(APPEND _nccl_python_roots "${dir}/nvidia/nccl")
      endif()
    endforeach()
  endif()
endif()

set(_nccl_toolkit_include)
set(_nccl_toolkit_lib)
if(CUDAToolkit_INCLUDE_DIRS)
  set(_nccl_toolkit_include ${CUDAToolkit_INCLUDE_DIRS})
endif()
if(CUDAToolkit_LIBRARY_DIR)
  set(_nccl_toolkit_lib ${CUDAToolkit_LIBRARY_DIR})
endif()

find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_hints} ${_nccl_toolkit_include} PATH_SUFFIXES include
  PATHS ${_nccl_python_roots})
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${_nccl_hints} ${_nccl_toolkit_lib} PATH_SUFFIXES lib lib64
  PATHS ${_nccl_python_roots})

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
  foreach(part IN ITEMS MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part}[ \t]+([0-9]+)" _nccl_match "${_nccl_version_lines}")
    set(_nccl_${part} "${CMAKE_MATCH_1}")
  endforeach()
  if(NOT _nccl_MAJOR STREQUAL "")
    set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
