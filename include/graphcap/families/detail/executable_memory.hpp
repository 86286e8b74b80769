// graphcap/families/detail/executable_memory.hpp - what an executable graph takes of the device,
// for a family's ledger (families/ledger.hpp).
//
// What the driver does (H200, driver 580; benchmark/probes/executable_memory.cu): an executable's
// device memory comes from a per-context cache grown in 2 MiB pieces, about 2.05-2.12 KiB per
// kernel node and nothing measurable for memset nodes; destroying executables gives nothing back
// to cudaMemGetInfo, and instantiating again draws on the pieces kept. So one instantiation's
// drop of cudaMemGetInfo's free figure is lumpy (0, or a piece for a small graph) and is exact
// only in sum. graphcap therefore measures that drop around each instantiation it makes, under
// one process-wide lock (no two of graphcap's instantiations or measures overlap, so none counts
// another's), and spreads the family's measured sum over its keys by the nodes that take
// executable memory (every node but memset and empty nodes): per-key figures that add up to the
// measured total. A cudaMalloc by other code at the same moment still counts (nothing in CUDA
// tells an executable's bytes apart); the per-node rate learned from every measure so far (a
// process-wide running ratio, once large enough) is what a budget's prediction uses.
#pragma once

#include <graphcap/cuda/detail/cuda_check.hpp>
#include <graphcap/cuda/detail/executable_cache.hpp>
#include <graphcap/cuda/detail/node_kinds.hpp>
#include <graphcap/error.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace graphcap::detail::families {

/// The lock every measured instantiation of graphcap takes.
template <class = void>
std::mutex& instantiation_lock() noexcept {
  static std::mutex lock;
  return lock;
}

/// Bytes per node the H200 showed (2.125 KiB, the probe's upper figure) before any measure
/// (an H100 took about 3.2 KiB: the measured ratio replaces it as soon as it can be trusted).
inline constexpr std::size_t default_bytes_per_node = 2176;

/// The driver's piece of executable memory.
inline constexpr std::size_t executable_piece = std::size_t{2} << 20;

/// The process-wide running ratio of measured executable bytes to weighted nodes.
template <class = void>
struct basic_executable_rate {
  std::atomic<std::size_t> bytes{0};
  std::atomic<std::size_t> nodes{0};

  /// Bytes per weighted node: the measured ratio once 128 MiB or more were measured (where the
  /// slack of the driver's last 2 MiB piece is under 2% of it: whole pieces make the ratio err
  /// high over fewer), else the H200's figure. An H100 takes about 3.2 KiB per node (41943040
  /// bytes for 12,864 nodes, docs/results/2026-12-07-h100-session19): a budget's ladder raises
  /// the rate from its own measures where they prove it too low (byte_ladder.hpp).
  [[nodiscard]] double per_node() const noexcept {
    const std::size_t measured = bytes.load();
    const std::size_t counted = nodes.load();
    return measured >= 64 * executable_piece && counted > 0
               ? static_cast<double>(measured) / static_cast<double>(counted)
               : static_cast<double>(default_bytes_per_node);
  }
};
using executable_rate = basic_executable_rate<>;

/// The one running ratio of the process.
template <class = void>
executable_rate& process_rate() noexcept {
  static executable_rate rate;
  return rate;
}

/// The nodes of `graph` that take executable memory: every node but memset and empty nodes
/// (cuda/detail/node_kinds.hpp).
template <class = void>
std::size_t weighted_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");
  std::size_t weight = 0;
  for (std::size_t i = 0; i < count; ++i) {
    weight += kind_of(node_type_of(nodes[i])).executable_memory ? 1 : 0;
  }
  return weight;
}

/// Instantiates `graph` (its template kept) under the process-wide lock and returns the drop of
/// cudaMemGetInfo's free bytes meanwhile; `weight` (its weighted nodes) goes into the running
/// ratio with it.
template <class Graph>
std::size_t instantiate_locked(Graph& graph, std::size_t weight) {
  const std::lock_guard<std::mutex> held(instantiation_lock());
  const std::size_t before = device_free_bytes();
  graph.instantiate();
  const std::size_t after = device_free_bytes();
  const std::size_t taken = before > after ? before - after : 0;
  process_rate().bytes += taken;
  process_rate().nodes += weight;
  return taken;
}

/// The device current now, or what cudaGetDevice says went wrong.
template <class = void>
int current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

/// Throws state_error unless the current device is `device` (where `what`'s figures were
/// measured); -1: nothing was captured yet, any device will do.
template <class = void>
void require_device(int device, const char* what) {
  if (device < 0) {
    return;
  }
  const int current = current_device();
  if (current != device) {
    throw state_error(std::string{"graphcap: "} + what + " asked on device " +
                      std::to_string(current) + ", but its graphs were captured on device " +
                      std::to_string(device) + ", whose memory its figures are: cudaSetDevice(" +
                      std::to_string(device) + ") first");
  }
}

} // namespace graphcap::detail::families
