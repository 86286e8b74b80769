// Runtime tests: annot::on on graphs the host can execute (memset, memcpy, host functions,
// events), run on the real runtime (gpu.*) and on the CUDA test double (double.*), each capturing
// test once per node discovery (CUPTI's creation callbacks, the graph walk). Where CUPTI is held
// by another tool (the suite under compute-sanitizer) ids are 0, the walk is used, and these
// tests check the scopes alone; test/annotations/annotations_ids.gpu.cpp checks the ids against
// CUPTI's activity records.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include <cupti.h>

#include "annotation_helpers.hpp"
#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace gc = graphcap;

namespace {

using annotated_graph = gc::graph_with<gc::annot::on>;
using annotated_scope = annotated_graph::scope;
static_assert(std::is_same_v<annotated_graph, gc::basic_graph<gc::mode::global, gc::pool::off,
                                                              gc::annot::on, gc::liveness::off>>);
static_assert(
    std::is_same_v<decltype(std::declval<annotated_scope&>().mark("x")), gc::annot::on::marker>);

constexpr std::size_t bytes = 256;

void CUDART_CB do_nothing(void* /*data*/) {}

/// Annotations whose name() is `name`.
std::vector<gc::node_annotation> named(const std::vector<gc::node_annotation>& all,
                                       std::string_view name) {
  std::vector<gc::node_annotation> found;
  std::copy_if(all.begin(), all.end(), std::back_inserter(found),
               [&](const gc::node_annotation& node) { return node.name() == name; });
  return found;
}

std::size_t count_type(const std::vector<gc::node_annotation>& all, cudaGraphNodeType type) {
  return static_cast<std::size_t>(std::count_if(
      all.begin(), all.end(), [&](const gc::node_annotation& node) { return node.type == type; }));
}

bool has_ids(annotated_graph& graph) {
  return graph.annot_policy().id_source() != gc::node_id_source::none;
}

/// The node discovery a test case runs with: constructed at its top, it runs the test case once
/// per discovery (Catch's GENERATE), that one preferred for the captures, and restores the
/// preference after.
class discovery_under_test {
public:
  discovery_under_test()
      : chosen_(GENERATE(gc::node_discovery::creation_callbacks, gc::node_discovery::graph_walk)),
        preferred_(chosen_) {}

  [[nodiscard]] gc::node_discovery chosen() const noexcept { return chosen_; }

  /// What `graph`'s capture must have used: the chosen one, or the walk where CUPTI is held by
  /// another tool.
  [[nodiscard]] gc::node_discovery expected(annotated_graph& graph) const {
    return graph.annot_policy().id_source() == gc::node_id_source::cupti
               ? chosen_
               : gc::node_discovery::graph_walk;
  }

  [[nodiscard]] bool callbacks(annotated_graph& graph) const {
    return expected(graph) == gc::node_discovery::creation_callbacks;
  }

private:
  gc::node_discovery chosen_;
  gctest::prefer_discovery preferred_;
};

/// A user's own CUPTI callback subscriber, as a profiler in the same process would hold it.
class user_subscriber {
public:
  user_subscriber() : result_(cuptiSubscribe(&handle_, &ignore, nullptr)) {}
  user_subscriber(const user_subscriber&) = delete;
  user_subscriber& operator=(const user_subscriber&) = delete;
  ~user_subscriber() {
    if (result_ == CUPTI_SUCCESS) {
      static_cast<void>(cuptiUnsubscribe(handle_));
    }
  }
  [[nodiscard]] CUptiResult result() const noexcept { return result_; }

private:
  static void CUPTIAPI ignore(void* /*user*/, CUpti_CallbackDomain /*domain*/,
                              CUpti_CallbackId /*id*/, const void* /*data*/) {}
  CUpti_SubscriberHandle handle_ = nullptr;
  CUptiResult result_;
};

/// Whether CUPTI's callback subscriber is free now (taken and given back at once to find out),
/// asked in relaxed capture mode so that a capture in progress is left alone.
bool subscriber_free() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_REQUIRE(cudaThreadExchangeStreamCaptureMode(&mode));
  const bool free = user_subscriber{}.result() == CUPTI_SUCCESS;
  CUDA_REQUIRE(cudaThreadExchangeStreamCaptureMode(&mode));
  return free;
}

