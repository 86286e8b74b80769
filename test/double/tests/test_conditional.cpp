// Conditional nodes: handles, cudaGraphAddNode, If/Switch/While at launch (seen through memset
// nodes in the bodies), defaults, scripts, nesting, capture into bodies, instantiation and
// update, the body rules, destruction, the endless-While guard, DOT output, the driver entry
// points and CUPTI callbacks.
#include <cuda.h>

#include <cudaTypedefs.h>
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "helpers.hpp"

namespace {

using Nodes = std::vector<cudaGraphNode_t>;

cudaGraph_t new_graph() {
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaGraphCreate(&g, 0));
  return g;
}

cudaGraphConditionalHandle make_handle(cudaGraph_t g, unsigned value = 0, unsigned flags = 0) {
  cudaGraphConditionalHandle h = 0;
  CUDA_OK(cudaGraphConditionalHandleCreate(&h, g, value, flags));
  return h;
}

cudaGraphNodeParams cond_params(cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type,
                                unsigned size) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = h;
  p.conditional.type = type;
  p.conditional.size = size;
  return p;
}

struct Cond {
  cudaGraphNode_t node = nullptr;
  std::vector<cudaGraph_t> bodies;
};

Cond add_cond(cudaGraph_t g, const Nodes& deps, cudaGraphConditionalHandle h,
              cudaGraphConditionalNodeType type, unsigned size) {
  cudaGraphNodeParams p = cond_params(h, type, size);
  Cond c;
  CUDA_OK(cudaGraphAddNode(&c.node, g, deps.data(), nullptr, deps.size(), &p));
  REQUIRE(p.conditional.phGraph_out != nullptr);
  c.bodies.assign(p.conditional.phGraph_out, p.conditional.phGraph_out + size);
  return c;
}

cudaGraphNode_t add_memset(cudaGraph_t g, const Nodes& deps, void* dst, unsigned value,
                           std::size_t bytes = 1) {
  cudaMemsetParams p{dst, 0, value, 1, bytes, 1};
  cudaGraphNode_t n = nullptr;
  CUDA_OK(cudaGraphAddMemsetNode(&n, g, deps.data(), deps.size(), &p));
  return n;
}

unsigned char* bytes_at(void* dev, std::size_t offset) {
  return static_cast<unsigned char*>(dev) + offset;
}

std::vector<unsigned char> read(const void* dev, std::size_t n) {
  std::vector<unsigned char> host(n);
  CUDA_OK(cudaMemcpy(host.data(), dev, n, cudaMemcpyDeviceToHost));
  return host;
}

void clear(void* dev, std::size_t n) {
  CUDA_OK(cudaMemset(dev, 0, n));
}

cudaGraphExec_t instantiate(cudaGraph_t g) {
  cudaGraphExec_t e = nullptr;
  CUDA_OK(cudaGraphInstantiate(&e, g, 0));
  return e;
}

// The instantiation result and error node cudaGraphInstantiateWithParams reports.
cudaGraphInstantiateParams try_instantiate(cudaGraph_t g, cudaError_t& err) {
  cudaGraphInstantiateParams ip{};
  cudaGraphExec_t e = nullptr;
  err = cudaGraphInstantiateWithParams(&e, g, &ip);
  if (err == cudaSuccess)
    CUDA_OK(cudaGraphExecDestroy(e));
  return ip;
}

void noop(void*) {}

// GRAPHNODE_CREATED callbacks, as (graph, node).
std::vector<std::pair<CUgraph, CUgraphNode>> created;
void CUPTIAPI on_created(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* cbdata) {
  const auto* resource = static_cast<const CUpti_ResourceData*>(cbdata);
  const auto* data = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
  created.emplace_back(data->graph, data->node);
}

} // namespace

TEST_CASE("conditional handles: creation and validation", "[conditional]") {
  Clean clean;
  cudaGraph_t g = new_graph();
  cudaGraphConditionalHandle h = 0;
  CHECK(cudaGraphConditionalHandleCreate(nullptr, g, 0, 0) == cudaErrorInvalidValue);
  CHECK(cudaGraphConditionalHandleCreate(&h, nullptr, 0, 0) == cudaErrorInvalidValue);
  CHECK(cudaGraphConditionalHandleCreate(&h, g, 0, 2) == cudaErrorInvalidValue);
  CHECK(cudaGraphConditionalHandleCreate(&h, g, 0, 3) == cudaErrorInvalidValue);
  const cudaGraphConditionalHandle a = make_handle(g, 5);
  const cudaGraphConditionalHandle b = make_handle(g, 7, cudaGraphCondAssignDefault);
  CHECK(a != 0);
  CHECK(b != 0);
  CHECK(a != b);
  // Without the flag CUDA leaves the value undefined and does not apply the default (0 on the
  // H200): the double starts at 0.
  CHECK(cuda_double::conditional_value(a) == 0);
  CHECK(cuda_double::conditional_value(b) == 7);
  CHECK(cuda_double::conditional_evaluations(a) == 0);
  cuda_double::set_conditional(a, 9);
  CHECK(cuda_double::conditional_value(a) == 9);
  CHECK(cuda_double::conditional_value(0) == 0);
  CHECK_THROWS_AS(cuda_double::set_conditional(0, 1), std::invalid_argument);
  CHECK_THROWS_AS(cuda_double::script_conditional(0, {1}), std::invalid_argument);

  // A destroyed graph takes no handle.
  cudaGraph_t gone = new_graph();
  CUDA_OK(cudaGraphDestroy(gone));
  CHECK(cudaGraphConditionalHandleCreate(&h, gone, 0, 0) == cudaErrorInvalidValue);

  // The graph of a capture in progress takes one, and the capture goes on.
  cudaStream_t s = make_stream();
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus st{};
  cudaGraph_t captured = nullptr;
  CUDA_OK(cudaStreamGetCaptureInfo(s, &st, nullptr, &captured, nullptr, nullptr, nullptr));
  const cudaGraphConditionalHandle c = make_handle(captured);
  CHECK(c != 0);
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  CHECK(st == cudaStreamCaptureStatusActive);
  add_cond(captured, {}, c, cudaGraphCondTypeIf, 1);
  cudaGraph_t out = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &out));
  CHECK(out == captured);

  // And so does a body graph.
  const Cond cond = add_cond(g, {}, a, cudaGraphCondTypeIf, 1);
  CHECK(make_handle(cond.bodies[0]) != 0);

  // reset() forgets handles.
  cuda_double::reset();
  CHECK(cuda_double::conditional_value(b) == 0);
  CHECK_THROWS_AS(cuda_double::set_conditional(b, 1), std::invalid_argument);
}

