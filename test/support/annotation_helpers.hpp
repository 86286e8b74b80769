// test/support/annotation_helpers.hpp - helpers for the annot::on tests (they include
// <graphcap/annotations.hpp>, so only targets linking graphcap::annotations may include this).
#pragma once

#include <graphcap/annotations.hpp>

namespace gctest {

/// Prefers `discovery` for the annotated captures made while it lives, then restores the previous
/// preference.
class prefer_discovery {
public:
  explicit prefer_discovery(graphcap::node_discovery discovery) noexcept
      : previous_(graphcap::preferred_node_discovery()) {
    graphcap::set_node_discovery(discovery);
  }
  prefer_discovery(const prefer_discovery&) = delete;
  prefer_discovery& operator=(const prefer_discovery&) = delete;
  ~prefer_discovery() { graphcap::set_node_discovery(previous_); }

private:
  graphcap::node_discovery previous_;
};

} // namespace gctest