/// A memset node on `stream`.
void memset_on(cudaStream_t stream, gctest::device_buffer<unsigned char>& buffer, int value = 0) {
  CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), value, buffer.bytes(), stream));
}

/// Captures a scope with a memset, then throws from the work: a capture that fails.
void capture_that_throws(annotated_graph& graph, cudaStream_t stream,
                         gctest::device_buffer<unsigned char>& buffer) {
  graph.capture(stream, [&](annotated_scope& cap) {
    auto region = cap.mark("doomed");
    memset_on(cap.stream(), buffer);
    throw std::runtime_error("work failed");
  });
}

/// A capture stream, a side stream to fork work to, and a buffer for each.
struct forked_streams {
  gctest::stream stream;
  gctest::stream side;
  gctest::event forked;
  gctest::event joined;
  gctest::device_buffer<unsigned char> first{bytes};
  gctest::device_buffer<unsigned char> second{bytes};

  /// `side` follows what `capture` has captured so far.
  void fork(cudaStream_t capture) {
    CUDA_REQUIRE(cudaEventRecord(forked, capture));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, forked, 0));
  }
  /// `capture` waits for what `side` has captured so far.
  void join(cudaStream_t capture) {
    CUDA_REQUIRE(cudaEventRecord(joined, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(capture, joined, 0));
  }
};

} // namespace

TEST_CASE("a named scope tags the nodes captured inside it and only those") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gctest::device_buffer<unsigned char> copy(bytes);
  annotated_graph graph;
  graph.capture(stream, [&](annotated_scope& cap) {
    memset_on(cap.stream(), buffer); // before: untagged
    {
      auto attention = cap.mark("attention");
      CHECK(attention.active());
      memset_on(cap.stream(), buffer, 1);
      CUDA_REQUIRE(
          cudaMemcpyAsync(copy.get(), buffer.get(), bytes, cudaMemcpyDeviceToDevice, cap.stream()));
      CUDA_REQUIRE(cudaLaunchHostFunc(cap.stream(), do_nothing, nullptr));
    }
    memset_on(cap.stream(), buffer, 2); // after: untagged
  });
  CHECK(graph.annot_policy().discovery() == discovery.expected(graph));
  const std::vector<gc::node_annotation>& all = graph.annotations();
  REQUIRE(all.size() == 3);
  CHECK(named(all, "attention").size() == 3);
  CHECK(count_type(all, cudaGraphNodeTypeMemset) == 1);
  CHECK(count_type(all, cudaGraphNodeTypeMemcpy) == 1);
  CHECK(count_type(all, cudaGraphNodeTypeHost) == 1);
  CHECK(graph.node_count() == 5);
  for (const gc::node_annotation& node : all) {
    CHECK(node.values.size() == 1);
    CHECK(node.kernel.empty());
    if (has_ids(graph)) {
      // Replayed ids keep the template node's index in their low 32 bits.
      CHECK(node.id != 0);
      CHECK((node.id & 0xffffffffU) == (node.template_id & 0xffffffffU));
      CHECK((node.template_id >> 32U) == (all.front().template_id >> 32U));
    } else {
      CHECK(node.id == 0);
    }
  }
  graph.replay(stream);
  stream.synchronize();
  unsigned char copied = 0;
  CUDA_REQUIRE(cudaMemcpy(&copied, copy.get(), 1, cudaMemcpyDeviceToHost));
  CHECK(copied == 1);
}

TEST_CASE("nested scopes merge key by key with the inner scope winning") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  graph.capture(stream, [&](annotated_scope& cap) {
    auto block = cap.mark({{"name", "block"}, {"layer", "3"}});
    memset_on(cap.stream(), buffer, 1); // block
    {
      auto mlp = cap.mark("mlp");
      memset_on(cap.stream(), buffer, 2); // mlp, layer 3
      {
        auto deep = cap.mark({{"layer", "4"}, {"phase", "up"}});
        memset_on(cap.stream(), buffer, 3); // mlp, layer 4, phase up
      }
    }
    memset_on(cap.stream(), buffer, 4); // block again
  });
  const std::vector<gc::node_annotation>& all = graph.annotations();
  REQUIRE(all.size() == 4);
  const auto blocks = named(all, "block");
  const auto mlps = named(all, "mlp");
  REQUIRE(blocks.size() == 2);
  REQUIRE(mlps.size() == 2);
  for (const gc::node_annotation& node : blocks) {
    CHECK(node.value("layer") == "3");
    CHECK(node.values.size() == 2);
  }
  const auto deepest = std::find_if(mlps.begin(), mlps.end(), [](const gc::node_annotation& n) {
    return n.value("phase") == "up";
  });
  REQUIRE(deepest != mlps.end());
  CHECK(deepest->value("layer") == "4");
  CHECK(deepest->values.size() == 3);
  const auto middle = std::find_if(mlps.begin(), mlps.end(), [](const gc::node_annotation& n) {
    return n.value("phase").empty();
  });
  REQUIRE(middle != mlps.end());
  CHECK(middle->value("layer") == "3");
}

