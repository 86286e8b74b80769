// expect: annot::on_marker is spelled annot::on::marker since 0\.3
// The marker of annot::on scopes is the class annot::on::marker, as annot::off's is
// annot::off::marker; the 0.2 name annot::on_marker stays one release, deprecated with a message
// that gives the new one (made an error here, so that the test sees it; the control uses the
// new name).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <graphcap/annotations.hpp>

#include <type_traits>

int main() {
#ifdef GRAPHCAP_CONTROL
  const graphcap::annot::on::marker* marker = nullptr;
#else
  const graphcap::annot::on_marker* marker = nullptr;
#endif
  static_assert(std::is_same_v<decltype(marker), const graphcap::annot::on::marker*>);
}
