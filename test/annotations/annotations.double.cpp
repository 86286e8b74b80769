// Tests of annot::on that need the CUDA test double's control API: CUPTI held by another tool or
// its callback subscriber taken, the calls a scope and a replay make, and the trace writer and
// the trace recorder on records made up by the test.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "annotation_helpers.hpp"
#include "catch.hpp"
#include "cuda_helpers.hpp"
#include "hidden_driver_function.hpp"

#include <cuda_double/control.hpp>
#include <cuda_double/cupti_control.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gc = graphcap;
using call_map = std::map<std::string, std::size_t>;

namespace {

using annotated_graph = gc::graph_with<gc::annot::on>;
using annotated_scope = annotated_graph::scope;

constexpr std::size_t bytes = 256;

/// For the id tests: under each node discovery (Catch's GENERATE), a capture left open with
/// `count` memsets in one scope and the call counts cleared; the test ends it.
struct open_capture_of_memsets {
  explicit open_capture_of_memsets(int count)
      : discovery(GENERATE(gc::node_discovery::creation_callbacks, gc::node_discovery::graph_walk)),
        preferred(discovery), cap(graph.begin_capture(stream)) {
    {
      auto region = cap.mark("memsets");
      for (int i = 0; i < count; ++i) {
        CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), i, buffer.bytes(), cap.stream()));
      }
    }
    cuda_double::clear_call_counts();
  }

  gc::node_discovery discovery;
  gctest::prefer_discovery preferred;
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer{bytes};
  annotated_graph graph;
  annotated_scope cap;
};

template <class Graph>
void capture_two_regions(Graph& graph, cudaStream_t stream,
                         gctest::device_buffer<unsigned char>& buffer) {
  graph.capture(stream, [&](typename Graph::scope& cap) {
    {
      auto first = cap.mark("first");
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, buffer.bytes(), cap.stream()));
    }
    auto second = cap.mark({{"name", "second"}, {"layer", "1"}});
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 2, buffer.bytes(), cap.stream()));
  });
}

/// Counts the notices annotations give, for the life of the object.
class notice_counter {
public:
  notice_counter() {
    gc::set_annotation_notice_handler([this](std::string_view text) {
      ++count;
      last = text;
    });
  }
  ~notice_counter() { gc::set_annotation_notice_handler({}); }
  notice_counter(const notice_counter&) = delete;
  notice_counter& operator=(const notice_counter&) = delete;
  int count = 0;
  std::string last;
};

} // namespace

TEST_CASE("the double's CUPTI ids follow the mapping seen on the H200") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph{gc::keep_graph};
  capture_two_regions(graph, stream, buffer);
  REQUIRE(graph.annot_policy().id_source() == gc::node_id_source::cupti);
  REQUIRE(graph.annotations().size() == 2);
  const std::uint32_t template_graph = cuda_double::graph_id(graph.raw_graph());
  for (const gc::node_annotation& node : graph.annotations()) {
    CHECK((node.template_id >> 32U) == template_graph);
  }
  graph.instantiate();
  std::uint32_t exec_id = 0;
  REQUIRE(cuptiGetGraphExecId(graph.raw_exec(), &exec_id) == CUPTI_SUCCESS);
  for (const gc::node_annotation& node : graph.annotations()) {
    CHECK(node.id == gc::detail::replayed_node_id(exec_id, node.template_id));
    CHECK((node.id >> 32U) == exec_id);
  }
  CHECK(graph.annotations()[0].name() == "first"); // in node creation order
  CHECK(graph.annotations()[1].name() == "second");
}