TEST_CASE("work forked to another stream inside a scope is tagged") {
  const discovery_under_test discovery;
  forked_streams s;
  gctest::event recorded;
  annotated_graph graph;
  graph.capture(s.stream, [&](annotated_scope& cap) {
    memset_on(cap.stream(), s.first); // untagged
    auto region = cap.mark("fork");
    s.fork(cap.stream());
    memset_on(s.side, s.second, 1);                                // on the joined stream
    CUDA_REQUIRE(cudaLaunchHostFunc(s.side, do_nothing, nullptr)); // a host node there
    CUDA_REQUIRE(cudaEventRecordWithFlags(recorded, s.side, cudaEventRecordExternal)); // event
    memset_on(cap.stream(), s.first, 2);
    s.join(cap.stream());
  });
  const std::vector<gc::node_annotation>& all = graph.annotations();
  CHECK(all.size() == 4);
  CHECK(named(all, "fork").size() == all.size());
  CHECK(count_type(all, cudaGraphNodeTypeMemset) == 2);
  CHECK(count_type(all, cudaGraphNodeTypeHost) == 1);
  CHECK(count_type(all, cudaGraphNodeTypeEventRecord) == 1);
}

TEST_CASE("the first scope at capture start finds its nodes among the new roots") {
  const discovery_under_test discovery;
  forked_streams s;
  annotated_graph graph;
  graph.capture(s.stream, [&](annotated_scope& cap) {
    auto start = cap.mark("start"); // empty frontier
    s.fork(cap.stream());
    memset_on(cap.stream(), s.first, 1); // a root
    memset_on(s.side, s.second, 2);      // another root, on the joined stream
    memset_on(s.side, s.second, 3);      // its dependent
    s.join(cap.stream());
  });
  CHECK(graph.annotations().size() == 3);
  CHECK(named(graph.annotations(), "start").size() == 3);
}

TEST_CASE("dependents the frontier had before the scope are not swept into it") {
  const discovery_under_test discovery;
  forked_streams s;
  annotated_graph graph;
  graph.capture(s.stream, [&](annotated_scope& cap) {
    memset_on(cap.stream(), s.first); // the frontier at scope entry
    s.fork(cap.stream());
    memset_on(s.side, s.second, 1); // an existing dependent of that frontier
    {
      auto only = cap.mark("only");
      memset_on(cap.stream(), s.first, 2);
    }
    s.join(cap.stream());
  });
  REQUIRE(graph.annotations().size() == 1);
  CHECK(graph.annotations().front().name() == "only");
}

TEST_CASE("a frontier with more dependents than one query returns is walked in full") {
  const discovery_under_test discovery;
  // Dependents come back 8 at a time from one query; a node with more is asked again. Here the
  // entry frontier already has 9 dependents (not the scope's), and gets 10 more inside it.
  constexpr int before = 9;
  constexpr int inside = 10;
  gctest::stream stream;
  std::vector<gctest::stream> sides(before + inside);
  std::vector<gctest::event> joins(before + inside);
  gctest::event forked;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  graph.capture(stream, [&](annotated_scope& cap) {
    memset_on(cap.stream(), buffer); // the frontier at scope entry
    CUDA_REQUIRE(cudaEventRecord(forked, cap.stream()));
    const auto fork_to = [&](std::size_t i) {
      CUDA_REQUIRE(cudaStreamWaitEvent(sides[i], forked, 0));
      memset_on(sides[i], buffer, static_cast<int>(i));
      CUDA_REQUIRE(cudaEventRecord(joins[i], sides[i]));
    };
    for (std::size_t i = 0; i < before; ++i) {
      fork_to(i);
    }
    {
      auto wide = cap.mark("wide");
      for (std::size_t i = before; i < sides.size(); ++i) {
        fork_to(i);
      }
    }
    for (const gctest::event& join : joins) {
      CUDA_REQUIRE(cudaStreamWaitEvent(cap.stream(), join, 0));
    }
  });
  const std::vector<gc::node_annotation>& all = graph.annotations();
  CHECK(all.size() == static_cast<std::size_t>(inside));
  CHECK(named(all, "wide").size() == all.size());
  CHECK(count_type(all, cudaGraphNodeTypeMemset) == inside);
}