TEST_CASE("cudaGraphAddNode: conditional and empty nodes, and what it refuses", "[conditional]") {
  Clean clean;
  cudaGraph_t g = new_graph();
  cudaGraph_t other = new_graph();
  const cudaGraphConditionalHandle h = make_handle(g);
  make_handle(other);
  // Handles are numbered per graph: other's second has a value g made no handle of.
  const cudaGraphConditionalHandle foreign = make_handle(other);
  cudaGraphNode_t n = nullptr;

  cudaGraphNodeParams p = cond_params(h, cudaGraphCondTypeIf, 1);
  CHECK(cudaGraphAddNode(nullptr, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  CHECK(cudaGraphAddNode(&n, nullptr, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, nullptr) == cudaErrorInvalidValue);
  p.reserved0[1] = 1;
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  p = cond_params(h, cudaGraphCondTypeIf, 1);
  p.reserved2 = 1;
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);

  // The handle must exist and have been created on the graph that receives the node.
  p = cond_params(0, cudaGraphCondTypeIf, 1);
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  p = cond_params(foreign, cudaGraphCondTypeIf, 1);
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);

  // Sizes: If 1 or 2, While 1, Switch at least 1; no other type.
  const struct {
    cudaGraphConditionalNodeType type;
    unsigned size;
  } bad[] = {{cudaGraphCondTypeIf, 0},     {cudaGraphCondTypeIf, 3},
             {cudaGraphCondTypeWhile, 0},  {cudaGraphCondTypeWhile, 2},
             {cudaGraphCondTypeSwitch, 0}, {static_cast<cudaGraphConditionalNodeType>(3), 1}};
  for (const auto& b : bad) {
    p = cond_params(h, b.type, b.size);
    CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  }
  // Types the double does not model through cudaGraphAddNode.
  cudaGraphNodeParams host{};
  host.type = cudaGraphNodeTypeHost;
  host.host.fn = noop;
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &host) == cudaErrorNotSupported);
  CHECK(graph_nodes(g).empty());

  cudaGraphNodeParams empty{};
  empty.type = cudaGraphNodeTypeEmpty;
  cudaGraphNode_t e = nullptr;
  CUDA_OK(cudaGraphAddNode(&e, g, nullptr, nullptr, 0, &empty));
  CHECK(type_of(e) == cudaGraphNodeTypeEmpty);
  // Dependencies are checked as for every node.
  cudaGraphNode_t twice[] = {e, e};
  p = cond_params(h, cudaGraphCondTypeIf, 2);
  CHECK(cudaGraphAddNode(&n, g, twice, nullptr, 2, &p) == cudaErrorInvalidValue);

  const Cond c = add_cond(g, {e}, h, cudaGraphCondTypeIf, 2);
  CHECK(type_of(c.node) == cudaGraphNodeTypeConditional);
  CHECK(deps_of(c.node) == Nodes{e});
  REQUIRE(c.bodies.size() == 2);
  CHECK(c.bodies[0] != nullptr);
  CHECK(c.bodies[1] != nullptr);
  CHECK(c.bodies[0] != c.bodies[1]);
  // Bodies are graphs to query and fill, but the node's, not the user's.
  CHECK(graph_nodes(c.bodies[0]).empty());
  const cudaGraphNode_t m = add_memset(c.bodies[1], {}, device_alloc(1), 1);
  CHECK(graph_nodes(c.bodies[1]) == Nodes{m});
  CHECK(cudaGraphDestroy(c.bodies[0]) == cudaErrorInvalidValue);
  CHECK(cuda_double::graph_id(c.bodies[0]) != 0);
  CHECK(cuda_double::live_graphs() == 2);
  CHECK(cuda_double::live_conditional_bodies() == 2);
  // A node of a body cannot depend on the parent's nodes.
  CHECK(cudaGraphAddEmptyNode(&n, c.bodies[0], &e, 1) == cudaErrorInvalidValue);

  // A handle serves one node at a time.
  p = cond_params(h, cudaGraphCondTypeWhile, 1);
  CHECK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  const Cond w = add_cond(g, {}, make_handle(g), cudaGraphCondTypeWhile, 1);
  const Cond s = add_cond(g, {}, make_handle(g), cudaGraphCondTypeSwitch, 5);
  CHECK(w.bodies.size() == 1);
  CHECK(s.bodies.size() == 5);
  CHECK(cuda_double::live_conditional_bodies() == 8);
  // Once its node is gone, the handle may serve another.
  CUDA_OK(cudaGraphDestroyNode(c.node));
  CHECK(cuda_double::live_conditional_bodies() == 6);
  CUDA_OK(cudaGraphAddNode(&n, g, nullptr, nullptr, 0, &p));
}

