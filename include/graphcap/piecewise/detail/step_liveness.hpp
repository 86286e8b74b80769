// graphcap/piecewise/detail/step_liveness.hpp - a piecewise step's one liveness check: every
// segment's inputs, before anything is launched. A liveness policy with a step_check
// (core/wing_contract.hpp, liveness_across_segments: liveness::check) asks about an allocation
// the segments share (weights, a KV cache) once per step instead of once per segment that reads
// it (and a segment with no node still has its inputs checked: what cap.input() declared there
// is the step's); the union is rebuilt when a segment's inputs changed (a capture, a rebind, an
// input declared late). Any other policy checks each segment in turn.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/wing_contract.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace graphcap::detail::piecewise {

template <class Liveness>
class step_liveness {
public:
  template <class Graph>
  void before_replay(const std::vector<std::unique_ptr<Graph>>& segments, cudaStream_t stream,
                     policy_key key) {
    for (const std::unique_ptr<Graph>& segment : segments) {
      policy_access::liveness(*segment, key).before_replay(stream);
    }
  }
};

template <class Liveness>
requires contract::checks_across_segments<Liveness>
class step_liveness<Liveness> {
public:
  template <class Graph>
  void before_replay(const std::vector<std::unique_ptr<Graph>>& segments, cudaStream_t stream,
                     policy_key /*key*/) {
    parts_.resize(segments.size()); // allocates only when the step grew
    for (std::size_t k = 0; k < segments.size(); ++k) {
      parts_[k] = &segments[k]->liveness_policy();
    }
    const std::span<const Liveness* const> parts{parts_};
    if (!check_.current(parts)) {
      check_.rebuild(parts);
    }
    check_.before_replay(stream);
  }

private:
  typename Liveness::step_check check_;
  std::vector<const Liveness*> parts_; // the segments' policies, refreshed at every step
};

} // namespace graphcap::detail::piecewise