TEST_CASE("an empty scope tags nothing and a scope left open closes at the end of the capture") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  auto cap = graph.begin_capture(stream);
  { auto nothing = cap.mark("nothing"); }
  auto open = cap.mark("open");
  memset_on(cap.stream(), buffer);
  cap.end();
  open.close(); // does nothing: the end of the capture closed the scope
  REQUIRE(graph.annotations().size() == 1);
  CHECK(graph.annotations().front().name() == "open");
}

TEST_CASE("a scope outside a capture does nothing") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::stream other_stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  gc::annot::on loose; // the policy of no graph: it never captures
  {
    auto before = loose.mark(stream, "before");
    CHECK_FALSE(before.active());
  }
  graph.capture(stream, [&](annotated_scope& cap) {
    // A policy that is not capturing, on a stream that is (in another graph's capture).
    auto foreign = loose.mark(cap.stream(), "foreign");
    CHECK_FALSE(foreign.active());
    memset_on(other_stream, buffer); // runs eagerly, not captured
    memset_on(cap.stream(), buffer);
  });
  CHECK(graph.annotations().empty());
  CHECK(loose.annotations().empty());
  stream.synchronize();
  other_stream.synchronize();

  // A capturing policy asked for a scope on a stream that never joined its capture: the core
  // only passes its capture's streams, and the policy refuses any other (driven here through its
  // hooks, as the core drives it).
  gc::annot::on driven;
  driven.before_capture(stream);
  CUDA_REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  driven.after_capture_begin(stream);
  {
    auto stray = driven.mark(other_stream, "stray");
    CHECK_FALSE(stray.active());
    memset_on(stream, buffer);
  }
  driven.before_capture_end(stream);
  cudaGraph_t captured = nullptr;
  CUDA_REQUIRE(cudaStreamEndCapture(stream, &captured));
  driven.after_capture_end(captured);
  CHECK(driven.annotations().empty());
  {
    auto after = driven.mark(stream, "after"); // its capture has ended
    CHECK_FALSE(after.active());
  }
  driven.on_reset();
  CUDA_REQUIRE(cudaGraphDestroy(captured));
}

TEST_CASE("a failed capture leaves no annotations behind") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::stream side;
  gctest::event forked;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::clear_annotations();
  annotated_graph graph;

  SECTION("an exception in the work") {
    CHECK_THROWS_AS(capture_that_throws(graph, stream, buffer), std::runtime_error);
  }
  SECTION("a fork never joined") {
    CHECK_THROWS_AS(graph.capture(stream,
                                  [&](annotated_scope& cap) {
                                    auto region = cap.mark("doomed");
                                    memset_on(cap.stream(), buffer);
                                    CUDA_REQUIRE(cudaEventRecord(forked, cap.stream()));
                                    CUDA_REQUIRE(cudaStreamWaitEvent(side, forked, 0));
                                    memset_on(side, buffer, 1);
                                  }),
                    gc::capture_error);
  }
  CHECK(graph.empty());
  CHECK(graph.annotations().empty());
  CHECK(gc::recorded_annotations().empty());
  CHECK_FALSE(gctest::capturing(stream));
  // The graph captures and annotates again.
  graph.capture(stream, [&](annotated_scope& cap) {
    auto region = cap.mark("second try");
    memset_on(cap.stream(), buffer);
  });
  REQUIRE(graph.annotations().size() == 1);
  CHECK(graph.annotations().front().name() == "second try");
}