TEST_CASE("condition handles are numbered per graph, as on the H200", "[conditional]") {
  // benchmark/probes/exec_update_rules.cu ("condition handles of two graphs"): graph a: 1 2;
  // graph b: 1 2; a's second value is accepted by b, which made a handle of that value, and
  // refused by c, which made none.
  Clean clean;
  cudaGraph_t a = new_graph();
  cudaGraph_t b = new_graph();
  cudaGraph_t c = new_graph();
  const cudaGraphConditionalHandle ha1 = make_handle(a);
  const cudaGraphConditionalHandle ha2 = make_handle(a);
  const cudaGraphConditionalHandle hb1 = make_handle(b);
  const cudaGraphConditionalHandle hb2 = make_handle(b);
  CHECK(ha1 == 1);
  CHECK(ha2 == 2);
  CHECK(hb1 == ha1);
  CHECK(hb2 == ha2);
  cudaGraphNodeParams p = cond_params(ha2, cudaGraphCondTypeIf, 1);
  cudaGraphNode_t n = nullptr;
  CHECK(cudaGraphAddNode(&n, b, nullptr, nullptr, 0, &p) == cudaSuccess);
  CHECK(cudaGraphAddNode(&n, c, nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  // b's first handle serves no node: b cannot be instantiated (as on the H200).
  cudaError_t err = cudaSuccess;
  const cudaGraphInstantiateParams ip = try_instantiate(b, err);
  CHECK(err == cudaErrorInvalidValue);
  CHECK(ip.result_out == cudaGraphInstantiateConditionalHandleUnused);

  // Two graphs' handle 1: each graph decides on its own value.
  void* dev = device_alloc(2);
  clear(dev, 2);
  cudaGraph_t d = new_graph();
  cudaGraph_t e = new_graph();
  const Cond cd = add_cond(d, {}, make_handle(d), cudaGraphCondTypeIf, 1);
  const Cond ce = add_cond(e, {}, make_handle(e), cudaGraphCondTypeIf, 1);
  add_memset(cd.bodies[0], {}, dev, 1);
  add_memset(ce.bodies[0], {}, bytes_at(dev, 1), 2);
  // A body's handles continue its root graph's numbers (the double's choice, not yet checked on
  // the H200): one value names one handle in a whole executable.
  CHECK(make_handle(cd.bodies[0]) == 2);
  add_cond(cd.bodies[0], {}, 2, cudaGraphCondTypeIf, 1);
  cuda_double::set_conditional(d, 1, 1);
  cuda_double::set_conditional(e, 1, 0);
  cuda_double::set_conditional(cd.bodies[0], 2, 0); // the body names its tree: d's handle 2
  // By value alone, handle 1 is ambiguous now.
  CHECK_THROWS_AS(cuda_double::set_conditional(1, 1), std::invalid_argument);
  CHECK_THROWS_AS(cuda_double::conditional_value(1), std::invalid_argument);
  const cudaGraphExec_t xd = instantiate(d);
  const cudaGraphExec_t xe = instantiate(e);
  CUDA_OK(cudaGraphLaunch(xd, nullptr));
  CUDA_OK(cudaGraphLaunch(xe, nullptr));
  CHECK(read(dev, 2) == std::vector<unsigned char>{1, 0});
  CHECK(cuda_double::conditional_evaluations(xd, 1) == 1);
  CHECK(cuda_double::conditional_evaluations(xd, 2) == 1);
  CHECK(cuda_double::conditional_evaluations(xe, 1) == 1);
  CHECK(cuda_double::conditional_value(e, 1) == 0);
  CHECK(cuda_double::conditional_value(xd, 1) == 1);
  CHECK(cuda_double::conditional_value(xe, 2) == 0); // e has no handle 2
  // The executable keeps its handles when its graph goes.
  CUDA_OK(cudaGraphDestroy(d));
  cuda_double::script_conditional(xd, 1, {0});
  clear(dev, 2);
  CUDA_OK(cudaGraphLaunch(xd, nullptr));
  CHECK(read(dev, 2) == std::vector<unsigned char>{0, 0});
  CHECK_THROWS_AS(cuda_double::set_conditional(d, 1, 1), std::invalid_argument);
}

TEST_CASE("If, If/else and Switch run the body the value picks", "[conditional]") {
  Clean clean;
  void* dev = device_alloc(4);
  cudaGraph_t g = new_graph();
  const cudaGraphConditionalHandle if_only = make_handle(g);
  const cudaGraphConditionalHandle if_else = make_handle(g);
  const cudaGraphConditionalHandle sw = make_handle(g);
  const Cond a = add_cond(g, {}, if_only, cudaGraphCondTypeIf, 1);
  add_memset(a.bodies[0], {}, bytes_at(dev, 0), 0xA1);
  const Cond b = add_cond(g, {a.node}, if_else, cudaGraphCondTypeIf, 2);
  add_memset(b.bodies[0], {}, bytes_at(dev, 1), 0xB1);
  add_memset(b.bodies[1], {}, bytes_at(dev, 1), 0xB0);
  const Cond c = add_cond(g, {b.node}, sw, cudaGraphCondTypeSwitch, 3);
  for (unsigned i = 0; i < 3; ++i)
    add_memset(c.bodies[i], {}, bytes_at(dev, 2), 0xC0 + i);
  const cudaGraphExec_t exec = instantiate(g);

  clear(dev, 4);
  CUDA_OK(cudaGraphLaunch(exec, nullptr)); // every value 0
  CHECK(read(dev, 4) == std::vector<unsigned char>{0, 0xB0, 0xC0, 0});

  clear(dev, 4);
  cuda_double::set_conditional(if_only, 3);
  cuda_double::set_conditional(if_else, 1);
  cuda_double::set_conditional(sw, 2);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 4) == std::vector<unsigned char>{0xA1, 0xB1, 0xC2, 0});

  // A switch value past the last body runs none. Values stay across launches (no flag).
  clear(dev, 4);
  cuda_double::set_conditional(sw, 3);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 4) == std::vector<unsigned char>{0xA1, 0xB1, 0, 0});
  CHECK(cuda_double::conditional_evaluations(sw) == 3);
  CHECK(cuda_double::conditional_evaluations(if_only) == 3);
}

TEST_CASE("cudaGraphCondAssignDefault resets the value at each launch", "[conditional]") {
  Clean clean;
  void* dev = device_alloc(2);
  cudaGraph_t g = new_graph();
  const cudaGraphConditionalHandle with = make_handle(g, 1, cudaGraphCondAssignDefault);
  const cudaGraphConditionalHandle without = make_handle(g, 1);
  add_memset(add_cond(g, {}, with, cudaGraphCondTypeIf, 1).bodies[0], {}, bytes_at(dev, 0), 1);
  add_memset(add_cond(g, {}, without, cudaGraphCondTypeIf, 1).bodies[0], {}, bytes_at(dev, 1), 1);
  const cudaGraphExec_t exec = instantiate(g);
  clear(dev, 2);
  CUDA_OK(cudaGraphLaunch(exec, nullptr)); // `without` never took its default
  CHECK(read(dev, 2) == std::vector<unsigned char>{1, 0});

  cuda_double::set_conditional(without, 1);
  clear(dev, 2);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 2) == std::vector<unsigned char>{1, 1});

  cuda_double::set_conditional(with, 0);
  cuda_double::set_conditional(without, 0);
  clear(dev, 2);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 2) == std::vector<unsigned char>{1, 0});
  CHECK(cuda_double::conditional_value(with) == 1);
  CHECK(cuda_double::conditional_value(without) == 0);

  // A script overrides the default at the evaluation itself.
  cuda_double::script_conditional(with, {0});
  clear(dev, 2);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 2) == std::vector<unsigned char>{0, 0});
}

