// graphcap/core/graph_with.hpp - pick a configuration by naming only the policies you want.
//
//   using debug = graphcap::graph_with<graphcap::liveness::check, graphcap::annot::on>;
//
// Policies come in any order; every kind not named takes its lean default (mode::global,
// pool::off, annot::off, liveness::off): graph_with<> is lean_graph, and each named policy
// switches one feature on. The selection runs on Boost.Hana, in host code only.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/basic_graph.hpp>
#include <graphcap/core/policy.hpp>

#if defined(__has_include)
#if !__has_include(<boost/hana/tuple.hpp>)
// One line: a preprocessor message is not split.
// clang-format off
#error "graphcap: graph_with (and <graphcap/graphcap.hpp>, which includes it) needs Boost.Hana, from the Boost >= 1.74 headers, which this build does not find: install them (Debian: libboost-dev) where CMake's find_package(Boost CONFIG) finds them, or include <graphcap/basic_graph.hpp>, the lean core, which needs no Boost"
// clang-format on
#endif
#endif

#include <boost/hana/any_of.hpp>
#include <boost/hana/count_if.hpp>
#include <boost/hana/equal.hpp>
#include <boost/hana/filter.hpp>
#include <boost/hana/front.hpp>
#include <boost/hana/is_empty.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/less_equal.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

namespace graphcap {
namespace detail {

namespace hana = boost::hana;

/// The category of P, or `void` for a type that is no graphcap policy.
template <class P>
struct category_of {
  using type = void;
};
template <has_policy_category P>
struct category_of<P> {
  using type = typename P::policy_category;
};

template <class... Policies>
struct policy_selection {
  static constexpr auto categories = hana::tuple_t<typename category_of<Policies>::type...>;

  static_assert(!hana::any_of(categories,
                              [](auto category) { return category == hana::type_c<void>; }),
                "graphcap::graph_with: every argument must be a graphcap policy: a type from "
                "graphcap::mode, graphcap::pool, graphcap::annot or graphcap::liveness");

  template <class Category>
  static constexpr auto count_of() {
    return hana::count_if(categories,
                          [](auto category) { return category == hana::type_c<Category>; });
  }
  static_assert(count_of<mode_category>() <= hana::size_c<1>,
                "graphcap::graph_with: two capture modes given; name at most one graphcap::mode");
  static_assert(count_of<pool_category>() <= hana::size_c<1>,
                "graphcap::graph_with: two pool policies given; name at most one graphcap::pool");
  static_assert(count_of<annot_category>() <= hana::size_c<1>,
                "graphcap::graph_with: two annotation policies given; name at most one "
                "graphcap::annot");
  static_assert(count_of<liveness_category>() <= hana::size_c<1>,
                "graphcap::graph_with: two liveness policies given; name at most one "
                "graphcap::liveness");

  /// The policy of `Category` among Policies, else Default.
  template <class Category, class Default>
  static constexpr auto pick() {
    constexpr auto matching = hana::filter(hana::tuple_t<Policies...>, [](auto policy) {
      return hana::type_c<typename category_of<typename decltype(policy)::type>::type> ==
             hana::type_c<Category>;
    });
    if constexpr (hana::is_empty(matching)) {
      return hana::type_c<Default>;
    } else {
      return hana::front(matching);
    }
  }

  using type =
      basic_graph<typename decltype(pick<mode_category, mode::global>())::type,
                  typename decltype(pick<pool_category, graphcap::pool::off>())::type,
                  typename decltype(pick<annot_category, annot::off>())::type,
                  typename decltype(pick<liveness_category, graphcap::liveness::off>())::type>;
};

} // namespace detail

/// basic_graph with the named policies, in any order, and lean defaults for the rest.
template <class... Policies>
using graph_with = typename detail::policy_selection<Policies...>::type;

} // namespace graphcap
