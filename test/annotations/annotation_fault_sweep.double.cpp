// The fault sweeps for annot::on (flat_sweep.hpp and nested_sweep.hpp), with both node
// discoveries: CUPTI's creation callbacks (the double's CUPTI) and the graph walk. Annotations
// never fail a capture when CUDA or CUPTI refuses a query (annotations/on.hpp): those
// failures are absorbed in the capture steps, and the capture still works.
#include "flat_sweep.hpp"
#include "nested_sweep.hpp"

#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "annotation_helpers.hpp"
#include "catch.hpp"
#include "fault_sweep.hpp"

#include <cuda_double/cupti_control.hpp>

#include <string_view>
#include <type_traits>
#include <vector>

namespace gc = graphcap;
using gcsweep::absorption;
using gcsweep::phase;
using gcsweep::phase_set;
using gcsweep::phases;

template <class Graph>
requires std::is_same_v<typename Graph::annot_type, gc::annot::on>
struct gcsweep::policy_absorptions<Graph> {
  static std::vector<absorption> rules() {
    constexpr phase_set capturing = phases(phase::capture, phase::capture_end);
    constexpr std::string_view query =
        "a query annot::on makes while a capture runs or ends: refused, that scope tags nothing "
        "(or the capture has no ids), the error is cleared and the capture goes on";
    std::vector<absorption> list;
    for (const std::string_view function :
         {"cudaStreamGetCaptureInfo", "cuStreamGetCaptureInfo", "cuGraphGetNodes",
          "cuGraphGetRootNodes", "cuGraphNodeGetDependentNodes", "cuGraphNodeGetType",
          "cuptiGetGraphId", "cuptiGetGraphNodeId"}) {
      list.push_back({function, capturing, query});
    }
    list.push_back({"cuptiSubscribe", capturing,
                    "CUPTI's callback subscriber refused at capture begin: the capture finds its "
                    "nodes by the graph walk instead"});
    list.push_back({"cuptiEnableCallback", capturing, "as cuptiSubscribe"});
    list.push_back({"cuptiUnsubscribe", capturing | phases(phase::discard),
                    "the subscriber given back as the capture ends or is discarded: teardown "
                    "never throws"});
    list.push_back({"cuptiGetGraphExecId",
                    capturing | phases(phase::instantiate, phase::lazy_replay, phase::loop),
                    "an executable's id, to publish its annotations in the registry: without "
                    "it the executable is not published (the graph keeps its annotations)"});
    return list;
  }
  /// Whatever failed, CUPTI's subscriber went back when the last capture ended.
  static void check_case() { CHECK_FALSE(cuda_double::cupti_subscribed()); }
};

namespace {
using annotated = gc::graph_with<gc::annot::on, gc::pool::private_pool>;
} // namespace

TEST_CASE("fault sweep: annot::on, creation callbacks") {
  flat_sweep::sweep<annotated>("annot::on, creation callbacks");
}

TEST_CASE("fault sweep: annot::on, graph walk") {
  const gctest::prefer_discovery walk{gc::node_discovery::graph_walk};
  flat_sweep::sweep<annotated>("annot::on, graph walk");
}

TEST_CASE("nested fault sweep: annot::on, creation callbacks") {
  nested_sweep::sweep_both<annotated>("annot::on, creation callbacks");
}

TEST_CASE("nested fault sweep: annot::on, graph walk") {
  const gctest::prefer_discovery walk{gc::node_discovery::graph_walk};
  nested_sweep::sweep_both<annotated>("annot::on, graph walk");
}
