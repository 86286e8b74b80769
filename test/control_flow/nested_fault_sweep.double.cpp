// The nested fault sweep (the reliability issue), for the core configurations (annot::on:
// annotation_fault_sweep.cpp): captures with conditional bodies three levels deep, if_else and
// switch_, replayed, reset and destroyed, with every CUDA call failing in turn and the user's
// exception thrown at each point of the work. What each case must show: nested_sweep.hpp.
#include "nested_sweep.hpp"

#include <graphcap/graphcap.hpp>

#include "catch.hpp"

namespace gc = graphcap;
using nested_sweep::sweep_both;

TEST_CASE("nested fault sweep: graph (private pool)") {
  sweep_both<gc::graph>("graph");
}

TEST_CASE("nested fault sweep: shared pool") {
  sweep_both<gc::graph_with<gc::pool::shared>>("shared pool");
}

TEST_CASE("nested fault sweep: lean_graph") {
  sweep_both<gc::lean_graph>("lean_graph");
}

TEST_CASE("nested fault sweep: liveness check with a private pool") {
  sweep_both<gc::graph_with<gc::liveness::check, gc::pool::private_pool>>("liveness check");
}
