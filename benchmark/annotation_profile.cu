// bench_annotation_profile: where annot::on's capture cost goes. Not a goal of its own: it times
// each CUDA/CUPTI call the annotation policy makes, one by one over N nodes, and the policy's
// phases (scopes in the capture body; capture end + instantiate), so that the cost per scope in
// bench_annotations can be explained and cut where it is spent.
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <cudaTypedefs.h>

#include <cstdio>
#include <memory>
#include <utility>
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
  const bench::owned_stream stream;
  const bench::device_array<int> sink(1);
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
  // The same two queries through the driver (the runtime's wrapper costs apart).
  const auto driver_function = [](const char* symbol) {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    bench::check(
        cudaGetDriverEntryPointByVersion(symbol, &function, 12030, cudaEnableDefault, &found),
        symbol);
    return function;
  };
  // NOLINTBEGIN: how driver entry points are typed
  const auto cu_capture_info = reinterpret_cast<PFN_cuStreamGetCaptureInfo_v12030>(
      driver_function("cuStreamGetCaptureInfo"));
  const auto cu_dependents = reinterpret_cast<PFN_cuGraphNodeGetDependentNodes_v12030>(
      driver_function("cuGraphNodeGetDependentNodes"));
  // NOLINTEND
  CUstreamCaptureStatus cu_status{};
  cuuint64_t cu_id = 0;
  const CUgraphNode* cu_frontier = nullptr;
  const CUgraphEdgeData* cu_edges = nullptr;
  const auto cu_query = [&] {
    static_cast<void>(
        cu_capture_info(stream, &cu_status, &cu_id, nullptr, &cu_frontier, &cu_edges, &size));
  };
  line("capture: cuStreamGetCaptureInfo (driver; frontier, edge data)", during_capture(cu_query));
  line("capture: cuGraphNodeGetDependentNodes (driver) of the frontier",
       during_capture([&] {
         cu_query();
         CUgraphNode out[8] = {};
         CUgraphEdgeData out_edges[8] = {};
         std::size_t slots = 8;
         static_cast<void>(cu_dependents(cu_frontier[0], out, out_edges, &slots));
       }) - during_capture(cu_query));
  line("capture: capture info + cudaGraphGetNodes (count only), n/2 nodes", during_capture([&] {
         static_cast<void>(
             cudaStreamGetCaptureInfo(stream, &status, &id, &capturing, &frontier, &edges, &size));
         std::size_t all = 0;
         static_cast<void>(cudaGraphGetNodes(capturing, nullptr, &all));
       }));

  // Creation callbacks: a capture of n kernels with its nodes logged, against one without; and
  // taking plus giving back CUPTI's subscriber, once per capture.
  const auto capture_of_n = [&](bool logged) {
    return per_item(rounds, n, [&] {
      graphcap::detail::creation_watch watch;
      if (logged && !watch.subscribe()) {
        std::printf("  (CUPTI's callback subscriber is taken: no callback timings)\n");
      }
      cudaGraph_t captured = nullptr;
      bench::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin");
      bench::check(cudaStreamGetCaptureInfo(stream, &status, &id, &capturing), "capture info");
      if (logged && !watch.start(capturing)) {
        std::printf("  (the creation log could not start)\n");
      }
      bench::issue_tiny(stream, n, sink);
      watch.finish();
      bench::check(cudaStreamEndCapture(stream, &captured), "end");
      bench::check(cudaGraphDestroy(captured), "destroy");
    });
  };
  line("capture: creation callback per node (logged minus not)",
       capture_of_n(true) - capture_of_n(false));
  line("per capture: take and give back CUPTI's subscriber", per_item(rounds, 100, [&] {
         for (int i = 0; i < 100; ++i) {
           graphcap::detail::creation_watch watch;
           static_cast<void>(watch.subscribe());
         }
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
  line("template: cuGraphNodeGetType (driver)", each_node([](cudaGraphNode_t node) {
         CUgraphNodeType type{};
         static_cast<void>(graphcap::detail::driver().graph_node_get_type(node, &type));
       }));
  line("template: cuptiGetGraphNodeId", each_node([](cudaGraphNode_t node) {
         std::uint64_t id = 0;
         static_cast<void>(cuptiGetGraphNodeId(node, &id));
       }));
  line("template: cuGraphKernelNodeGetParams (driver)", each_node([](cudaGraphNode_t node) {
         CUDA_KERNEL_NODE_PARAMS_v2 params{};
         static_cast<void>(graphcap::detail::driver().graph_kernel_node_get_params(node, &params));
       }));
  graphcap::detail::kernel_names names{graphcap::detail::driver_if_available()};
  line("template: detail::kernel_names (params; a kernel met before)",
       each_node([&](cudaGraphNode_t node) { static_cast<void>(names.of(node)); }));
  line("template: cudaGraphGetNodes (all, once) per node", per_item(rounds, n, [&] {
         std::size_t c = nodes.size();
         static_cast<void>(cudaGraphGetNodes(graph, nodes.data(), &c));
       }));

  // Destroying a template (10 kernels) and an executable whose ids CUPTI was asked for, against
  // ones it was not: whether CUPTI's id bookkeeping costs at destruction.
  const auto destroy_cost = [&](bool ids_asked) {
    std::vector<double> graph_ns, exec_ns;
    for (int r = 0; r < 201; ++r) {
      cudaGraph_t small = nullptr;
      bench::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin");
      bench::issue_tiny(stream, 10, sink);
      bench::check(cudaStreamEndCapture(stream, &small), "end");
      cudaGraphExec_t small_exec = nullptr;
      bench::check(cudaGraphInstantiate(&small_exec, small, 0), "instantiate");
      if (ids_asked) {
        std::size_t one = 1;
        cudaGraphNode_t first = nullptr;
        bench::check(cudaGraphGetNodes(small, &first, &one), "nodes");
        std::uint64_t node_id = 0;
        std::uint32_t exec_id = 0;
        static_cast<void>(cuptiGetGraphNodeId(first, &node_id));
        static_cast<void>(cuptiGetGraphExecId(small_exec, &exec_id));
      }
      const auto t0 = steady::now();
      bench::check(cudaGraphDestroy(small), "destroy");
      const auto t1 = steady::now();
      bench::check(cudaGraphExecDestroy(small_exec), "exec destroy");
      const auto t2 = steady::now();
      graph_ns.push_back(micros(t0, t1) * 1000.0);
      exec_ns.push_back(micros(t1, t2) * 1000.0);
    }
    return std::pair{bench::summarize(graph_ns).median, bench::summarize(exec_ns).median};
  };
  const auto [graph_plain, exec_plain] = destroy_cost(false);
  const auto [graph_asked, exec_asked] = destroy_cost(true);
  line("destroy: 10-kernel template, ids not asked (per graph)", graph_plain);
  line("destroy: 10-kernel template, ids asked (per graph)", graph_asked);
  line("destroy: its executable, ids not asked", exec_plain);
  line("destroy: its executable, ids asked", exec_asked);

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

  // The policy's phases, per scope of one kernel, for S scopes per capture: body (marks), end
  // (capture end: close, merge, ids, types, names) and instantiate (re-key, publish), annot::on
  // minus annot::off, for each node discovery. Absolute times of annot::off too, for scale.
  using annotated = graphcap::graph_with<graphcap::annot::on>;
  struct phase_samples {
    std::vector<double> body, end, instantiate, destroy;
  };
  // One capture of `scopes` one-kernel scopes into a new Graph, its times per scope appended.
  const auto phases = [&]<class Graph>(int scopes, phase_samples& samples) {
    steady::time_point t0{}, t1{}, t2{}, t3{};
    {
      Graph graph{graphcap::keep_graph};
      t0 = steady::now();
      graph.capture(stream, [&](typename Graph::scope& cap) {
        for (int s = 0; s < scopes; ++s) {
          auto region = cap.mark("scope");
          bench::tiny<<<1, 32, 0, cap.stream()>>>(sink);
        }
        t1 = steady::now();
      });
      t2 = steady::now();
      graph.instantiate();
      t3 = steady::now();
    }
    const auto t4 = steady::now(); // the template and the executable destroyed
    samples.body.push_back(micros(t0, t1) * 1000.0 / scopes);
    samples.end.push_back(micros(t1, t2) * 1000.0 / scopes);
    samples.instantiate.push_back(micros(t2, t3) * 1000.0 / scopes);
    samples.destroy.push_back(micros(t3, t4) * 1000.0 / scopes);
  };
  for (const int scopes : {10, 100, 1000}) {
    phase_samples off, callbacks, walk;
    const int repeats = scopes == 10 ? 401 : scopes == 100 ? 101 : rounds;
    for (int r = 0; r < repeats; ++r) {
      phases.template operator()<graphcap::lean_graph>(scopes, off);
      phases.template operator()<annotated>(scopes, callbacks);
      graphcap::set_node_discovery(graphcap::node_discovery::graph_walk);
      phases.template operator()<annotated>(scopes, walk);
      graphcap::set_node_discovery(graphcap::node_discovery::creation_callbacks);
    }
    // CUPTI's subscriber kept between captures: its own loop, with its own annot::off samples
    // (giving the subscriber back between two kept captures would put the cost back).
    phase_samples off_kept, kept;
    graphcap::keep_cupti_subscriber(true);
    for (int r = 0; r < repeats; ++r) {
      phases.template operator()<graphcap::lean_graph>(scopes, off_kept);
      phases.template operator()<annotated>(scopes, kept);
    }
    graphcap::keep_cupti_subscriber(false);
    const auto median = [](const std::vector<double>& values) {
      return bench::summarize(values).median;
    };
    std::printf("  phases, %d scopes per capture (median of %d), ns per scope:\n", scopes, repeats);
    std::printf("  %-58s %8.1f %8.1f %8.1f %8s %8.1f\n",
                "  annot::off, absolute: body, end, inst, destroy", median(off.body),
                median(off.end), median(off.instantiate), "", median(off.destroy));
    const auto report_phases = [&](const char* discovery, const phase_samples& on,
                                   const phase_samples& base) {
      const double body = median(on.body) - median(base.body);
      const double end = median(on.end) - median(base.end);
      const double inst = median(on.instantiate) - median(base.instantiate);
      const double destroy = median(on.destroy) - median(base.destroy);
      std::printf("  %-58s %8.1f %8.1f %8.1f %8.1f %8.1f\n", discovery, body, end, inst,
                  body + end + inst, destroy);
    };
    std::printf("  %-58s %8s %8s %8s %8s %8s\n", "on minus off:", "body", "end", "inst", "total",
                "destroy");
    report_phases("  creation callbacks", callbacks, off);
    report_phases("  creation callbacks, subscriber kept", kept, off_kept);
    report_phases("  graph walk", walk, off);
  }

  graphcap::clear_annotations();
  bench::check(cudaGraphExecDestroy(exec), "exec destroy");
  bench::check(cudaGraphDestroy(graph), "destroy");
  return 0;
}
