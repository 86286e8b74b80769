// bench_annotation_profile: where annot::on's capture cost goes. Not a goal of its own: it times
// each CUDA/CUPTI call the annotation policy makes, one by one over N nodes, and the policy's
// phases (scopes in the capture body; capture end + instantiate), so that the cost per scope in
// bench_annotations can be explained and cut where it is spent.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <cstdio>
#include <memory>
#include <vector>

namespace {

using bench::micros;
using bench::steady;

/// Median over `rounds` of the time `body` takes, per item (body handles `n` items).
template <class Body>
double per_item(int rounds, int n, Body&& body) {
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = steady::now();
    body();
    const auto t1 = steady::now();
    samples.push_back(micros(t0, t1) * 1000.0 / n);
  }
  return bench::summarize(samples).median;
}

} // namespace

int main() {
  if (!bench::device_present("bench_annotation_profile")) {
    return 0;
  }
  constexpr int n = 1000;
  constexpr int rounds = 15;
  cudaStream_t stream = nullptr;
  bench::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  int* sink = nullptr;
  bench::check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc");
  static_cast<void>(graphcap::annotation_id_source()); // CUPTI initialized outside the timings

  // A template graph of n kernels in a row, and its nodes in creation order.
  cudaGraph_t graph = nullptr;
  bench::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin");
  bench::issue_tiny(stream, n, sink);
  bench::check(cudaStreamEndCapture(stream, &graph), "end");
  std::size_t count = 0;
  bench::check(cudaGraphGetNodes(graph, nullptr, &count), "nodes");
  std::vector<cudaGraphNode_t> nodes(count);
  bench::check(cudaGraphGetNodes(graph, nodes.data(), &count), "nodes");

  std::printf("bench_annotation_profile: ns per call (median of %d rounds of %d)\n", rounds, n);
  const auto line = [](const char* what, double ns) { std::printf("  %-58s %8.1f\n", what, ns); };

  // During a capture of n / 2 kernels: each query a scope makes, repeated n times in a row (a
  // difference of two capture loops would drown it in the launches' own spread).
  const auto during_capture = [&](auto&& query) {
    cudaGraph_t captured = nullptr;
    bench::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin");
    bench::issue_tiny(stream, n / 2, sink);
    const double ns = per_item(rounds, n, [&] {
      for (int i = 0; i < n; ++i) {
        query();
      }
    });
    bench::check(cudaStreamEndCapture(stream, &captured), "end");
    bench::check(cudaGraphDestroy(captured), "destroy");
    return ns;
  };
  cudaStreamCaptureStatus status{};
  unsigned long long id = 0;
  cudaGraph_t capturing = nullptr;
  const cudaGraphNode_t* frontier = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t size = 0;
  line("capture: cudaStreamGetCaptureInfo (status, id)",
       during_capture([&] { static_cast<void>(cudaStreamGetCaptureInfo(stream, &status, &id)); }));
  line("capture: cudaStreamGetCaptureInfo (frontier, edge data)", during_capture([&] {
         static_cast<void>(
             cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, &frontier, &edges, &size));
       }));
  line("capture: cudaStreamGetCaptureInfo (graph, frontier, edge data)", during_capture([&] {
         static_cast<void>(
             cudaStreamGetCaptureInfo(stream, &status, &id, &capturing, &frontier, &edges, &size));
       }));
  line("capture: cudaGraphNodeGetDependentNodes of the frontier (8-slot)",
       during_capture([&] {
         static_cast<void>(
             cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, &frontier, &edges, &size));
         cudaGraphNode_t out[8] = {};
         cudaGraphEdgeData out_edges[8] = {};
         std::size_t slots = 8;
         static_cast<void>(cudaGraphNodeGetDependentNodes(frontier[0], out, out_edges, &slots));
       }) - during_capture([&] {
         static_cast<void>(
             cudaStreamGetCaptureInfo(stream, &status, &id, nullptr, &frontier, &edges, &size));
       }));
  line("capture: capture info + cudaGraphGetNodes (count only), n/2 nodes", during_capture([&] {
         static_cast<void>(
             cudaStreamGetCaptureInfo(stream, &status, &id, &capturing, &frontier, &edges, &size));
         std::size_t all = 0;
         static_cast<void>(cudaGraphGetNodes(capturing, nullptr, &all));
       }));

  // On a template graph, node by node: what capture end costs.
  const auto each_node = [&](auto&& per_node) {
    return per_item(rounds, n, [&] {
      for (cudaGraphNode_t node : nodes) {
        per_node(node);
      }
    });
  };
  line("template: cudaGraphNodeGetDependentNodes (count + fetch)",
       each_node([](cudaGraphNode_t node) {
         std::size_t c = 0;
         static_cast<void>(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &c));
         cudaGraphNode_t out[4];
         cudaGraphEdgeData edges[4];
         c = std::min<std::size_t>(c, 4);
         static_cast<void>(cudaGraphNodeGetDependentNodes(node, out, edges, &c));
       }));
  line("template: cudaGraphNodeGetType", each_node([](cudaGraphNode_t node) {
         cudaGraphNodeType type{};
         static_cast<void>(cudaGraphNodeGetType(node, &type));
       }));
  line("template: cuptiGetGraphNodeId", each_node([](cudaGraphNode_t node) {
         std::uint64_t id = 0;
         static_cast<void>(cuptiGetGraphNodeId(node, &id));
       }));
  line("template: cuGraphKernelNodeGetParams (driver)", each_node([](cudaGraphNode_t node) {
         CUDA_KERNEL_NODE_PARAMS_v2 params{};
         static_cast<void>(graphcap::detail::driver().graph_kernel_node_get_params(node, &params));
       }));
  line("template: detail::kernel_name (params, name, demangle cache)",
       each_node(
           [](cudaGraphNode_t node) { static_cast<void>(graphcap::detail::kernel_name(node)); }));
  line("template: cudaGraphGetNodes (all, once) per node", per_item(rounds, n, [&] {
         std::size_t c = nodes.size();
         static_cast<void>(cudaGraphGetNodes(graph, nodes.data(), &c));
       }));

  // Instantiation-time work.
  cudaGraphExec_t exec = nullptr;
  bench::check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  line("exec: cuptiGetGraphExecId (one per instantiation, per call)", per_item(rounds, n, [&] {
         for (int i = 0; i < n; ++i) {
           std::uint32_t id = 0;
           static_cast<void>(cuptiGetGraphExecId(exec, &id));
         }
       }));
  std::vector<graphcap::node_annotation> annotations(n);
  for (int i = 0; i < n; ++i) {
    annotations[static_cast<std::size_t>(i)].id =
        (std::uint64_t{7} << 32U) | static_cast<unsigned>(i);
    annotations[static_cast<std::size_t>(i)].kernel = "bench::tiny(int*)";
    annotations[static_cast<std::size_t>(i)].values = {{"name", "scope"}};
  }
  line("registry: publish (one shared list) per annotation", per_item(rounds, n, [&] {
         graphcap::detail::registry().publish(
             7, std::make_shared<const std::vector<graphcap::node_annotation>>(annotations));
       }));
  graphcap::clear_annotations();
  line("copy of one node_annotation", per_item(rounds, n, [&] {
         std::vector<graphcap::node_annotation> copy = annotations;
         static_cast<void>(copy);
       }));

  // The policy's phases, per scope of one kernel: body (marks) and end (capture end, merge, ids,
  // names, instantiate, publish), annot::on minus annot::off.
  std::vector<double> body_on, end_on, body_off, end_off;
  // One capture of n one-kernel scopes into a new Graph: (body, end) times per scope.
  const auto phases = [&]<class Graph>(std::vector<double>& body, std::vector<double>& end) {
    Graph graph;
    steady::time_point t0 = steady::now(), t1{};
    graph.capture(stream, [&](typename Graph::scope& cap) {
      for (int s = 0; s < n; ++s) {
        auto region = cap.mark("scope");
        bench::tiny<<<1, 32, 0, cap.stream()>>>(sink);
      }
      t1 = steady::now();
    });
    const auto t2 = steady::now();
    body.push_back(micros(t0, t1) * 1000.0 / n);
    end.push_back(micros(t1, t2) * 1000.0 / n);
  };
  for (int r = 0; r < rounds; ++r) {
    phases.template operator()<graphcap::lean_graph>(body_off, end_off);
    phases.template operator()<graphcap::graph_with<graphcap::annot::on>>(body_on, end_on);
  }
  const double body = bench::summarize(body_on).median - bench::summarize(body_off).median;
  const double end = bench::summarize(end_on).median - bench::summarize(end_off).median;
  line("policy: scopes in the body (on - off), per scope", body);
  line("policy: capture end + instantiate (on - off), per scope", end);
  line("policy: total per scope", body + end);

  graphcap::clear_annotations();
  bench::check(cudaGraphExecDestroy(exec), "exec destroy");
  bench::check(cudaGraphDestroy(graph), "destroy");
  bench::check(cudaFree(sink), "cudaFree");
  bench::check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}