TEST_CASE("While runs its body while the value is non-zero", "[conditional]") {
  Clean clean;
  void* dev = device_alloc(1);
  cudaGraph_t g = new_graph();
  const cudaGraphConditionalHandle h = make_handle(g);
  const Cond w = add_cond(g, {}, h, cudaGraphCondTypeWhile, 1);
  add_memset(w.bodies[0], {}, dev, 0x77);
  const cudaGraphExec_t exec = instantiate(g);

  // Checked before the first iteration: a zero value runs nothing.
  clear(dev, 1);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 1)[0] == 0);
  CHECK(cuda_double::conditional_evaluations(h) == 1);

  // Three iterations, four checks.
  cuda_double::script_conditional(h, {1, 1, 1, 0});
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 1)[0] == 0x77);
  CHECK(cuda_double::conditional_evaluations(h) == 5);
  CHECK(cuda_double::conditional_value(h) == 0);
}

TEST_CASE("nested conditionals run per iteration of their parent", "[conditional]") {
  Clean clean;
  void* dev = device_alloc(4);
  cudaGraph_t g = new_graph();
  const cudaGraphConditionalHandle outer = make_handle(g);
  const Cond w = add_cond(g, {}, outer, cudaGraphCondTypeWhile, 1);
  // A handle of the parent graph does not serve a node of the body.
  cudaGraphNodeParams p = cond_params(outer, cudaGraphCondTypeSwitch, 3);
  cudaGraphNode_t n = nullptr;
  CHECK(cudaGraphAddNode(&n, w.bodies[0], nullptr, nullptr, 0, &p) == cudaErrorInvalidValue);
  const cudaGraphConditionalHandle inner = make_handle(w.bodies[0]);
  const Cond s = add_cond(w.bodies[0], {}, inner, cudaGraphCondTypeSwitch, 3);
  for (unsigned i = 0; i < 3; ++i)
    add_memset(s.bodies[i], {}, bytes_at(dev, i), 0x40 + i);
  const cudaGraphExec_t exec = instantiate(g);

  clear(dev, 4);
  cuda_double::script_conditional(outer, {1, 1, 1, 0});
  cuda_double::script_conditional(inner, {0, 2, 1});
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 4) == std::vector<unsigned char>{0x40, 0x41, 0x42, 0});
  CHECK(cuda_double::conditional_evaluations(outer) == 4);
  CHECK(cuda_double::conditional_evaluations(inner) == 3);
  CHECK(cuda_double::live_conditional_bodies() == 4);
}

TEST_CASE("bodies are captured into on other streams (the capturedWhileGraph pattern)",
          "[conditional][capture]") {
  Clean clean;
  void* dev = device_alloc(4);
  cudaStream_t a = make_stream();
  cudaStream_t b = make_stream();
  cudaStream_t c = make_stream();
  const auto mode = cudaStreamCaptureModeGlobal;

  CUDA_OK(cudaStreamBeginCapture(a, mode));
  CUDA_OK(cudaMemsetAsync(bytes_at(dev, 0), 0x10, 1, a));
  cudaStreamCaptureStatus st{};
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  std::size_t ndeps = 0;
  CUDA_OK(cudaStreamGetCaptureInfo(a, &st, nullptr, &graph, &deps, nullptr, &ndeps));
  REQUIRE(ndeps == 1);
  const cudaGraphConditionalHandle h = make_handle(graph, 0, cudaGraphCondAssignDefault);
  cudaGraphNodeParams p = cond_params(h, cudaGraphCondTypeWhile, 1);
  cudaGraphNode_t node = nullptr;
  CUDA_OK(cudaGraphAddNode(&node, graph, deps, nullptr, ndeps, &p));
  cudaGraph_t body = p.conditional.phGraph_out[0];
  CUDA_OK(
      cudaStreamUpdateCaptureDependencies(a, &node, nullptr, 1, cudaStreamSetCaptureDependencies));

  CUDA_OK(cudaStreamBeginCaptureToGraph(b, body, nullptr, nullptr, 0, mode));
  cudaGraph_t seen = nullptr;
  CUDA_OK(cudaStreamGetCaptureInfo(b, &st, nullptr, &seen, nullptr, nullptr, nullptr));
  CHECK(seen == body);
  CUDA_OK(cudaMemsetAsync(bytes_at(dev, 1), 0x20, 1, b));

  // Inside the body: another conditional with a handle of the body, its body on a third stream.
  CUDA_OK(cudaStreamGetCaptureInfo(b, &st, nullptr, &seen, &deps, nullptr, &ndeps));
  const cudaGraphConditionalHandle h2 = make_handle(body);
  cudaGraphNodeParams p2 = cond_params(h2, cudaGraphCondTypeIf, 1);
  cudaGraphNode_t node2 = nullptr;
  CUDA_OK(cudaGraphAddNode(&node2, body, deps, nullptr, ndeps, &p2));
  cudaGraph_t body2 = p2.conditional.phGraph_out[0];
  CUDA_OK(
      cudaStreamUpdateCaptureDependencies(b, &node2, nullptr, 1, cudaStreamSetCaptureDependencies));
  CUDA_OK(cudaStreamBeginCaptureToGraph(c, body2, nullptr, nullptr, 0, mode));
  CUDA_OK(cudaMemsetAsync(bytes_at(dev, 2), 0x30, 1, c));
  // A body still being captured into keeps its node and graph alive.
  CHECK(cudaGraphDestroyNode(node2) == cudaErrorIllegalState);
  CHECK(cudaGraphDestroyNode(node) == cudaErrorIllegalState);
  cudaGraph_t out = nullptr;
  CUDA_OK(cudaStreamEndCapture(c, &out));
  CHECK(out == body2);
  CUDA_OK(cudaMemsetAsync(bytes_at(dev, 1), 0x21, 1, b)); // after node2 in the body
  CUDA_OK(cudaStreamEndCapture(b, &out));
  CHECK(out == body);

  CUDA_OK(cudaMemsetAsync(bytes_at(dev, 3), 0x40, 1, a)); // after the While
  CUDA_OK(cudaStreamEndCapture(a, &out));
  REQUIRE(out == graph);

  const Nodes top = graph_nodes(graph);
  REQUIRE(top.size() == 3);
  CHECK(type_of(top[1]) == cudaGraphNodeTypeConditional);
  CHECK(deps_of(top[2]) == Nodes{node});
  const Nodes inside = graph_nodes(body);
  REQUIRE(inside.size() == 3);
  CHECK(deps_of(inside[1]) == Nodes{inside[0]});
  CHECK(deps_of(inside[2]) == Nodes{node2});
  CHECK(graph_nodes(body2).size() == 1);

  const cudaGraphExec_t exec = instantiate(graph);
  clear(dev, 4);
  cuda_double::script_conditional(h, {1, 1, 0});
  cuda_double::script_conditional(h2, {0, 1});
  CUDA_OK(cudaGraphLaunch(exec, a));
  CHECK(read(dev, 4) == std::vector<unsigned char>{0x10, 0x21, 0x30, 0x40});
  CHECK(cuda_double::conditional_evaluations(h) == 3);
  CHECK(cuda_double::conditional_evaluations(h2) == 2);
  // The default (0) applies at the next launch: the loop does not run.
  clear(dev, 4);
  CUDA_OK(cudaGraphLaunch(exec, a));
  CHECK(read(dev, 4) == std::vector<unsigned char>{0x10, 0, 0, 0x40});
}

