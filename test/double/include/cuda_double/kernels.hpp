// Kernels on the CUDA test double (graphcap_cuda_double): host models of a program's kernels.
//
// The double runs no device code. A .cu file linked against it (with CUDA_RUNTIME_LIBRARY None)
// registers its kernels at start-up as with libcudart, and a launch (<<<...>>>, cudaLaunchKernel)
// of a kernel runs the kernel's model, given here: a host function of the kernel's own parameters,
// run once per launch for the whole grid, on the launching thread. The double copies the
// arguments at the launch, as CUDA does: eagerly the model runs at once on the copies; during a
// stream capture the launch becomes a kernel node holding its copies, run at each launch of an
// executable of the graph. A kernel with no model fails its launch with
// cudaErrorInvalidDeviceFunction and records a violation (cuda_double::violations()) naming it.
//
//   __global__ void scale(float* x, int n, float f);          // in a .cu file
//   cuda_double::emulate_kernel(&scale, [](float* x, int n, float f) {
//     for (int i = 0; i < n; ++i) x[i] *= f;                  // device memory is host memory
//   });
//   // or, where the model needs the launch's shape: [](float* x, int n, float f, dim3 grid,
//   // dim3 block) { ... }
//
// A .cpp file may name a kernel defined in a .cu file by declaring its host stub, a plain
// function of the same name and signature (`void scale(float*, int, float);`). Models stay given
// across cuda_double::reset() (kernels are registered once per process); clear_kernel_models()
// drops them. A model runs under the double's lock and must not call the CUDA runtime (the call
// fails with cudaErrorNotPermitted, as in a host function); an exception out of a model fails
// the launch with cudaErrorLaunchFailure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cuda_double {

namespace detail {

// A kernel parameter's size and alignment, from which the double lays out the copied arguments.
struct kernel_parameter {
  std::size_t size;
  std::size_t align;
};
// Runs a model on the launch's copied arguments (one pointer per parameter).
using kernel_model = std::function<void(void* const* args, dim3 grid, dim3 block)>;
void set_kernel_model(const void* kernel, std::vector<kernel_parameter> parameters,
                      kernel_model model);

} // namespace detail

// Gives `kernel` (its host stub: `&my_kernel`) the model `model`, callable with the kernel's
// parameters, or with them followed by the launch's grid and block (dim3). Replaces an earlier
// model of the same kernel.
template <class... Args, class Model>
void emulate_kernel(void (*kernel)(Args...), Model model) {
  static_assert((std::is_trivially_copyable_v<Args> && ...),
                "kernel parameters are copied bytewise at launch, as CUDA does");
  constexpr bool with_shape = std::is_invocable_v<Model&, Args&..., dim3, dim3>;
  static_assert(with_shape || std::is_invocable_v<Model&, Args&...>,
                "the model must take the kernel's parameters (optionally then dim3 grid, block)");
  detail::set_kernel_model(
      reinterpret_cast<const void*>(kernel),
      {detail::kernel_parameter{sizeof(Args), alignof(Args)}...},
      [model = std::move(model)](void* const* args, dim3 grid, dim3 block) mutable {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          if constexpr (with_shape) {
            model(*static_cast<Args*>(args[I])..., grid, block);
          } else {
            static_cast<void>(args);
            model(*static_cast<Args*>(args[I])...);
          }
        }
        (std::index_sequence_for<Args...>{});
      });
}

// Drops every model given by emulate_kernel.
void clear_kernel_models();

// Inside a model: the running launch's attribute `id` (cudaLaunchKernelEx's, or set on its node
// with cudaGraphKernelNodeSetAttribute), zero where none was given. A model of a clustered kernel
// reads its cluster shape so (cudaLaunchAttributeClusterDimension), as a kernel reads
// %cluster_nctarank. Outside a model: zero.
cudaLaunchAttributeValue launch_attribute(cudaLaunchAttributeID id);

// How many times the model of `kernel` ran (eager launches and kernel nodes) since the last
// reset() or clear_kernel_models().
std::size_t kernel_runs(const void* kernel);
template <class... Args>
std::size_t kernel_runs(void (*kernel)(Args...)) {
  return kernel_runs(reinterpret_cast<const void*>(kernel));
}

// The name a kernel was registered with (its mangled device name), or "" for a kernel no .cu
// file registered.
std::string kernel_name(const void* kernel);

// Kernel nodes' copies of their launch arguments alive now (in graphs and executables), for leak
// checks: cudaGraphDestroy and cudaGraphExecDestroy free them.
std::size_t live_kernel_arguments();

} // namespace cuda_double