TEST_CASE("CUPTI held by another tool degrades annotations and never fails the capture") {
  cuda_double::reset();
  gc::clear_annotations();
  REQUIRE(gc::annotation_id_source() == gc::node_id_source::cupti); // probed while CUPTI is free
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const notice_counter notices;
  cuda_double::set_cupti_held_by_other_tool(true);

  annotated_graph graph;
  capture_two_regions(graph, stream, buffer);
  REQUIRE(graph.state() == gc::graph_state::instantiated);
  REQUIRE(graph.annotations().size() == 2); // the scopes, still recorded by node
  CHECK(graph.annotations()[0].type == cudaGraphNodeTypeMemset);
  for (const gc::node_annotation& node : graph.annotations()) {
    CHECK(node.id == 0);
    CHECK(node.template_id == 0);
  }
  CHECK(graph.annot_policy().id_source() == gc::node_id_source::none);
  CHECK(graph.annot_policy().discovery() == gc::node_discovery::graph_walk);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  CHECK(gc::recorded_annotations().empty());
  CHECK(notices.count == 1);
  CHECK_THAT(notices.last, gctest::contains("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));

  annotated_graph another;
  capture_two_regions(another, stream, buffer);
  CHECK(another.annotations().size() == 2);
  gc::trace_recorder recorder;
  CHECK_FALSE(recorder.available());
  CHECK_THAT(recorder.reason(), gctest::contains("held by another tool"));
  another.replay(stream);
  recorder.stop();
  CHECK(recorder.kernels().empty());
  CHECK(notices.count == 1); // said once
}

TEST_CASE("CUPTI held by another tool: walked annotations still come in node creation order") {
  // Without CUPTI's ids the walk's nodes come sorted by handle; annotations() promises creation
  // order. On the H200 the handles of a capture did not follow it (annotation_kernel_tests under
  // compute-sanitizer): here the nodes of a destroyed graph are handed out again by the heap's
  // free lists, last freed first, so that the next capture's handles fall as nodes are created.
  cuda_double::reset();
  gc::clear_annotations();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  constexpr int steps = 5;
  {
    gc::lean_graph earlier;
    earlier.capture(stream, [&] {
      for (int i = 0; i < steps; ++i) {
        CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), i, buffer.bytes(), stream));
      }
    });
  }
  const notice_counter notices;
  cuda_double::set_cupti_held_by_other_tool(true);
  annotated_graph graph{gc::keep_graph};
  graph.capture(stream, [&](annotated_graph::scope& cap) {
    for (int i = 0; i < steps; ++i) {
      auto step = cap.mark({{"name", "step"}, {"i", std::to_string(i)}});
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), i, buffer.bytes(), cap.stream()));
    }
  });
  REQUIRE(graph.annot_policy().discovery() == gc::node_discovery::graph_walk);
  const std::vector<gc::node_annotation>& annotations = graph.annotations();
  REQUIRE(annotations.size() == steps);
  for (int i = 0; i < steps; ++i) {
    CHECK(annotations[static_cast<std::size_t>(i)].value("i") == std::to_string(i));
  }
  // What makes the test able to fail: the handles, listed in creation order, are not ascending.
  // Under AddressSanitizer they are (its allocator hands freed memory to no one soon): the order
  // was still checked above, but it could not have told the two orders apart.
  std::size_t count = steps;
  std::vector<cudaGraphNode_t> listed(count);
  CUDA_REQUIRE(cudaGraphGetNodes(graph.raw_graph(), listed.data(), &count));
  if (std::is_sorted(listed.begin(), listed.end(), std::less<>{})) {
    GCTEST_SKIP("the node handles ascend in creation order here (a sanitizer's allocator): "
                "sorted by handle and in creation order are the same list");
  }
}

TEST_CASE("an annotated replay is exactly one cudaGraphLaunch") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  capture_two_regions(graph, stream, buffer);
  cuda_double::clear_call_counts();
  graph.replay(stream);
  CHECK(cuda_double::call_counts() == call_map{{"cudaGraphLaunch", 1}});
}

TEST_CASE("with creation callbacks a scope makes no CUDA call") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  auto cap = graph.begin_capture(stream);
  REQUIRE(graph.annot_policy().discovery() == gc::node_discovery::creation_callbacks);
  CHECK(cuda_double::cupti_subscribed());
  cuda_double::clear_call_counts();
  {
    auto region = cap.mark("one");
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, buffer.bytes(), cap.stream()));
  }
  CHECK(cuda_double::call_counts() == call_map{{"cudaMemsetAsync", 1}});
  cap.end();
  CHECK(graph.annotations().size() == 1);
  CHECK_FALSE(cuda_double::cupti_subscribed()); // given back with the capture's end
}