TEST_CASE("a failed parent capture invalidates the capture into its body", "[conditional]") {
  Clean clean;
  cuda_double::expect_violations(); // provoked on purpose
  cudaStream_t a = make_stream();
  cudaStream_t b = make_stream();
  void* dev = device_alloc(1); // before the captures: cudaMalloc would invalidate them
  cudaEvent_t outside = nullptr;
  CUDA_OK(cudaEventCreate(&outside));
  CUDA_OK(cudaEventRecord(outside, a));
  CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus st{};
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamGetCaptureInfo(a, &st, nullptr, &graph, nullptr, nullptr, nullptr));
  const Cond w = add_cond(graph, {}, make_handle(graph), cudaGraphCondTypeWhile, 1);
  CUDA_OK(cudaStreamBeginCaptureToGraph(b, w.bodies[0], nullptr, nullptr, 0,
                                        cudaStreamCaptureModeGlobal));
  // Waiting on work outside the capture invalidates the parent capture only.
  CHECK(cudaStreamWaitEvent(a, outside, 0) == cudaErrorStreamCaptureIsolation);
  CUDA_OK(cudaStreamIsCapturing(b, &st));
  CHECK(st == cudaStreamCaptureStatusActive);
  cudaGraph_t out = nullptr;
  CHECK(cudaStreamEndCapture(a, &out) == cudaErrorStreamCaptureInvalidated);
  // The parent graph is gone, and its body with it. The capture into the body is orphaned: on the
  // H200 ending it (or destroying its stream) crashes (benchmark/probes/body_abandon.cu, cases
  // M3 and M4); the double records a violation there and goes on.
  CHECK(cuda_double::live_graphs() == 0);
  CHECK(cuda_double::live_conditional_bodies() == 0);
  CUDA_OK(cudaStreamIsCapturing(b, &st));
  CHECK(st == cudaStreamCaptureStatusInvalidated);
  CHECK(cudaMemsetAsync(dev, 0, 1, b) == cudaErrorStreamCaptureInvalidated);
  CHECK(cuda_double::violations().empty());
  CHECK(cudaStreamEndCapture(b, &out) == cudaErrorStreamCaptureInvalidated);
  CHECK(out == nullptr);
  CHECK(cuda_double::violations().size() == 1);
  CUDA_OK(cudaStreamIsCapturing(b, &st));
  CHECK(st == cudaStreamCaptureStatusNone);
}

// The H200's behaviour, read by benchmark/probes/body_abandon.cu (docs/testing.md): a capture into
// a graph that fails to end destroys that graph, a conditional body too, which its node still
// holds; destroying the parent graph then crashes. The old double kept the body.
TEST_CASE("a body capture that fails to end destroys the body graph", "[conditional]") {
  for (const bool unjoined : {false, true}) {
    INFO((unjoined ? "forked work left unjoined" : "invalidated"));
    Clean clean;
    cuda_double::expect_violations(); // provoked on purpose
    cudaStream_t a = make_stream();
    cudaStream_t b = make_stream();
    cudaStream_t side = make_stream();
    void* dev = device_alloc(1);
    cudaEvent_t fork = make_event(cudaEventDisableTiming);
    CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus st{};
    cudaGraph_t graph = nullptr;
    CUDA_OK(cudaStreamGetCaptureInfo(a, &st, nullptr, &graph, nullptr, nullptr, nullptr));
    const Cond w = add_cond(graph, {}, make_handle(graph), cudaGraphCondTypeWhile, 1);
    cudaGraphNode_t node = w.node;
    CUDA_OK(cudaStreamUpdateCaptureDependencies(a, &node, nullptr, 1,
                                                cudaStreamSetCaptureDependencies));
    CUDA_OK(cudaStreamBeginCaptureToGraph(b, w.bodies[0], nullptr, nullptr, 0,
                                          cudaStreamCaptureModeRelaxed));
    CUDA_OK(cudaMemsetAsync(dev, 1, 1, b));
    if (unjoined) {
      CUDA_OK(cudaEventRecord(fork, b));
      CUDA_OK(cudaStreamWaitEvent(side, fork, 0));
      CUDA_OK(cudaMemsetAsync(dev, 2, 1, side));
    } else {
      CHECK(cudaStreamSynchronize(b) == cudaErrorStreamCaptureUnsupported);
    }
    cudaGraph_t out = nullptr;
    CHECK(cudaStreamEndCapture(b, &out) ==
          (unjoined ? cudaErrorStreamCaptureUnjoined : cudaErrorStreamCaptureInvalidated));
    CHECK(out == nullptr);
    std::size_t count = 0;
    CHECK(cudaGraphGetNodes(w.bodies[0], nullptr, &count) == cudaErrorInvalidValue);
    CUDA_OK(cudaStreamIsCapturing(side, &st));
    CHECK(st == cudaStreamCaptureStatusNone);
    CUDA_OK(cudaStreamEndCapture(a, &out));
    CHECK(cuda_double::violations().empty());
    cudaGraphExec_t exec = nullptr;
    CHECK(cudaGraphInstantiate(&exec, out, 0) == cudaErrorInvalidValue);
    CHECK(cuda_double::violations().size() == 1);
    CUDA_OK(cudaGraphDestroy(out)); // the H200 crashes here
    CHECK(cuda_double::violations().size() == 2);
  }
}