TEST_CASE("annotations of several graphs accumulate until cleared") {
  // Rewritten with the registry's lifetime rule (annotations/registry.hpp): a reset graph's
  // annotations used to stay published; now they go with its executable, unless a trace recorder
  // records, and then they stay until it stops (the second section asserts what the first
  // version of this test did, under a recorder).
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::clear_annotations();
  annotated_graph first;
  annotated_graph second;
  const auto capture_one = [&](annotated_graph& graph, const char* name) {
    graph.capture(stream, [&](annotated_scope& cap) {
      auto region = cap.mark(name);
      memset_on(cap.stream(), buffer);
    });
  };
  capture_one(first, "first");
  capture_one(second, "second");
  if (!has_ids(first)) {
    CHECK(gc::recorded_annotations().empty()); // without ids nothing is published
    return;
  }
  CHECK(gc::recorded_annotations().size() == 2); // both graphs are alive
  SECTION("a graph's reset withdraws what it published") {
    first.reset();
    CHECK(first.annotations().empty());
    CHECK(gc::recorded_annotations().size() == 1);
    capture_one(first, "first again");
    CHECK(gc::recorded_annotations().size() == 2);
  }
  SECTION("while a trace recorder records, a reset graph's annotations stay until it stops") {
    gc::trace_recorder recorder;
    // Traces need CUPTI; ids from the driver's tools id (CUPTI held by a tool) have no recorder.
    const bool keeps = recorder.available();
    CHECK(keeps == (first.annot_policy().id_source() == gc::node_id_source::cupti));
    first.reset(); // traces may still need what it published
    CHECK(first.annotations().empty());
    CHECK(gc::recorded_annotations().size() == (keeps ? 2U : 1U));
    capture_one(first, "first again");
    CHECK(gc::recorded_annotations().size() == (keeps ? 3U : 2U));
    recorder.stop(); // no kernel ran: the recorder needs none of what was kept
    CHECK(gc::recorded_annotations().size() == 2);
  }
  const std::uint64_t id = first.annotations().front().id;
  const auto found = gc::find_annotation(id);
  REQUIRE(found.has_value());
  CHECK(found->name() == "first again");
  gc::clear_annotations();
  CHECK(gc::recorded_annotations().empty());
  CHECK_FALSE(gc::find_annotation(id).has_value());
  CHECK(first.annotations().size() == 1); // the graph keeps its own
}

TEST_CASE("instantiating again re-keys the ids to the new executable") {
  // Rewritten with the registry's lifetime rule: the first executable's annotations used to stay
  // findable after it was replaced; now only while a trace recorder records.
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::clear_annotations();
  annotated_graph graph{gc::keep_graph};
  graph.capture(stream, [&](annotated_scope& cap) {
    auto region = cap.mark("kept");
    memset_on(cap.stream(), buffer);
  });
  REQUIRE(graph.annotations().size() == 1);
  if (!has_ids(graph)) {
    CHECK(graph.annotations().front().id == 0);
    return;
  }
  CHECK(graph.annotations().front().id == graph.annotations().front().template_id);
  graph.instantiate();
  const std::uint64_t first_id = graph.annotations().front().id;
  SECTION("the replaced executable's annotations go with it") {
    graph.instantiate();
    const std::uint64_t second_id = graph.annotations().front().id;
    CHECK(first_id != second_id);
    CHECK((first_id & 0xffffffffU) == (second_id & 0xffffffffU));
    CHECK_FALSE(gc::find_annotation(first_id).has_value());
    CHECK(gc::find_annotation(second_id).has_value());
  }
  SECTION("while a trace recorder records, the replaced executable's stay until it stops") {
    gc::trace_recorder recorder;
    graph.instantiate();
    const std::uint64_t second_id = graph.annotations().front().id;
    CHECK(first_id != second_id);
    CHECK((first_id & 0xffffffffU) == (second_id & 0xffffffffU));
    CHECK(gc::find_annotation(first_id).has_value() == recorder.available()); // its traces
    CHECK(gc::find_annotation(second_id).has_value());
    recorder.stop();
    CHECK_FALSE(gc::find_annotation(first_id).has_value());
    CHECK(gc::find_annotation(second_id).has_value());
  }
}