TEST_CASE("a walked scope costs one capture-info query and a walk over what it added") {
  cuda_double::reset();
  const gctest::prefer_discovery walk{gc::node_discovery::graph_walk};
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  auto cap = graph.begin_capture(stream);
  CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), cap.stream()));
  cuda_double::clear_call_counts();
  {
    auto region = cap.mark("one");
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, buffer.bytes(), cap.stream()));
  }
  // Entry: the frontier and its dependents (none); exit: the frontier's dependents (the new
  // memset), then the memset's dependents (none). One call each: up to 8 dependents come back
  // from a single query. Through the driver: the runtime's wrappers cost several times more.
  CHECK(cuda_double::call_counts() == call_map{{"cuStreamGetCaptureInfo", 1},
                                               {"cuGraphNodeGetDependentNodes", 3},
                                               {"cudaMemsetAsync", 1}});
  CHECK_FALSE(cuda_double::cupti_subscribed()); // the walk leaves CUPTI's subscriber alone
  cap.end();
  CHECK(graph.annotations().size() == 1);
}

TEST_CASE("where CUPTI's callback subscriber is unavailable, scopes are walked with CUPTI ids") {
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const notice_counter notices;
  SECTION("taken by another CUPTI user in the process") {
    cuda_double::set_cupti_subscriber_taken(true);
  }
  SECTION("refused") {
    cuda_double::fail_call("cuptiSubscribe", static_cast<cudaError_t>(CUPTI_ERROR_UNKNOWN), 1);
  }
  SECTION("enabling the callback refused") {
    cuda_double::fail_call("cuptiEnableCallback", static_cast<cudaError_t>(CUPTI_ERROR_UNKNOWN), 1);
  }
  annotated_graph graph;
  capture_two_regions(graph, stream, buffer);
  CHECK(graph.annot_policy().discovery() == gc::node_discovery::graph_walk);
  CHECK(graph.annot_policy().id_source() == gc::node_id_source::cupti);
  REQUIRE(graph.annotations().size() == 2);
  CHECK(graph.annotations()[0].name() == "first");
  CHECK(graph.annotations()[1].name() == "second");
  CHECK(graph.annotations()[0].template_id != 0);
  CHECK_FALSE(cuda_double::cupti_subscribed());
  CHECK(notices.count == 0); // nothing is lost: the walk is exact
}

TEST_CASE("a capture failure inside annotation bookkeeping never fails the capture") {
  cuda_double::reset();
  const gctest::prefer_discovery walk{gc::node_discovery::graph_walk}; // the walk's queries fail
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph graph;
  cuda_double::fail_call("cuGraphNodeGetDependentNodes", cudaErrorUnknown, 2);
  graph.capture(stream, [&](annotated_scope& cap) {
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), cap.stream()));
    {
      auto lost = cap.mark("lost"); // its walk fails: it tags nothing
      CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 1, buffer.bytes(), cap.stream()));
    }
    auto kept = cap.mark("kept");
    CUDA_REQUIRE(cudaMemsetAsync(buffer.get(), 2, buffer.bytes(), cap.stream()));
  });
  CHECK(graph.state() == gc::graph_state::instantiated);
  REQUIRE(graph.annotations().size() == 1);
  CHECK(graph.annotations().front().name() == "kept");
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("a trace recorder on the double records no kernel and writes an empty trace") {
  cuda_double::reset();
  gc::trace_recorder recorder;
  REQUIRE(recorder.available());
  CHECK_THROWS_AS(gc::trace_recorder{}, gc::state_error); // one at a time
  recorder.stop();
  CHECK(recorder.kernels().empty());
  const gc::trace_recorder next; // stop() released the process's recorder slot
  CHECK(next.available());
}