TEST_CASE("a capture into a caller's graph that fails to end destroys that graph",
          "[conditional]") {
  Clean clean;
  cudaStream_t s = make_stream();
  cudaGraph_t g = make_graph();
  CUDA_OK(cudaStreamBeginCaptureToGraph(s, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t out = nullptr;
  CHECK(cudaStreamEndCapture(s, &out) == cudaErrorStreamCaptureInvalidated);
  CHECK(cudaGraphDestroy(g) == cudaErrorInvalidValue); // already gone, as on the H200
  CHECK(cuda_double::live_graphs() == 0);
}

TEST_CASE("a graph whose body is being captured into can be destroyed, and the capture is orphaned",
          "[conditional]") {
  Clean clean;
  cuda_double::expect_violations(); // provoked on purpose
  cudaStream_t a = make_stream();
  cudaStream_t b = make_stream();
  CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus st{};
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamGetCaptureInfo(a, &st, nullptr, &graph, nullptr, nullptr, nullptr));
  const Cond w = add_cond(graph, {}, make_handle(graph), cudaGraphCondTypeWhile, 1);
  CUDA_OK(cudaStreamBeginCaptureToGraph(b, w.bodies[0], nullptr, nullptr, 0,
                                        cudaStreamCaptureModeRelaxed));
  cudaGraph_t out = nullptr;
  CUDA_OK(cudaStreamEndCapture(a, &out));
  CUDA_OK(cudaGraphDestroy(out)); // the H200 returns cudaSuccess (probe case J)
  CHECK(cuda_double::violations().empty());
  CUDA_OK(cudaStreamDestroy(b)); // and crashes here or at the body's end
  CHECK(cuda_double::violations().size() == 1);
}

TEST_CASE("instantiation snapshots bodies, and cudaGraphExecUpdate reaches into them",
          "[conditional][update]") {
  Clean clean;
  void* dev = device_alloc(2);
  struct Built {
    cudaGraph_t g;
    cudaGraphConditionalHandle h;
    Cond c;
  };
  auto build = [&](cudaGraphConditionalNodeType type, unsigned size, unsigned value, bool extra) {
    Built b{new_graph(), 0, {}};
    b.h = make_handle(b.g, 1, cudaGraphCondAssignDefault);
    b.c = add_cond(b.g, {}, b.h, type, size);
    cudaGraphNode_t m = add_memset(b.c.bodies[0], {}, dev, value);
    if (extra)
      add_memset(b.c.bodies[0], {m}, bytes_at(dev, 1), value);
    return b;
  };
  const Built b1 = build(cudaGraphCondTypeIf, 1, 0x11, false);
  const cudaGraph_t g1 = b1.g;
  const Cond& c1 = b1.c;
  const cudaGraphExec_t exec = instantiate(g1);
  // The snapshot is deep: editing a body of the graph leaves the executable as it was.
  const cudaGraphNode_t m1 = graph_nodes(c1.bodies[0])[0];
  cudaMemsetParams mp{dev, 0, 0x12, 1, 1, 1};
  CUDA_OK(cudaGraphMemsetNodeSetParams(m1, &mp));
  clear(dev, 2);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CHECK(read(dev, 1)[0] == 0x11);

  // Graphs with conditional nodes: one executable at a time, no clone, no child graph node.
  cudaGraphExec_t second = nullptr;
  CHECK(cudaGraphInstantiate(&second, g1, 0) == cudaErrorNotSupported);
  cudaGraph_t clone = nullptr;
  CHECK(cudaGraphClone(&clone, g1) == cudaErrorNotSupported);
  cudaGraph_t parent = new_graph();
  cudaGraphNode_t child = nullptr;
  CHECK(cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, g1) == cudaErrorNotSupported);

  cudaGraphExecUpdateResultInfo info{};
  SECTION("same topology: the bodies' parameters are updated") {
    CUDA_OK(cudaGraphExecUpdate(exec, g1, &info));
    CHECK(info.result == cudaGraphExecUpdateSuccess);
    CUDA_OK(cudaGraphLaunch(exec, nullptr));
    CHECK(read(dev, 1)[0] == 0x12);
  }
  SECTION("a rebuilt graph: its own handle drives the node afterwards") {
    const Built b2 = build(cudaGraphCondTypeIf, 1, 0x13, false);
    CUDA_OK(cudaGraphExecUpdate(exec, b2.g, &info));
    const std::size_t before = cuda_double::conditional_evaluations(g1, b1.h);
    cuda_double::script_conditional(exec, b2.h, {0}); // the executable's handle is b2's now
    clear(dev, 2);
    CUDA_OK(cudaGraphLaunch(exec, nullptr));
    CHECK(read(dev, 1)[0] == 0);
    CHECK(cuda_double::conditional_evaluations(g1, b1.h) == before);
    CHECK(cuda_double::conditional_evaluations(b2.g, b2.h) == 1);
    // Its default applies at launch too.
    CUDA_OK(cudaGraphLaunch(exec, nullptr));
    CHECK(read(dev, 1)[0] == 0x13);
  }
  SECTION("changed body topology") {
    const Built b2 = build(cudaGraphCondTypeIf, 1, 0x13, true);
    CHECK(cudaGraphExecUpdate(exec, b2.g, &info) == cudaErrorGraphExecUpdateFailure);
    CHECK(info.result == cudaGraphExecUpdateErrorTopologyChanged);
    CHECK(info.errorNode == nullptr); // node counts differ, as on the H200
    clear(dev, 2);
    CUDA_OK(cudaGraphLaunch(exec, nullptr));
    CHECK(read(dev, 2) == std::vector<unsigned char>{0x11, 0}); // unchanged executable
  }
  // A conditional node's own parameters cannot change: NotSupported, as on the H200.
  SECTION("changed conditional type") {
    const Built b2 = build(cudaGraphCondTypeWhile, 1, 0x13, false);
    CHECK(cudaGraphExecUpdate(exec, b2.g, &info) == cudaErrorGraphExecUpdateFailure);
    CHECK(info.result == cudaGraphExecUpdateErrorNotSupported);
    CHECK(info.errorNode == b2.c.node);
  }
  SECTION("changed body count") {
    const Built b2 = build(cudaGraphCondTypeIf, 2, 0x13, false);
    CHECK(cudaGraphExecUpdate(exec, b2.g, &info) == cudaErrorGraphExecUpdateFailure);
    CHECK(info.result == cudaGraphExecUpdateErrorNotSupported);
    CHECK(info.errorNode == b2.c.node);
  }
  SECTION("changed node type inside a body") {
    cudaGraph_t g2 = new_graph();
    const Cond c2 = add_cond(g2, {}, make_handle(g2), cudaGraphCondTypeIf, 1);
    cudaGraphNode_t e = nullptr;
    CUDA_OK(cudaGraphAddEmptyNode(&e, c2.bodies[0], nullptr, 0));
    CHECK(cudaGraphExecUpdate(exec, g2, &info) == cudaErrorGraphExecUpdateFailure);
    CHECK(info.result == cudaGraphExecUpdateErrorNodeTypeChanged);
    CHECK(info.errorNode == e);
  }
  // The one executable gone, another may be made.
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphInstantiate(&second, g1, 0));
}

