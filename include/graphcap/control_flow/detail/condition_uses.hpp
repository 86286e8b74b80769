// graphcap/control_flow/detail/condition_uses.hpp - the conditions that already serve a
// conditional node. CUDA lets a condition handle serve one node and refuses a second with a bare
// cudaErrorInvalidValue; graphcap keeps the conditions it handed to a node, to refuse the second
// use by name first.
#pragma once

#include <graphcap/config.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace graphcap::detail::control_flow {

/// One condition given to a node: in which capture, into which graph, by which construct.
struct condition_use {
  unsigned long long capture = 0; ///< the capture sequence's id (unique in the process)
  cudaGraph_t graph = nullptr;
  cudaGraphConditionalHandle handle = 0;
  const char* construct = ""; ///< "while_", "if_else", ... for messages
};

/// The conditions handed to a node, process-wide (a capture's scopes may be used from any
/// thread). Capture ids are never reused, so the uses of an ended capture match no later
/// condition; the oldest are dropped past `capacity`, which bounds the memory of a long-running
/// program (a capture with more conditional nodes than that falls back to CUDA's refusal).
template <class = void>
class basic_condition_uses {
public:
  static constexpr std::size_t capacity = 4096;

  /// The construct whose node `handle` of `graph` serves in `capture`, or nullptr.
  [[nodiscard]] static const char* find(unsigned long long capture, cudaGraph_t graph,
                                        cudaGraphConditionalHandle handle) {
    const std::lock_guard<std::mutex> lock{mutex()};
    for (const condition_use& use : uses()) {
      if (use.capture == capture && use.graph == graph && use.handle == handle) {
        return use.construct;
      }
    }
    return nullptr;
  }

  /// Records that `use.handle` now serves a node.
  static void add(const condition_use& use) {
    const std::lock_guard<std::mutex> lock{mutex()};
    std::vector<condition_use>& all = uses();
    if (all.size() >= capacity) {
      all.erase(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(capacity / 2));
    }
    all.push_back(use);
  }

private:
  static std::mutex& mutex() {
    static std::mutex instance;
    return instance;
  }
  static std::vector<condition_use>& uses() {
    static std::vector<condition_use> instance;
    return instance;
  }
};
using condition_uses = basic_condition_uses<>;

} // namespace graphcap::detail::control_flow
