// The host model of the kernel of the README's first program (examples/first/first.cu), so that
// the program, unchanged, runs on the CUDA test double: .ci/run builds it as first_on_double and
// checks that it prints the value a GPU prints.
#include <cuda_double/kernels.hpp>

void add(float* y, const float* x, int n); // the kernel's host stub, defined by first.cu

namespace {

const bool modelled = [] {
  cuda_double::emulate_kernel(&add, [](float* y, const float* x, int n) {
    for (int i = 0; i < n; ++i) {
      y[i] += x[i];
    }
  });
  return true;
}();

} // namespace