TEST_CASE("instantiation enforces the body rules", "[conditional]") {
  Clean clean;
  void* dev = device_alloc(4);
  cudaGraph_t g = new_graph();
  const Cond c = add_cond(g, {}, make_handle(g), cudaGraphCondTypeIf, 1);
  cudaError_t err = cudaSuccess;

  SECTION("allowed: empty, memset, memcpy, child graph, conditional") {
    cudaGraphNode_t e = nullptr;
    CUDA_OK(cudaGraphAddEmptyNode(&e, c.bodies[0], nullptr, 0));
    add_memset(c.bodies[0], {e}, dev, 1);
    cudaGraphNode_t cp = nullptr;
    CUDA_OK(cudaGraphAddMemcpyNode1D(&cp, c.bodies[0], &e, 1, bytes_at(dev, 1), dev, 1,
                                     cudaMemcpyDeviceToDevice));
    cudaGraph_t sub = new_graph();
    add_memset(sub, {}, bytes_at(dev, 2), 2);
    cudaGraphNode_t child = nullptr;
    CUDA_OK(cudaGraphAddChildGraphNode(&child, c.bodies[0], nullptr, 0, sub));
    add_cond(c.bodies[0], {}, make_handle(c.bodies[0]), cudaGraphCondTypeWhile, 1);
    const cudaGraphInstantiateParams ip = try_instantiate(g, err);
    CHECK(err == cudaSuccess);
    CHECK(ip.result_out == cudaGraphInstantiateSuccess);
  }
  SECTION("a host node in a body") {
    cudaHostNodeParams hp{noop, nullptr};
    cudaGraphNode_t host = nullptr;
    CUDA_OK(cudaGraphAddHostNode(&host, c.bodies[0], nullptr, 0, &hp));
    const cudaGraphInstantiateParams ip = try_instantiate(g, err);
    CHECK(err == cudaErrorInvalidValue);
    CHECK(ip.result_out == cudaGraphInstantiateNodeOperationNotSupported);
    CHECK(ip.errNode_out == host);
    // The same node outside a body is fine.
    cudaGraph_t plain = new_graph();
    CUDA_OK(cudaGraphAddHostNode(&host, plain, nullptr, 0, &hp));
    try_instantiate(plain, err);
    CHECK(err == cudaSuccess);
  }
  SECTION("an event record node in a nested body") {
    const Cond inner = add_cond(c.bodies[0], {}, make_handle(c.bodies[0]), cudaGraphCondTypeIf, 1);
    cudaEvent_t ev = nullptr;
    CUDA_OK(cudaEventCreate(&ev));
    cudaGraphNode_t rec = nullptr;
    CUDA_OK(cudaGraphAddEventRecordNode(&rec, inner.bodies[0], nullptr, 0, ev));
    const cudaGraphInstantiateParams ip = try_instantiate(g, err);
    CHECK(err == cudaErrorInvalidValue);
    CHECK(ip.result_out == cudaGraphInstantiateNodeOperationNotSupported);
    CHECK(ip.errNode_out == rec);
  }
  SECTION("a host node in a child graph of a body") {
    cudaGraph_t sub = new_graph();
    cudaHostNodeParams hp{noop, nullptr};
    cudaGraphNode_t host = nullptr;
    CUDA_OK(cudaGraphAddHostNode(&host, sub, nullptr, 0, &hp));
    cudaGraphNode_t child = nullptr;
    CUDA_OK(cudaGraphAddChildGraphNode(&child, c.bodies[0], nullptr, 0, sub));
    cudaGraphExec_t e = nullptr;
    CHECK(cudaGraphInstantiate(&e, g, 0) == cudaErrorInvalidValue);
  }
  SECTION("a cycle in a body") {
    cudaGraphNode_t x = nullptr, y = nullptr;
    CUDA_OK(cudaGraphAddEmptyNode(&x, c.bodies[0], nullptr, 0));
    CUDA_OK(cudaGraphAddEmptyNode(&y, c.bodies[0], &x, 1));
    CUDA_OK(cudaGraphAddDependencies(c.bodies[0], &y, &x, nullptr, 1));
    const cudaGraphInstantiateParams ip = try_instantiate(g, err);
    CHECK(err == cudaErrorInvalidValue);
    CHECK(ip.result_out == cudaGraphInstantiateInvalidStructure);
    CHECK(ip.errNode_out == c.node);
  }
  SECTION("a handle no node uses") {
    make_handle(g);
    const cudaGraphInstantiateParams ip = try_instantiate(g, err);
    CHECK(err == cudaErrorInvalidValue);
    CHECK(ip.result_out == cudaGraphInstantiateConditionalHandleUnused);
  }
  CHECK(cuda_double::live_execs() == 0);
}

TEST_CASE("bodies go with their node, graph or executable", "[conditional]") {
  Clean clean;
  void* dev = device_alloc(1);
  cudaGraph_t g = new_graph();
  const Cond outer = add_cond(g, {}, make_handle(g), cudaGraphCondTypeSwitch, 2);
  const Cond inner =
      add_cond(outer.bodies[1], {}, make_handle(outer.bodies[1]), cudaGraphCondTypeIf, 2);
  add_memset(inner.bodies[0], {}, dev, 1);
  CHECK(cuda_double::live_graphs() == 1);
  CHECK(cuda_double::live_conditional_bodies() == 4);

  const cudaGraphExec_t exec = instantiate(g);
  CHECK(cuda_double::live_conditional_bodies() == 4); // an executable's bodies are its own
  CUDA_OK(cudaGraphExecDestroy(exec));

  // Destroying the inner node takes its bodies (and their nodes) with it.
  const cudaGraphNode_t m = graph_nodes(inner.bodies[0])[0];
  CUDA_OK(cudaGraphDestroyNode(inner.node));
  CHECK(cuda_double::live_conditional_bodies() == 2);
  CHECK(cudaGraphNodeGetType(m, nullptr) == cudaErrorInvalidValue);
  std::size_t n = 0;
  CHECK(cudaGraphGetNodes(inner.bodies[0], nullptr, &n) == cudaErrorInvalidValue);

  CUDA_OK(cudaGraphDestroy(g));
  CHECK(cuda_double::live_graphs() == 0);
  CHECK(cuda_double::live_conditional_bodies() == 0);
  CHECK(cudaGraphGetNodes(outer.bodies[0], nullptr, &n) == cudaErrorInvalidValue);

  // reset() releases whatever is left.
  cudaGraph_t h = new_graph();
  add_cond(h, {}, make_handle(h), cudaGraphCondTypeWhile, 1);
  instantiate(h);
  cuda_double::reset();
  CHECK(cuda_double::live_conditional_bodies() == 0);
  CHECK(cuda_double::live_execs() == 0);
}

