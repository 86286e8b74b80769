// Compiled as C++17 by check_standard.cmake: graphcap's headers must stop with their one #error
// ("graphcap needs C++20") before any other diagnostic; compiled as C++20, the same file builds.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

int main() {
  graphcap::lean_graph graph;
  return graph.empty() ? 0 : 1;
}