TEST_CASE("a trace recorder keeps the annotations its kernels need after their graph is gone") {
  cuda_double::reset();
  gc::clear_annotations();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  annotated_graph unrelated; // alive, but none of its nodes runs while the recorder records
  capture_two_regions(unrelated, stream, buffer);
  std::vector<gc::node_annotation> gone_annotations;
  gc::trace_recorder recorder;
  REQUIRE(recorder.available());
  {
    annotated_graph gone;
    capture_two_regions(gone, stream, buffer);
    gone.replay(stream);
    gone_annotations = gone.annotations();
    std::uint64_t start = 1000;
    for (const gc::node_annotation& node : gone_annotations) { // as if its nodes were kernels
      cuda_double::kernel_activity kernel;
      kernel.name = "_Z4gemmPf";
      kernel.start_ns = start;
      kernel.end_ns = start + 500;
      kernel.graph_node_id = node.id;
      kernel.graph_id = static_cast<std::uint32_t>(node.id >> 32U);
      REQUIRE(cuda_double::queue_kernel_activity(kernel));
      start += 1000;
    }
  }
  REQUIRE(gone_annotations.size() == 2);
  CHECK(gc::find_annotation(gone_annotations[0].id).has_value()); // kept for the recording
  CHECK(gc::detail::registry().kept_for_recording() == 1);
  recorder.stop();
  CHECK(gc::detail::registry().kept_for_recording() == 0); // dropped from the registry ...
  CHECK_FALSE(gc::find_annotation(gone_annotations[0].id).has_value());
  REQUIRE(recorder.kernels().size() == 2);
  const std::vector<gc::node_annotation> kept = recorder.annotations(); // ... kept by the recorder
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].id == gone_annotations[0].id);
  CHECK(kept[0].name() == "first");
  CHECK(kept[1].name() == "second");
  CHECK(kept[1].value("layer") == "1");
  CHECK(gc::find_annotation(unrelated.annotations()[0].id).has_value()); // alive: still there

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "graphcap_double_trace.json";
  recorder.write_chrome_trace(path.string());
  std::ifstream file{path};
  const std::string trace{std::istreambuf_iterator<char>{file}, {}};
  std::filesystem::remove(path);
  CHECK_THAT(trace, gctest::contains("\"tid\": 1, \"args\": {\"name\": \"first\"}"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 2, \"args\": {\"name\": \"second\"}"));
  CHECK_THAT(trace, gctest::contains("{\"name\": \"gemm(float*)\", \"cat\": \"kernel\""));
}

TEST_CASE("the Chrome trace puts kernels in lanes named by their annotations") {
  gc::node_annotation attention;
  attention.id = (std::uint64_t{7} << 32U) | 1U;
  attention.type = cudaGraphNodeTypeKernel;
  attention.values = {{"name", "attention"}};
  gc::node_annotation mlp;
  mlp.id = (std::uint64_t{7} << 32U) | 2U;
  mlp.type = cudaGraphNodeTypeKernel;
  mlp.values = {{"layer", "3"}, {"name", "mlp"}};
  gc::node_annotation unnamed;
  unnamed.id = (std::uint64_t{7} << 32U) | 3U;
  unnamed.values = {{"layer", "4"}};
  const std::vector<gc::kernel_record> kernels{
      {.name = "_Z4gemmPf", .start_ns = 1000, .end_ns = 3500, .graph_node_id = attention.id},
      {.name = "relu", .start_ns = 4000, .end_ns = 4001, .graph_node_id = mlp.id},
      {.name = "tail", .start_ns = 5000, .end_ns = 6000, .graph_node_id = unnamed.id},
      {.name = "stray", .start_ns = 7000, .end_ns = 8000, .graph_node_id = (7ULL << 32U) | 9U},
      {.name = "eager", .start_ns = 9000, .end_ns = 9500, .stream = 13},
  };
  std::ostringstream out;
  gc::write_chrome_trace(out, kernels, {attention, mlp, unnamed});
  const std::string trace = out.str();
  CHECK_THAT(trace, gctest::contains("{\"name\": \"gemm(float*)\", \"cat\": \"kernel\", \"ph\": "
                                     "\"X\", \"pid\": 0, \"tid\": 1, \"ts\": 0, \"dur\": 2.500"));
  CHECK_THAT(trace, gctest::contains("\"ts\": 3, \"dur\": 0.001"));
  CHECK_THAT(trace, gctest::contains("\"args\": {\"graph node id\": 30064771074, \"stream\": 0, "
                                     "\"layer\": \"3\", \"name\": \"mlp\"}"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 1, \"args\": {\"name\": \"attention\"}"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 2, \"args\": {\"name\": \"mlp\"}"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 3, \"args\": {\"name\": \"layer=4\"}"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 4, \"args\": {\"name\": \"graph (unannotated)\"}"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 5, \"args\": {\"name\": \"stream 13\"}"));
  CHECK_THAT(trace, gctest::contains("\"args\": {\"name\": \"GPU 0\"}"));
}