TEST_CASE("an executable's annotations leave the registry when the executable goes") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::clear_annotations();
  const auto memsets = [&buffer](int count) {
    return [&buffer, count](auto& cap) {
      auto region = cap.mark("memsets");
      for (int i = 0; i < count; ++i) {
        memset_on(cap.stream(), buffer, i);
      }
    };
  };
  const auto executables = [] { return gc::detail::registry().executables(); };
  const auto published = [](std::uint64_t id) { return gc::find_annotation(id).has_value(); };
  annotated_graph graph;
  graph.capture(stream, memsets(2));
  if (!has_ids(graph)) {
    CHECK(executables() == 0); // without ids nothing is published
    return;
  }
  const std::uint64_t id = graph.annotations().front().id;
  REQUIRE(published(id));
  REQUIRE(executables() == 1);

  SECTION("reset") {
    graph.reset();
    CHECK_FALSE(published(id));
    CHECK(executables() == 0);
  }
  SECTION("destruction, after a move that hands the entry on") {
    {
      annotated_graph moved = std::move(graph);
      graph = annotated_graph{}; // the moved-from graph has nothing left to withdraw
      CHECK(published(id));
      CHECK(executables() == 1);
    }
    CHECK_FALSE(published(id));
    CHECK(executables() == 0);
  }
  SECTION("another graph moved over it") {
    annotated_graph other;
    other.capture(stream, memsets(1));
    const std::uint64_t other_id = other.annotations().front().id;
    CHECK(executables() == 2);
    graph = std::move(other);
    CHECK_FALSE(published(id));
    CHECK(published(other_id));
    CHECK(executables() == 1);
  }
  SECTION("a recapture instantiated anew") {
    const gc::update_result result = graph.recapture(stream, memsets(3)); // another topology
    CHECK(result.outcome == gc::update_outcome::reinstantiated);
    REQUIRE(graph.annotations().size() == 3);
    CHECK_FALSE(published(id));
    CHECK(published(graph.annotations().front().id));
    CHECK(executables() == 1);
  }
  SECTION("a recapture updated in place publishes the new capture's under the same ids") {
    const gc::update_result result = graph.recapture(stream, [&](auto& cap) {
      auto region = cap.mark("updated");
      memset_on(cap.stream(), buffer, 7);
      memset_on(cap.stream(), buffer, 8);
    });
    CHECK(result.updated());
    CHECK(graph.annotations().front().id == id); // the same executable, the same indices
    const auto found = gc::find_annotation(id);
    REQUIRE(found.has_value());
    CHECK(found->name() == "updated");
    CHECK(executables() == 1);
  }
  SECTION("a recapture that fails") {
    CHECK_THROWS_AS(graph.recapture(stream,
                                    [&](auto& cap) {
                                      auto region = cap.mark("doomed");
                                      memset_on(cap.stream(), buffer);
                                      throw std::runtime_error("work failed");
                                    }),
                    std::runtime_error);
    CHECK(graph.empty());
    CHECK_FALSE(published(id));
    CHECK(executables() == 0);
  }
}

TEST_CASE("while a trace recorder records, annotations of executables gone stay until it stops") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  gc::clear_annotations();
  const auto capture_one = [&](annotated_graph& graph, const char* name) {
    graph.capture(stream, [&](annotated_scope& cap) {
      auto region = cap.mark(name);
      memset_on(cap.stream(), buffer);
    });
  };
  gc::detail::annotation_registry& registry = gc::detail::registry();
  annotated_graph alive;
  capture_one(alive, "alive");
  if (!has_ids(alive)) {
    CHECK(registry.executables() == 0);
    return;
  }
  const std::uint64_t alive_id = alive.annotations().front().id;
  std::uint64_t gone_id = 0;
  {
    gc::trace_recorder recorder;
    const bool records = recorder.available(); // not with ids from the driver's tools id
    {
      annotated_graph gone;
      capture_one(gone, "gone");
      gone.replay(stream);
      gone_id = gone.annotations().front().id;
    }
    CHECK(gc::find_annotation(gone_id).has_value() == records);
    CHECK(registry.kept_for_recording() == (records ? 1U : 0U));
    CHECK(gc::recorded_annotations().size() == (records ? 2U : 1U));
    alive.reset();
    CHECK(gc::find_annotation(alive_id).has_value() == records);
    capture_one(alive, "alive again"); // a new executable beside the kept one
    CHECK(gc::recorded_annotations().size() == (records ? 3U : 2U));
    recorder.stop();
    // Memsets are no kernels: the recording needs none of what was kept, and the registry drops
    // it at once.
    CHECK(recorder.kernels().empty());
    CHECK(recorder.annotations().empty());
    CHECK(registry.kept_for_recording() == 0);
    CHECK_FALSE(gc::find_annotation(gone_id).has_value());
    CHECK_FALSE(gc::find_annotation(alive_id).has_value());
    CHECK(gc::recorded_annotations().size() == 1);
  }
  CHECK(gc::find_annotation(alive.annotations().front().id).has_value());
  alive.reset(); // no recorder records any more
  CHECK(registry.executables() == 0);
}

