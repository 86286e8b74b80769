// The stress tests' work on the CUDA test double: a host function per launch. The double's
// device memory is host memory, so the function adds in place, as the kernel does on the GPU.
#include "stress_work.hpp"

#include <deque>
#include <mutex>

namespace gcstress {
namespace {

struct add_arguments {
  int* data;
  int value;
  std::size_t count;
};

// Captured host functions keep a pointer to their arguments for every replay.
std::mutex arguments_mutex;
std::deque<add_arguments> arguments;

void CUDART_CB add(void* raw) {
  const auto& args = *static_cast<const add_arguments*>(raw);
  for (std::size_t i = 0; i < args.count; ++i) {
    args.data[i] += args.value;
  }
}

} // namespace

void launch_add(cudaStream_t stream, int* data, int value, std::size_t count) {
  add_arguments* args = nullptr;
  {
    const std::lock_guard<std::mutex> lock(arguments_mutex);
    args = &arguments.emplace_back(add_arguments{data, value, count});
  }
  static_cast<void>(cudaLaunchHostFunc(stream, add, args)); // errors surface at capture end
}

void release_work() {
  const std::lock_guard<std::mutex> lock(arguments_mutex);
  arguments.clear();
}

} // namespace gcstress