TEST_CASE("kernels of one region that overlap in time go to parallel lanes") {
  gc::node_annotation head;
  head.id = (std::uint64_t{7} << 32U) | 1U;
  head.values = {{"name", "attention"}};
  gc::node_annotation other_head = head;
  other_head.id = (std::uint64_t{7} << 32U) | 2U;
  const std::vector<gc::kernel_record> kernels{
      {.name = "later", .start_ns = 3000, .end_ns = 4000, .graph_node_id = head.id},
      {.name = "a", .start_ns = 1000, .end_ns = 2000, .graph_node_id = head.id},
      {.name = "b", .start_ns = 1500, .end_ns = 2500, .graph_node_id = other_head.id},
  };
  std::ostringstream out;
  gc::write_chrome_trace(out, kernels, {head, other_head});
  const std::string trace = out.str();
  CHECK_THAT(trace, gctest::contains("{\"name\": \"a\", \"cat\": \"kernel\", \"ph\": \"X\", "
                                     "\"pid\": 0, \"tid\": 1, \"ts\": 0,"));
  CHECK_THAT(trace, gctest::contains("{\"name\": \"b\", \"cat\": \"kernel\", \"ph\": \"X\", "
                                     "\"pid\": 0, \"tid\": 2, \"ts\": 0.500,"));
  CHECK_THAT(trace, gctest::contains("{\"name\": \"later\", \"cat\": \"kernel\", \"ph\": "
                                     "\"X\", \"pid\": 0, \"tid\": 1, \"ts\": 2,"));
  CHECK_THAT(trace, gctest::contains("\"tid\": 2, \"args\": {\"name\": \"attention (2)\"}"));
}

TEST_CASE("annotation values are sorted by key, a repeated key keeping its first value") {
  const gc::annotation_values values{{"name", "mlp"}, {"layer", "3"}, {"name", "ignored"}};
  REQUIRE(values.size() == 2);
  CHECK(values.begin()->first == "layer");
  CHECK(values.value("name") == "mlp");
  CHECK(values.value("layer") == "3");
  CHECK(values.value("absent").empty());
  const gc::annotation_values same{{"layer", "3"}, {"name", "mlp"}};
  CHECK(values == same);
  const gc::annotation_values copy = values; // shares the list
  CHECK(copy == values);
  CHECK(gc::annotation_values{}.empty());
  std::vector<gc::annotation_values::value_type> many;
  for (int i = 40; i-- > 0;) { // past the small-list insertion sort
    many.emplace_back("k" + std::to_string(i % 20), std::to_string(i));
  }
  const gc::annotation_values sorted{many};
  REQUIRE(sorted.size() == 20);
  CHECK(std::is_sorted(sorted.begin(), sorted.end()));
  CHECK(sorted.value("k5") == "25"); // 25 came before 5
}

