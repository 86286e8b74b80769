// bench_rebind: a 200-kernel graph (x += 1 over 1024 floats, as bench_step) in which 8 kernels
// read 8 input buffers of 1 MiB; every change of the 8 inputs moves them between two sets.
// Metric "rebind 8 inputs" (host time per change, the 8 nodes patched):
//   raw set-params         8 cudaGraphExecKernelNodeSetParams, parameters built beforehand (the
//                          baseline: what the same patch costs written by hand)
//   raw driver set-params  the same 8 patches through the driver's
//                          cuGraphExecKernelNodeSetParams (what the rebinder calls)
//   graphcap rebind        rebinder::rebind of 8 moves, sizes given, template deferred
//   rebind, template at once   the same, the template patched in the same call
//   rebind, sizes asked    deferred, each new buffer's size asked from CUDA
//   graphcap recapture()   the whole capture again, and the executable updated
// Metric "set a scalar" (host time per call): a 4-byte cudaMemcpyAsync by hand (the baseline)
// and graphcap::device_value::set. Metric "8 nodes off and on" (host time per switch of 8 nodes):
// 8 cudaGraphNodeSetEnabled by hand (the baseline) and graphcap::set_enabled of a node_tag.
// Metric "step with new inputs" (host time per step, synchronized):
//   copy into static inputs   8 cudaMemcpyAsync of 1 MiB into the graph's inputs, then the
//                             replay: PyTorch's way (the baseline)
//   graphcap rebind           the 8 inputs rebound, then the replay
#include <graphcap/graphcap.hpp>
#include <graphcap/rebind.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <array>
#include <cstddef>
#include <deque>
#include <vector>

namespace {

constexpr int kernels = 200;
constexpr int inputs = 8;
constexpr int elements = 1024;
constexpr int threads = 256;
constexpr std::size_t input_floats = (1U << 20) / sizeof(float); // 1 MiB

using input_set = std::array<float*, inputs>;

/// Kernel k reads input k / 25 where k % 25 == 0 (8 of the 200), else the main buffer.
void step(cudaStream_t stream, float* x, const input_set& in) {
  for (int k = 0; k < kernels; ++k) {
    float* target = k % (kernels / inputs) == 0 ? in[k / (kernels / inputs)] : x;
    bench::add_scalar<<<elements / threads, threads, 0, stream>>>(target, 1.0F, elements);
  }
}

/// The 8 kernel nodes of a template that read `in`, in input order.
std::vector<cudaGraphNode_t> input_nodes(cudaGraph_t graph, const input_set& in) {
  std::size_t count = 0;
  bench::check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  bench::check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> found(inputs);
  for (cudaGraphNode_t node : nodes) {
    cudaKernelNodeParams params{};
    bench::check(cudaGraphKernelNodeGetParams(node, &params), "cudaGraphKernelNodeGetParams");
    float* target = *static_cast<float**>(params.kernelParams[0]);
    for (int i = 0; i < inputs; ++i) {
      if (target == in[i]) {
        found[i] = node;
      }
    }
  }
  return found;
}

/// The moves from one set to the other, with their sizes.
std::vector<graphcap::rebinding> moves(const input_set& from, const input_set& to, bool sized) {
  std::vector<graphcap::rebinding> list;
  for (int i = 0; i < inputs; ++i) {
    list.push_back(
        {from[i], to[i], sized ? input_floats * sizeof(float) : graphcap::rebinding::unknown_size});
  }
  return list;
}

} // namespace

