// graphcap/detail/no_hooks.hpp - deprecated entry header (the spelling before 0.2's
// detail/hooks.hpp, kept for one release): <graphcap/core/policy.hpp> has the public
// policy_base<policy_kind::...>, and detail::no_hooks as an alias of it.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/policy.hpp>