TEST_CASE("node ids come from the graph's creation order, spot-checked with CUPTI") {
  // The graph's id and each node's creation index give every id (detail::template_node_id_at):
  // the indices from the creation log, or (walked) from one listing of the graph's nodes; one
  // cuptiGetGraphNodeId, of the last node, gives the graph's id and checks that node's index.
  cuda_double::reset();
  open_capture_of_memsets ten{10};
  ten.cap.end();
  const call_map calls = cuda_double::call_counts();
  CHECK(calls.count("cuptiGetGraphId") == 0); // the last node's id holds the graph's
  CHECK(calls.at("cuptiGetGraphNodeId") == 1);
  // The graph counts no nodes at the capture's end (node_count() counts when read); the walk
  // lists them (count, then fetch) for the ids; the creation log needs no listing.
  CHECK(calls.count("cudaGraphGetNodes") == 0);
  CHECK(calls.count("cuGraphGetNodes") ==
        (ten.discovery == gc::node_discovery::graph_walk ? 1U : 0U));
  REQUIRE(ten.graph.annotations().size() == 10);
  for (std::size_t i = 0; i < 10; ++i) { // creation order, and the double's own numbering
    CHECK((ten.graph.annotations()[i].template_id & 0xffffffffU) == i);
  }
}

TEST_CASE("a wrong creation-order id falls back to asking CUPTI node by node") {
  cuda_double::reset();
  open_capture_of_memsets three{3};
  // The spot check fails at once: the ids are asked for node by node instead (3 more calls).
  cuda_double::fail_call("cuptiGetGraphNodeId", static_cast<cudaError_t>(CUPTI_ERROR_UNKNOWN), 1);
  three.cap.end();
  CHECK(cuda_double::call_counts().at("cuptiGetGraphNodeId") == 4);
  REQUIRE(three.graph.annotations().size() == 3);
  for (const gc::node_annotation& node : three.graph.annotations()) {
    CHECK(node.template_id != 0);
  }
}

// ---- driver functions: annotations go without a missing one; liveness's stay liveness's -----

namespace {

std::size_t count_of(const call_map& calls, const std::string& function) {
  const auto found = calls.find(function);
  return found == calls.end() ? 0 : found->second;
}

} // namespace

TEST_CASE("annotations degrade, never fail a capture, where a driver function they use is "
          "missing: its queries go to the runtime") {
  // The graph queries, each with the runtime function that answers in its place; the kernel-name
  // functions have none (the double has no kernel nodes to name).
  const auto [symbol, runtime] = GENERATE(table<std::string, std::string>(
      {{"cuStreamGetCaptureInfo", "cudaStreamGetCaptureInfo"},
       {"cuGraphNodeGetDependentNodes", "cudaGraphNodeGetDependentNodes"},
       {"cuGraphGetRootNodes", "cudaGraphGetRootNodes"},
       {"cuGraphGetNodes", "cudaGraphGetNodes"},
       {"cuGraphNodeGetType", "cudaGraphNodeGetType"},
       {"cuGraphKernelNodeGetParams", ""},
       {"cuKernelGetFunction", ""},
       {"cuFuncGetName", ""}}));
  const gc::node_discovery discovery =
      GENERATE(gc::node_discovery::creation_callbacks, gc::node_discovery::graph_walk);
  INFO("missing: " << symbol << ", discovery " << static_cast<int>(discovery));
  cuda_double::reset();
  const gctest::prefer_discovery preferred{discovery};
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  {
    annotated_graph with_driver;
    capture_two_regions(with_driver, stream, buffer);
  }
  cuda_double::clear_call_counts();
  {
    annotated_graph with_driver;
    capture_two_regions(with_driver, stream, buffer);
  }
  const call_map asked = cuda_double::call_counts();

  const gctest::hidden_driver_function missing{symbol.c_str()};
  cuda_double::clear_call_counts();
  annotated_graph graph;
  capture_two_regions(graph, stream, buffer);
  const call_map asked_without = cuda_double::call_counts();
  CHECK(graph.state() == gc::graph_state::instantiated);
  REQUIRE(graph.annotations().size() == 2);
  CHECK(graph.annotations()[0].name() == "first");
  CHECK(graph.annotations()[1].name() == "second");
  for (const gc::node_annotation& node : graph.annotations()) {
    CHECK(node.type == cudaGraphNodeTypeMemset);
    CHECK(node.template_id != 0);
  }
  CHECK(count_of(asked_without, symbol) == 0);
  if (!runtime.empty()) { // every query the driver answered, the runtime answers instead
    CHECK(count_of(asked_without, runtime) == count_of(asked, runtime) + count_of(asked, symbol));
  }
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK_THAT(gc::detail::annotation_driver_gaps(gc::detail::driver_if_available()),
             gctest::contains("graphcap's annotations need " + symbol + " (CUDA "));
}

