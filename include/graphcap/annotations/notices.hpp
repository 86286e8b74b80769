// graphcap/annotations/notices.hpp - the one notice annotations give when they run degraded
// (CUPTI held by another tool or absent: no ids, no traces), and where it goes: std::clog, or a
// handler installed with set_annotation_notice_handler.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/cuda/detail/cupti.hpp>

#include <cupti.h>

#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace graphcap {

/// Receives the one notice annotations give when they run degraded (no CUPTI, no ids, no
/// traces). The default handler writes it to std::clog.
using annotation_notice_handler = std::function<void(std::string_view)>;

namespace detail {

/// The installed handler, and whether the notice was given since it was installed.
struct annotation_notices {
  std::mutex mutex;                  ///< guards the two below
  annotation_notice_handler handler; ///< empty: std::clog
  bool given = false;                ///< the notice went out since the handler was set
};

/// The process's notice state.
template <class = void>
annotation_notices& notices() {
  static annotation_notices state;
  return state;
}

/// Gives `message` to the handler, once per process (or per set_annotation_notice_handler).
template <class = void>
void notice_once(const std::string& message) noexcept {
  try {
    annotation_notices& state = notices();
    const std::lock_guard lock{state.mutex};
    if (state.given) {
      return;
    }
    state.given = true;
    if (state.handler) {
      state.handler(message);
    } else {
      std::clog << "graphcap: " << message << '\n';
    }
  } catch (...) { // a notice (a handler that throws, a full log) must never fail a capture
  }
}

/// notice_once with the reason ids come from `source`; building the text may run out of memory,
/// which costs the notice, never the capture.
template <class = void>
void notice_id_source(node_id_source source, CUptiResult cupti) noexcept {
  try {
    notice_once(id_source_reason(source, cupti));
  } catch (...) {
  }
}

} // namespace detail

/// Replaces the receiver of the degraded-annotations notice (an empty function restores the
/// default, std::clog) and re-arms it: the next degradation is told once more.
template <class = void>
void set_annotation_notice_handler(annotation_notice_handler handler) {
  detail::annotation_notices& state = detail::notices();
  const std::lock_guard lock{state.mutex};
  state.handler = std::move(handler);
  state.given = false;
}

} // namespace graphcap
