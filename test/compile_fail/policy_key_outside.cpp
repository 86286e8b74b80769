// expect: policy_key.* is private within this context|policy_key.* is inaccessible
// The lifecycle is closed: its policies open only to a key that control flow and graphcap's own
// leaves can make (core/detail/graph_lifecycle.hpp). Code outside them cannot make one, so a
// graph's mutable policies are reachable only through the public calls.
#include <graphcap/graphcap.hpp>

int main() {
  graphcap::lean_graph graph;
#ifdef GRAPHCAP_CONTROL
  (void)graph.pool_policy(); // the read-only door every user has
#else
  const graphcap::detail::policy_key key{};
  (void)key;
#endif
  (void)graph;
}
