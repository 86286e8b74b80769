// graphcap/annotations/detail/walk.hpp - node_discovery::graph_walk: the nodes a scope added,
// found by walking the capture's graph, for captures that cannot use CUPTI's creation callbacks.
//
// At scope entry, the capture stream's frontier (cuStreamGetCaptureInfo) and the frontier's
// existing dependents are recorded; at exit, only what was added is walked: the new dependents of
// the frontier and everything reachable from them (work forked to other streams inside the scope
// included). A scope entered with an empty frontier (at capture start) starts from the graph's
// new roots instead. Every query goes through graph_queries (the driver where it can).
#pragma once

#include <graphcap/annotations/detail/scopes.hpp>
#include <graphcap/cuda/detail/graph_queries.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace graphcap::detail::annotations {

/// The walk of one capture's scopes. Its vectors keep their capacity between scopes and
/// captures; a scope that tags more than 32 nodes also fills a hash set, one allocation per node.
template <class = void>
class basic_scope_walk {
public:
  /// Walks the capture whose graph is `graph`, asking through `queries`.
  void start(const graph_queries& queries, cudaGraph_t graph) noexcept {
    queries_ = queries;
    graph_ = graph;
  }

  /// At scope entry: records `stream`'s frontier and what already depends on it (or the graph's
  /// roots, if the frontier is empty) into `record`. False if the scope cannot record: `stream`
  /// is not in the capture `capture_id`, or CUDA refused a query. Throws std::bad_alloc.
  bool enter(cudaStream_t stream, unsigned long long capture_id, scope_record& record) {
    // Not the graph: start() was told it (asking for it again costs more than the rest).
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    const cudaGraphNode_t* frontier = nullptr;
    std::size_t count = 0;
    if (!queries_.capture_info(stream, status, id, frontier, count)) {
      return false;
    }
    if (status != cudaStreamCaptureStatusActive || id != capture_id) {
      return false; // a stream of another capture, or one this capture never joined
    }
    record.frontier_begin = static_cast<std::uint32_t>(boundary_.size());
    boundary_.insert(boundary_.end(), frontier, frontier + count);
    record.frontier_end = static_cast<std::uint32_t>(boundary_.size());
    const bool known = count == 0 ? append_roots(boundary_) : append_dependents_of_frontier(record);
    if (!known) {
      boundary_.resize(record.frontier_begin);
      return false;
    }
    record.known_end = static_cast<std::uint32_t>(boundary_.size());
    return true;
  }

  /// At scope exit: walks what the scope added (new dependents of its entry frontier, or new
  /// roots, and all that is reachable from them) and sets `record`'s nodes to them, in tagged().
  /// False, tagging nothing, where CUDA refused a query or memory ran out.
  bool exit(scope_record& record) noexcept {
    record.nodes_begin = static_cast<std::uint32_t>(tagged_.size());
    record.nodes_end = record.nodes_begin;
    try {
      const auto known_begin = boundary_.begin() + record.frontier_end;
      const auto known_end = boundary_.begin() + record.known_end;
      const auto is_known = [&](cudaGraphNode_t node) {
        return std::find(known_begin, known_end, node) != known_end;
      };
      pending_.clear();
      visited_.clear();
      bool walked = true;
      if (record.frontier_begin == record.frontier_end) {
        walked = append_roots(pending_);
      } else {
        for (std::uint32_t i = record.frontier_begin; walked && i < record.frontier_end; ++i) {
          walked = append_dependents(boundary_[i], pending_);
        }
      }
      std::erase_if(pending_, is_known);
      while (walked && !pending_.empty()) {
        const cudaGraphNode_t node = pending_.back();
        pending_.pop_back();
        if (first_visit(node, record.nodes_begin)) {
          tagged_.push_back(node);
          walked = append_dependents(node, pending_);
        }
      }
      if (walked) {
        record.nodes_end = static_cast<std::uint32_t>(tagged_.size());
        return true;
      }
    } catch (...) { // out of memory: this scope tags nothing
    }
    tagged_.resize(record.nodes_begin);
    return false;
  }

