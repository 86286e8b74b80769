// graphcap/stream.hpp - kept for programs that include it: the stream helpers now live in
// <graphcap/stream_ref.hpp> with graphcap::stream_ref, the stream parameter type.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/core/stream_ref.hpp>