int main() {
  if (!bench::device_present("bench_rebind")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::device_array<float> x(elements);
  std::deque<bench::device_array<float>> buffers; // not movable: a deque never moves them
  for (int i = 0; i < 3 * inputs; ++i) {
    buffers.emplace_back(input_floats);
  }
  input_set a{};
  input_set b{};
  input_set requests{}; // the copy arm's sources
  for (int i = 0; i < inputs; ++i) {
    a[i] = buffers[i];
    b[i] = buffers[inputs + i];
    requests[i] = buffers[2 * inputs + i];
  }
  for (auto& buffer : buffers) {
    bench::check(cudaMemset(buffer, 0, input_floats * sizeof(float)), "cudaMemset");
  }

  // The hand-written patch: parameters built once, one slot per node.
  const bench::raw_graph raw(
      capture_stream, [&](cudaStream_t s) { step(s, x, a); }, true);
  const std::vector<cudaGraphNode_t> raw_nodes = input_nodes(raw.graph(), a);
  std::array<float*, inputs> slots{};
  std::array<void*, 3 * inputs> arguments{};
  float value = 1.0F;
  int count = elements;
  std::vector<cudaKernelNodeParams> raw_params(inputs);
  for (int i = 0; i < inputs; ++i) {
    bench::check(cudaGraphKernelNodeGetParams(raw_nodes[i], &raw_params[i]), "get params");
    arguments[3 * i] = &slots[i];
    arguments[3 * i + 1] = &value;
    arguments[3 * i + 2] = &count;
    raw_params[i].kernelParams = &arguments[3 * i];
  }
  bool raw_at_b = false;
  // The driver's entry point, as graphcap resolves it (the runtime's call wraps it).
  PFN_cuGraphExecKernelNodeSetParams_v12000 driver_set = nullptr;
  cudaDriverEntryPointQueryResult found{};
  bench::check(cudaGetDriverEntryPointByVersion("cuGraphExecKernelNodeSetParams",
                                                reinterpret_cast<void**>(&driver_set), 12000,
                                                cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion");
  const bench::raw_graph raw_driver(
      capture_stream, [&](cudaStream_t s) { step(s, x, a); }, true);
  const std::vector<cudaGraphNode_t> driver_nodes = input_nodes(raw_driver.graph(), a);
  std::vector<CUDA_KERNEL_NODE_PARAMS_v2> driver_params(inputs);
  std::array<float*, inputs> driver_slots{};
  std::array<void*, 3 * inputs> driver_arguments{};
  for (int i = 0; i < inputs; ++i) {
    driver_params[i] = {};
    driver_params[i].func = nullptr;
    cudaKernelNodeParams runtime{};
    bench::check(cudaGraphKernelNodeGetParams(driver_nodes[i], &runtime), "get params");
    bench::check(cudaGetFuncBySymbol(&driver_params[i].func, runtime.func), "cudaGetFuncBySymbol");
    driver_params[i].gridDimX = runtime.gridDim.x;
    driver_params[i].gridDimY = runtime.gridDim.y;
    driver_params[i].gridDimZ = runtime.gridDim.z;
    driver_params[i].blockDimX = runtime.blockDim.x;
    driver_params[i].blockDimY = runtime.blockDim.y;
    driver_params[i].blockDimZ = runtime.blockDim.z;
    driver_params[i].sharedMemBytes = runtime.sharedMemBytes;
    driver_arguments[3 * i] = &driver_slots[i];
    driver_arguments[3 * i + 1] = &value;
    driver_arguments[3 * i + 2] = &count;
    driver_params[i].kernelParams = &driver_arguments[3 * i];
  }
  bool driver_at_b = false;

  const std::vector<graphcap::rebind_input> registered(a.begin(), a.end());
  using binder = graphcap::rebinder<graphcap::lean_graph>;
  graphcap::lean_graph deferred_graph{graphcap::keep_graph};
  deferred_graph.capture(capture_stream, [&](cudaStream_t s) { step(s, x, a); });
  deferred_graph.instantiate();
  binder deferred{deferred_graph, registered, graphcap::template_patch::deferred};
  graphcap::lean_graph at_once_graph{graphcap::keep_graph};
  at_once_graph.capture(capture_stream, [&](cudaStream_t s) { step(s, x, a); });
  at_once_graph.instantiate();
  binder at_once{at_once_graph, registered};
  graphcap::lean_graph asked_graph{graphcap::keep_graph};
  asked_graph.capture(capture_stream, [&](cudaStream_t s) { step(s, x, a); });
  asked_graph.instantiate();
  binder asked{asked_graph, registered, graphcap::template_patch::deferred};
  graphcap::lean_graph recaptured;
  recaptured.capture(capture_stream, [&](cudaStream_t s) { step(s, x, a); });
  bool recaptured_at_b = false;

  const std::vector<graphcap::rebinding> a_to_b = moves(a, b, true);
  const std::vector<graphcap::rebinding> b_to_a = moves(b, a, true);
  const std::vector<graphcap::rebinding> a_to_b_asked = moves(a, b, false);
  const std::vector<graphcap::rebinding> b_to_a_asked = moves(b, a, false);
  bool deferred_at_b = false;
  bool at_once_at_b = false;
  bool asked_at_b = false;
  const auto toggle = [](binder& inputs_of, bool& at_b,
                         const std::vector<graphcap::rebinding>& there,
                         const std::vector<graphcap::rebinding>& back) {
    inputs_of.rebind(at_b ? back : there);
    at_b = !at_b;
  };

  const int calls = 200;
  std::vector<double> raw_times;
  std::vector<double> driver_times;
  std::vector<double> deferred_times;
  std::vector<double> at_once_times;
  std::vector<double> asked_times;
  std::vector<double> recapture_times;
  bench::report report("bench_rebind",
                       "host time (us): 8 inputs of a 200-kernel graph moved, or a step with new "
                       "inputs (synchronized)");
  bench::interleave(
      bench::scaled(5), 1,
      {bench::per_call_arm(raw_times, stream, calls,
                           [&] {
                             raw_at_b = !raw_at_b;
                             for (int i = 0; i < inputs; ++i) {
                               slots[i] = raw_at_b ? b[i] : a[i];
                               bench::check(cudaGraphExecKernelNodeSetParams(
                                                raw.exec(), raw_nodes[i], &raw_params[i]),
                                            "cudaGraphExecKernelNodeSetParams");
                             }
                           }),
       bench::per_call_arm(driver_times, stream, calls,
                           [&] {
                             driver_at_b = !driver_at_b;
                             for (int i = 0; i < inputs; ++i) {
                               driver_slots[i] = driver_at_b ? b[i] : a[i];
                               if (driver_set(raw_driver.exec(), driver_nodes[i],
                                              &driver_params[i]) != CUDA_SUCCESS) {
                                 bench::check(cudaErrorUnknown, "cuGraphExecKernelNodeSetParams");
                               }
                             }
                           }),
       bench::per_call_arm(deferred_times, stream, calls,
                           [&] { toggle(deferred, deferred_at_b, a_to_b, b_to_a); }),
       bench::per_call_arm(at_once_times, stream, calls,
                           [&] { toggle(at_once, at_once_at_b, a_to_b, b_to_a); }),
       bench::per_call_arm(asked_times, stream, calls,
                           [&] { toggle(asked, asked_at_b, a_to_b_asked, b_to_a_asked); }),
       bench::per_call_arm(recapture_times, stream, 20, [&] {
         recaptured_at_b = !recaptured_at_b;
         static_cast<void>(recaptured.recapture(
             capture_stream, [&](cudaStream_t s) { step(s, x, recaptured_at_b ? b : a); }));
       })});
  report.add("rebind 8 inputs", kernels, "raw set-params", "us", raw_times);
  report.add("rebind 8 inputs", kernels, "raw driver set-params", "us", driver_times);
  report.add("rebind 8 inputs", kernels, "graphcap rebind", "us", deferred_times);
  report.add("rebind 8 inputs", kernels, "rebind, template at once", "us", at_once_times);
  report.add("rebind 8 inputs", kernels, "rebind, sizes asked", "us", asked_times);
  report.add("rebind 8 inputs", kernels, "graphcap recapture()", "us", recapture_times);

  // A scalar and node switches.
  graphcap::device_value<int> scalar{0};
  int* raw_scalar = nullptr;
  bench::check(cudaMalloc(reinterpret_cast<void**>(&raw_scalar), sizeof(int)), "cudaMalloc");
  int next = 0;
  graphcap::lean_graph switched{graphcap::keep_graph};
  switched.capture(capture_stream, [&](cudaStream_t s) { step(s, x, a); });
  switched.instantiate();
  const std::vector<cudaGraphNode_t> switch_nodes = input_nodes(switched.raw_graph(), a);
  // The 8 input nodes, as tag_nodes would have tagged them during the capture.
  const graphcap::node_tag eight{&switched, switched.generation(), switch_nodes};
  const bench::raw_graph raw_switched(
      capture_stream, [&](cudaStream_t s) { step(s, x, a); }, true);
  const std::vector<cudaGraphNode_t> raw_switch_nodes = input_nodes(raw_switched.graph(), a);
  bool raw_on = true;
  bool graphcap_on = true;
  std::vector<double> raw_scalar_times;
  std::vector<double> scalar_times;
  std::vector<double> raw_switch_times;
  std::vector<double> switch_times;
  bench::interleave(
      bench::scaled(5), 1,
      {bench::per_call_arm(raw_scalar_times, stream, calls,
                           [&] {
                             ++next;
                             bench::check(cudaMemcpyAsync(raw_scalar, &next, sizeof next,
                                                          cudaMemcpyHostToDevice, stream),
                                          "cudaMemcpyAsync");
                           }),
       bench::per_call_arm(scalar_times, stream, calls, [&] { scalar.set(++next, stream); }),
       bench::per_call_arm(raw_switch_times, stream, calls,
                           [&] {
                             raw_on = !raw_on;
                             for (cudaGraphNode_t node : raw_switch_nodes) {
                               bench::check(cudaGraphNodeSetEnabled(raw_switched.exec(), node,
                                                                    raw_on ? 1U : 0U),
                                            "cudaGraphNodeSetEnabled");
                             }
                           }),
       bench::per_call_arm(switch_times, stream, calls, [&] {
         graphcap_on = !graphcap_on;
         graphcap::set_enabled(switched, eight, graphcap_on);
       })});
  bench::check(cudaFree(raw_scalar), "cudaFree");
  report.add("set a scalar", 1, "raw cudaMemcpyAsync", "us", raw_scalar_times);
  report.add("set a scalar", 1, "graphcap device_value::set", "us", scalar_times);
  report.add("8 nodes off and on", kernels, "raw cudaGraphNodeSetEnabled", "us", raw_switch_times);
  report.add("8 nodes off and on", kernels, "graphcap set_enabled", "us", switch_times);

  // A step with new inputs: copied into the static inputs, or rebound.
  if (deferred_at_b) {
    deferred.rebind(b_to_a);
    deferred_at_b = false;
  }
  graphcap::lean_graph copied;
  copied.capture(capture_stream, [&](cudaStream_t s) { step(s, x, a); });
  copied.upload(stream);
  deferred_graph.upload(stream);
  std::vector<double> copy_steps;
  std::vector<double> rebind_steps;
  const int steps = 200;
  bench::interleave(bench::scaled(3), 1,
                    {[&](bool record) {
                       bench::synchronized_steps(stream, steps, copy_steps, record, [&] {
                         for (int i = 0; i < inputs; ++i) {
                           bench::check(cudaMemcpyAsync(a[i], requests[i],
                                                        input_floats * sizeof(float),
                                                        cudaMemcpyDeviceToDevice, stream),
                                        "cudaMemcpyAsync");
                         }
                         copied.replay(stream);
                       });
                     },
                     [&](bool record) {
                       bench::synchronized_steps(stream, steps, rebind_steps, record, [&] {
                         toggle(deferred, deferred_at_b, a_to_b, b_to_a);
                         deferred_graph.replay(stream);
                       });
                     }});
  report.add("step with new inputs", kernels, "copy into static inputs", "us", copy_steps);
  report.add("step with new inputs", kernels, "graphcap rebind", "us", rebind_steps);
  report.finish();
  return 0;
}