  /// The nodes the scopes tagged; a record's [nodes_begin, nodes_end) indexes them.
  [[nodiscard]] const std::vector<cudaGraphNode_t>& tagged() const noexcept { return tagged_; }

  /// Forgets the capture; keeps the vectors' capacity.
  void clear() noexcept {
    boundary_.clear();
    tagged_.clear();
    pending_.clear();
    visited_.clear();
    graph_ = nullptr;
  }

private:
  bool append_dependents_of_frontier(const scope_record& record) {
    for (std::uint32_t i = record.frontier_begin; i < record.frontier_end; ++i) {
      if (!append_dependents(boundary_[i], boundary_)) {
        return false;
      }
    }
    return true;
  }

  /// True if the walk that tags from `tagged_[from]` on has not met `node` yet. Most scopes add
  /// a few nodes: a linear search over them costs less than a hash set, which takes over (caught
  /// up with what was tagged so far) once a scope has tagged many.
  bool first_visit(cudaGraphNode_t node, std::uint32_t from) {
    constexpr std::size_t small_walk = 32;
    const auto walked = tagged_.begin() + from;
    const auto seen = static_cast<std::size_t>(tagged_.end() - walked);
    if (seen < small_walk) {
      return std::find(walked, tagged_.end(), node) == tagged_.end();
    }
    visited_.insert(walked + static_cast<std::ptrdiff_t>(visited_.size()), tagged_.end());
    return !visited_.contains(node);
  }

  /// Appends the current roots of the capture graph.
  bool append_roots(std::vector<cudaGraphNode_t>& out) {
    std::size_t count = 0;
    if (!queries_.roots(graph_, nullptr, count)) {
      return false;
    }
    if (count == 0) {
      return true;
    }
    const std::size_t old_size = out.size();
    out.resize(old_size + count);
    if (!queries_.roots(graph_, out.data() + old_size, count)) {
      out.resize(old_size);
      return false;
    }
    out.resize(old_size + std::min(count, out.size() - old_size));
    return true;
  }

  /// Appends the nodes that depend on `node`. Edge data is fetched too: without it CUDA refuses
  /// (cudaErrorLossyQuery) to list edges that carry some, e.g. programmatic launch edges. One
  /// call for the usual few dependents (CUDA fills what there is and says how many); a node with
  /// more is asked again for its count.
  bool append_dependents(cudaGraphNode_t node, std::vector<cudaGraphNode_t>& out) {
    constexpr std::size_t few = 8;
    std::array<cudaGraphNode_t, few> first{};
    std::array<cudaGraphEdgeData, few> first_edges{};
    std::size_t count = few;
    if (!queries_.dependents(node, first.data(), first_edges.data(), count)) {
      return false;
    }
    if (count < few) {
      out.insert(out.end(), first.begin(), first.begin() + static_cast<std::ptrdiff_t>(count));
      return true;
    }
    if (!queries_.dependents(node, nullptr, nullptr, count)) {
      return false;
    }
    const std::size_t old_size = out.size();
    out.resize(old_size + count);
    edge_scratch_.resize(count);
    if (!queries_.dependents(node, out.data() + old_size, edge_scratch_.data(), count)) {
      out.resize(old_size);
      return false;
    }
    out.resize(old_size + std::min(count, out.size() - old_size));
    return true;
  }

  graph_queries queries_;
  cudaGraph_t graph_ = nullptr;
  std::vector<cudaGraphNode_t> boundary_; // each scope's entry frontier and what it knew then
  std::vector<cudaGraphNode_t> tagged_;   // each closed scope's nodes, scope after scope
  std::vector<cudaGraphNode_t> pending_;  // scratch of exit()
  std::unordered_set<cudaGraphNode_t> visited_;
  std::vector<cudaGraphEdgeData> edge_scratch_;
};
using scope_walk = basic_scope_walk<>;

} // namespace graphcap::detail::annotations