TEST_CASE("annotations export as JSON") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  graph.capture(stream, [&](annotated_scope& cap) {
    auto region = cap.mark({{"name", "say \"hi\""}, {"layer", "3"}});
    memset_on(cap.stream(), buffer);
  });
  std::ostringstream text;
  gc::write_annotations_json(text, graph.annotations());
  const std::string json = text.str();
  CHECK_THAT(json, gctest::contains("\"type\": \"memset\""));
  CHECK_THAT(json,
             gctest::contains("\"values\": {\"layer\": \"3\", \"name\": \"say \\\"hi\\\"\"}"));
  CHECK_THAT(json, gctest::contains("\"id\": " + std::to_string(graph.annotations().front().id)));

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "graphcap_annotations_test.json";
  gc::write_annotations_json(path.string(), graph.annotations());
  std::ifstream file{path};
  const std::string written{std::istreambuf_iterator<char>{file}, {}};
  CHECK(written == json);
  std::filesystem::remove(path);
  CHECK_THROWS_AS(gc::write_annotations_json("/nonexistent-dir/a.json", graph.annotations()),
                  gc::error);
}

TEST_CASE("work created while a scope is open but joined after it: tagged by creation only") {
  // Where the two discoveries differ (docs/annotations.md): the callbacks tag what the capture
  // creates while the scope is open, the walk what the scope's stream reaches before it closes.
  const discovery_under_test discovery;
  forked_streams s;
  annotated_graph graph;
  graph.capture(s.stream, [&](annotated_scope& cap) {
    memset_on(cap.stream(), s.first); // what `side` forks from
    s.fork(cap.stream());
    memset_on(cap.stream(), s.first, 1); // the scope's entry frontier, which `side` does not follow
    {
      auto open = cap.mark("open");
      memset_on(s.side, s.second, 2); // created now, joined below, after the scope
      memset_on(cap.stream(), s.first, 3);
    }
    s.join(cap.stream());
  });
  CHECK(graph.annot_policy().discovery() == discovery.expected(graph));
  CHECK(named(graph.annotations(), "open").size() == (discovery.callbacks(graph) ? 2U : 1U));
}

TEST_CASE("CUPTI's callback subscriber is held only while an annotated capture runs") {
  const discovery_under_test discovery;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  const bool free_before = subscriber_free(); // false where a tool holds CUPTI
  bool free_during = false;
  graph.capture(stream, [&](annotated_scope& cap) {
    auto region = cap.mark("region");
    memset_on(cap.stream(), buffer);
    free_during = subscriber_free();
  });
  CHECK(graph.annotations().size() == 1);
  CHECK(free_during == (free_before && !discovery.callbacks(graph)));
  CHECK(subscriber_free() == free_before);
  SECTION("and given back when the capture fails") {
    CHECK_THROWS_AS(capture_that_throws(graph, stream, buffer), std::runtime_error);
    CHECK(subscriber_free() == free_before);
  }
  SECTION("and given back when the graph is destroyed during the capture") {
    {
      annotated_graph abandoned;
      auto cap = abandoned.begin_capture(stream);
      auto region = cap.mark("abandoned");
      memset_on(cap.stream(), buffer);
    }
    CHECK_FALSE(gctest::capturing(stream));
    CHECK(subscriber_free() == free_before);
  }
}

TEST_CASE("where a user holds CUPTI's callback subscriber, scopes are found by the walk") {
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const user_subscriber held; // a profiler in the same process
  annotated_graph graph;
  graph.capture(stream, [&](annotated_scope& cap) {
    memset_on(cap.stream(), buffer);
    auto region = cap.mark("walked");
    memset_on(cap.stream(), buffer, 1);
  });
  CHECK(graph.annot_policy().discovery() == gc::node_discovery::graph_walk);
  REQUIRE(graph.annotations().size() == 1);
  CHECK(graph.annotations().front().name() == "walked");
  if (held.result() == CUPTI_SUCCESS) {
    CHECK(graph.annot_policy().id_source() == gc::node_id_source::cupti); // ids still work
  }
}