TEST_CASE("an endless While fails the launch", "[conditional]") {
  Clean clean;
  cudaGraph_t g = new_graph();
  const cudaGraphConditionalHandle h = make_handle(g, 1);
  add_cond(g, {}, h, cudaGraphCondTypeWhile, 1); // an empty body
  const cudaGraphExec_t exec = instantiate(g);
  cuda_double::script_conditional(h, {1, 1});
  CHECK(cudaGraphLaunch(exec, nullptr) == cudaErrorLaunchTimeout);
  // Two scripted iterations, then the limit of unscripted ones, then the check that gave up.
  CHECK(cuda_double::conditional_evaluations(h) == 2 + cuda_double::endless_while_limit + 1);
  // Once the value is 0, the same executable finishes.
  cuda_double::set_conditional(h, 0);
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
}

TEST_CASE("launching a graph with conditional nodes into a capture is refused",
          "[conditional][capture]") {
  Clean clean;
  cudaGraph_t g = new_graph();
  add_cond(g, {}, make_handle(g), cudaGraphCondTypeIf, 1);
  const cudaGraphExec_t exec = instantiate(g);
  cudaStream_t s = make_stream();
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaGraphLaunch(exec, s) == cudaErrorStreamCaptureUnsupported); // as on the H200
  cudaGraph_t out = nullptr;
  CHECK(cudaStreamEndCapture(s, &out) == cudaErrorStreamCaptureInvalidated);
}

TEST_CASE("cudaGraphDebugDotPrint draws conditional nodes and their bodies", "[conditional]") {
  Clean clean;
  cudaGraph_t g = new_graph();
  const Cond c = add_cond(g, {}, make_handle(g), cudaGraphCondTypeIf, 2);
  add_memset(c.bodies[1], {}, device_alloc(1), 1);
  const std::string path = "cuda_double_test_conditional.dot";
  CUDA_OK(cudaGraphDebugDotPrint(g, path.c_str(), 0));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string dot = ss.str();
  std::remove(path.c_str());
  CHECK(dot.find("\"n0\" [label=\"CONDITIONAL 0\" tooltip=\"if ") != std::string::npos);
  CHECK(dot.find("bodies=2") != std::string::npos);
  CHECK(dot.find("\"n0_b1_n0\" [label=\"MEMSET 0\"") != std::string::npos);
}

TEST_CASE("driver entry points for conditional nodes", "[conditional][driver]") {
  Clean clean;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuGraphConditionalHandleCreate", &fn, 13000, 0, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  auto create = reinterpret_cast<PFN_cuGraphConditionalHandleCreate_v12030>(fn);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuGraphAddNode", &fn, 13000, 0, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  auto add = reinterpret_cast<PFN_cuGraphAddNode_v12030>(fn);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuGraphAddNode", &fn, 12020, 0, &q));
  REQUIRE(q == cudaDriverEntryPointSuccess);
  CHECK(fn != reinterpret_cast<void*>(add)); // the older ABI, without edge data

  cudaGraph_t g = new_graph();
  CUgraphConditionalHandle h = 0;
  CHECK(create(&h, g, nullptr, 0, 4) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(create(&h, g, nullptr, 1, CU_GRAPH_COND_ASSIGN_DEFAULT) == CUDA_SUCCESS);
  CHECK(cuda_double::conditional_value(h) == 1);
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = h;
  p.conditional.type = CU_GRAPH_COND_TYPE_IF;
  p.conditional.size = 2;
  CUgraphNode node = nullptr;
  REQUIRE(add(&node, g, nullptr, nullptr, 0, &p) == CUDA_SUCCESS);
  CHECK(type_of(node) == cudaGraphNodeTypeConditional);
  REQUIRE(p.conditional.phGraph_out != nullptr);
  CHECK(graph_nodes(p.conditional.phGraph_out[1]).empty());
  CHECK(cuda_double::calls("cuGraphAddNode") == 1);
  CHECK(cuda_double::calls("cuGraphConditionalHandleCreate") == 2);
  CHECK(cuda_double::calls("cudaGraphAddNode") == 0);
}

TEST_CASE("CUPTI reports conditional nodes and the nodes of their bodies", "[conditional][cupti]") {
  Clean clean;
  created.clear();
  CUpti_SubscriberHandle sub = nullptr;
  REQUIRE(cuptiSubscribe(&sub, on_created, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) == CUPTI_SUCCESS);
  cudaGraph_t g = new_graph();
  const Cond c = add_cond(g, {}, make_handle(g), cudaGraphCondTypeWhile, 1);
  const cudaGraphNode_t m = add_memset(c.bodies[0], {}, device_alloc(1), 1);
  REQUIRE(created.size() == 2);
  CHECK(created[0] == std::pair<CUgraph, CUgraphNode>{g, c.node});
  CHECK(created[1] == std::pair<CUgraph, CUgraphNode>{c.bodies[0], m});
  std::uint32_t id = 0;
  CHECK(cuptiGetGraphId(c.bodies[0], &id) == CUPTI_SUCCESS);
  CHECK(id == cuda_double::graph_id(c.bodies[0]));
  std::uint64_t node_id = 0;
  CHECK(cuptiGetGraphNodeId(m, &node_id) == CUPTI_SUCCESS);
  CHECK(node_id == cuda_double::node_id(m));
  // Instantiation copies the bodies without callbacks.
  instantiate(g);
  CHECK(created.size() == 2);
  CHECK(cuptiUnsubscribe(sub) == CUPTI_SUCCESS);
}
