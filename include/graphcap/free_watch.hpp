// graphcap/free_watch.hpp - an entry header: <graphcap/liveness/free_watch.hpp> (docs/design.md,
// "The floor plan"). Link graphcap::free_watch, which brings libcupti.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/liveness/free_watch.hpp>
