// expect: lifecycle_hooks
// A policy's on_reset runs where the graph cannot let an exception out (reset, destruction):
// the concept requires it noexcept, and a policy that could throw there does not compile.
#include <graphcap/graphcap.hpp>

struct resets_loudly : graphcap::policy_base<graphcap::policy_kind::liveness> {
#ifdef GRAPHCAP_CONTROL
  void on_reset() noexcept {}
#else
  void on_reset() {} // may throw
#endif
  void add_input(const void* /*pointer*/) {}
  void add_input(const void* /*pointer*/, const std::weak_ptr<const void>& /*token*/) {}
  void exclude(const void* /*base*/, std::size_t /*bytes*/) {}
};

int main() {
  graphcap::basic_graph<graphcap::mode::global, graphcap::pool::off, graphcap::annot::off,
                        resets_loudly>
      graph;
  static_cast<void>(graph);
}
