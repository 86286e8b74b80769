// graphcap/detail/hooks.hpp - deprecated entry header (0.2's spelling, kept for one release):
// <graphcap/core/policy.hpp> has the public policy_base<policy_kind::...>, and
// detail::no_hooks<detail::*_category> as an alias of it.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
