// test/stress/host_memory.hpp - the process's host memory, for the stress and soak tests that
// require it to stay flat: its resident memory (/proc/self/statm), or under AddressSanitizer,
// whose quarantine keeps freed memory resident, the heap bytes in use.
#pragma once

#include "catch.hpp"

#include <unistd.h>

#include <cstddef>
#include <fstream>

#if defined(__SANITIZE_ADDRESS__)
#define GRAPHCAP_STRESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GRAPHCAP_STRESS_ASAN 1
#endif
#endif
#ifdef GRAPHCAP_STRESS_ASAN
#if __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#else // GCC installs the runtime without its interface headers
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif
#endif

namespace gcstress {

/// The heap bytes in use under AddressSanitizer, else the resident memory in bytes.
inline std::size_t host_memory_bytes() {
#ifdef GRAPHCAP_STRESS_ASAN
  return __sanitizer_get_current_allocated_bytes();
#else
  std::ifstream statm{"/proc/self/statm"};
  std::size_t size_pages = 0;
  std::size_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  REQUIRE(statm);
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
#endif
}

} // namespace gcstress
