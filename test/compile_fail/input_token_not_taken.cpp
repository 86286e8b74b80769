// expect: scope::input\(pointer, token\) needs a Liveness policy that takes this token
// A liveness token tells liveness::check when a sub-allocator's memory is freed: it is a
// std::weak_ptr (or what converts to one). Anything else is refused by name, at the call.
#include <graphcap/graphcap.hpp>

#include <memory>

using checked = graphcap::graph_with<graphcap::liveness::check>;

void declare(checked::scope& cap, const void* pointer, const std::shared_ptr<int>& owner) {
#ifdef GRAPHCAP_CONTROL
  cap.input(pointer, std::weak_ptr<const void>{owner});
  cap.input(pointer, owner); // a shared_ptr converts to a weak_ptr<const void>
#else
  static_cast<void>(owner);
  cap.input(pointer, 42); // not a token
#endif
}
int main() {}