TEST_CASE("annotated captures on several threads keep their scopes apart") {
  // thread_local capture mode: each thread's capture is its own; the callbacks share CUPTI's one
  // subscriber, and each node goes to the log of its own graph.
  using threaded_graph =
      gc::basic_graph<gc::mode::thread_local_, gc::pool::off, gc::annot::on, gc::liveness::off>;
  const discovery_under_test discovery;
  constexpr int threads = 4;
  constexpr int scopes = 50;
  const bool free_before = subscriber_free();
  struct outcome {
    std::size_t annotated = 0;
    std::size_t misnamed = 0;
    gc::node_discovery used = gc::node_discovery::graph_walk;
    bool cupti = false;
    std::string failure;
  };
  // Streams and buffers made here: Catch's assertions (CUDA_REQUIRE) are not for other threads.
  std::vector<gctest::stream> streams(threads);
  std::deque<gctest::device_buffer<unsigned char>> buffers; // not movable: a deque keeps them
  for (int t = 0; t < threads; ++t) {
    buffers.emplace_back(bytes);
  }
  std::vector<outcome> outcomes(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const auto index = static_cast<std::size_t>(t);
      outcome& result = outcomes[index];
      const auto memset_in_thread = [&](cudaStream_t on, int value) {
        if (cudaMemsetAsync(buffers[index].get(), value, bytes, on) != cudaSuccess) {
          throw std::runtime_error("cudaMemsetAsync failed");
        }
      };
      try {
        threaded_graph graph;
        const std::string name = "thread " + std::to_string(t);
        graph.capture(streams[index], [&](threaded_graph::scope& cap) {
          for (int s = 0; s < scopes; ++s) {
            memset_in_thread(cap.stream(), s); // untagged
            auto region = cap.mark(name);
            memset_in_thread(cap.stream(), s + 1);
          }
        });
        result.annotated = graph.annotations().size();
        result.misnamed = graph.annotations().size() - named(graph.annotations(), name).size();
        result.used = graph.annot_policy().discovery();
        result.cupti = graph.annot_policy().id_source() == gc::node_id_source::cupti;
      } catch (const std::exception& e) {
        result.failure = e.what();
      }
    });
  }
  for (std::thread& worker : workers) {
    worker.join();
  }
  for (const outcome& result : outcomes) {
    CHECK(result.failure.empty());
    CHECK(result.annotated == static_cast<std::size_t>(scopes));
    CHECK(result.misnamed == 0);
    CHECK(result.used == (result.cupti ? discovery.chosen() : gc::node_discovery::graph_walk));
  }
  CHECK(subscriber_free() == free_before);
}

TEST_CASE("keep_cupti_subscriber holds CUPTI's subscriber between captures until set back") {
  const gctest::prefer_discovery callbacks{gc::node_discovery::creation_callbacks};
  struct keep_until_end { // set back even if a check below throws
    keep_until_end() noexcept { gc::keep_cupti_subscriber(true); }
    keep_until_end(const keep_until_end&) = delete;
    keep_until_end& operator=(const keep_until_end&) = delete;
    ~keep_until_end() { gc::keep_cupti_subscriber(false); }
  };
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const bool free_before = subscriber_free(); // false where a tool holds CUPTI
  const auto capture_one = [&](annotated_graph& graph) {
    graph.capture(stream, [&](annotated_scope& cap) {
      auto region = cap.mark("kept");
      memset_on(cap.stream(), buffer);
    });
    CHECK(graph.annotations().size() == 1);
    return graph.annot_policy().discovery() == gc::node_discovery::creation_callbacks;
  };
  {
    const keep_until_end keep;
    CHECK(subscriber_free() == free_before); // taken by the next capture, not before
    annotated_graph first;
    const bool by_callbacks = capture_one(first);
    CHECK(by_callbacks == free_before);
    CHECK_FALSE(subscriber_free()); // kept (or held by the tool all along)
    annotated_graph second;
    CHECK(capture_one(second) == by_callbacks);
  }
  CHECK(subscriber_free() == free_before);
}
