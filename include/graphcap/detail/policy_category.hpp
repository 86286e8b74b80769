// graphcap/detail/policy_category.hpp - the four kinds of policy, as tag types.
//
// Every policy names its kind through a nested `policy_category` typedef. basic_graph's concepts
// check it (so a policy in the wrong slot fails with the slot's concept name), and graph_with uses
// it to sort policies given in any order into their slots.
#pragma once

namespace graphcap::detail {

struct mode_category {};
struct pool_category {};
struct annot_category {};
struct liveness_category {};

template <class P>
concept has_policy_category = requires {
  typename P::policy_category;
};

} // namespace graphcap::detail