TEST_CASE("what annotations go without is said with the feature and the function") {
  cuda_double::reset();
  CHECK(gc::detail::annotation_driver_gaps(gc::detail::driver_if_available()).empty());
  {
    const gctest::hidden_driver_function missing{"cuFuncGetName"};
    CHECK(gc::detail::annotation_driver_gaps(gc::detail::driver_if_available()) ==
          "graphcap's annotations need cuFuncGetName (CUDA 12.3 driver or newer) for kernel "
          "names");
  }
  cuda_double::simulate_no_driver(true);
  gctest::forget_resolved_driver_functions();
  CHECK(gc::detail::driver_if_available() == nullptr); // (without a driver, its error is sticky)
  CHECK_THAT(gc::detail::annotation_driver_gaps(nullptr), gctest::contains("cannot be looked up"));
  cuda_double::reset();
  CHECK(gc::detail::driver_if_available() == &gc::detail::driver());
}

TEST_CASE("annotations work while a driver function only liveness needs is missing") {
  const char* const symbol = GENERATE("cuPointerGetAttribute", "cuFuncGetParamInfo");
  INFO("missing: " << symbol);
  cuda_double::reset();
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  const gctest::hidden_driver_function missing{symbol};
  annotated_graph graph;
  capture_two_regions(graph, stream, buffer);
  REQUIRE(graph.annotations().size() == 2);
  CHECK(graph.annotations()[0].type == cudaGraphNodeTypeMemset);
  CHECK(gc::detail::annotation_driver_gaps(gc::detail::driver_if_available()).empty());
}

TEST_CASE("annotations and liveness in one graph: a missing driver function fails only the "
          "feature that needs it") {
  using checked_graph = gc::graph_with<gc::annot::on, gc::liveness::check>;
  cuda_double::reset();
  const gctest::prefer_discovery walk{gc::node_discovery::graph_walk};
  gctest::stream stream;
  gctest::device_buffer<unsigned char> buffer(bytes);
  checked_graph graph;
  SECTION("liveness's cuPointerGetAttribute: the capture fails, as the liveness check's") {
    const gctest::hidden_driver_function missing{"cuPointerGetAttribute"};
    try {
      capture_two_regions(graph, stream, buffer);
      FAIL("the checked capture succeeded without cuPointerGetAttribute");
    } catch (const gc::cuda_error& failure) {
      CHECK(failure.code() == cudaErrorSymbolNotFound);
      CHECK_THAT(std::string(failure.what()),
                 gctest::contains("graphcap's liveness check needs cuPointerGetAttribute"));
      CHECK_THAT(std::string(failure.what()), !gctest::contains("annotations"));
    }
    CHECK(graph.empty());
    CHECK_FALSE(gctest::capturing(stream));
    CHECK_FALSE(cuda_double::cupti_subscribed());
    CHECK(cudaGetLastError() == cudaSuccess);
  }
  SECTION("annotations' cuStreamGetCaptureInfo and cuGraphNodeGetDependentNodes: both work") {
    const gctest::hidden_driver_function capture_info{"cuStreamGetCaptureInfo"};
    const gctest::hidden_driver_function dependents{"cuGraphNodeGetDependentNodes"};
    capture_two_regions(graph, stream, buffer);
    REQUIRE(graph.annotations().size() == 2);
    CHECK(graph.annotations()[1].name() == "second");
    CHECK(graph.liveness_policy().input_count() == 1);
    graph.replay(stream);
    CHECK(cuda_double::calls("cudaGraphLaunch") == 1);
  }
}
