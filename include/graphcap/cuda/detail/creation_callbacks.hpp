// graphcap/cuda/detail/creation_callbacks.hpp - the nodes an annotated capture creates, as CUPTI
// reports them: one callback per node, synchronously, inside the CUDA call that creates it.
//
// Only annotations.hpp and diagnostics.hpp include this header. CUPTI has one callback subscriber
// per process: graphcap takes it only while annotated captures run or capture diagnostics are on
// (shared between them: diagnostics listen to the runtime and driver API domains through the same
// subscriber) and gives it back when the last user is done, so that a tool or a profiler started
// later (PyTorch's, a user's own) still finds it free; keep_cupti_subscriber(true) keeps it between
// captures instead. Where it is held by someone else, annot::on walks the graph instead.
//
// Observed on the H200 (CUDA 13.0, driver 580): the callback comes once per node a stream capture
// creates, in creation order (the order cuptiGetGraphNodeId's index and cudaGraphGetNodes follow),
// 50 to 170 ns each depending on the host; CUpti_GraphData::nodeType reads 0 (kernel) for every
// captured node, so it is never used. Taking and giving back the subscriber costs 1.5 to 3 us per
// capture.
#pragma once

#include <graphcap/cuda/detail/capture_mode_guard.hpp>

#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace graphcap::detail {

/// The nodes one capture's graph gained while it was watched, in creation order.
struct creation_log {
  CUgraph graph = nullptr;
  std::vector<CUgraphNode> nodes;
  /// nodes.size(), readable without the lock: where a scope begins or ends (scopes open and
  /// close far more often than a lock is worth; a node created on another thread at the same
  /// moment falls on either side, as it would with a lock).
  std::atomic<std::uint32_t> size{0};
  bool incomplete = false; // a callback ran out of memory: positions no longer match indices
};

/// CUPTI's callback subscriber, shared by the annotated captures in progress, and the logs the
/// callback appends to. Thread-safe: captures begin and end on any thread, and CUDA may create a
/// capture's nodes on any thread that issues work into it.
class creation_callbacks {
public:
  /// The process's instance. Never destroyed: a callback may still be running on another thread
  /// while the process exits.
  static creation_callbacks& instance() {
    static creation_callbacks* const shared = new creation_callbacks; // NOLINT: see above
    return *shared;
  }

  /// Takes CUPTI's subscriber (or shares it with the captures already holding it). False if it is
  /// held by someone else, or CUPTI refuses. Call outside any capture on this thread.
  [[nodiscard]] bool acquire() noexcept { return take_share() == CUPTI_SUCCESS; }

  /// Where CUPTI's runtime and driver API callbacks go (capture diagnostics): each call's entry
  /// and exit, on the calling thread, inside the call.
  using api_listener = void (*)(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                const CUpti_CallbackData& call) noexcept;

  /// Takes a share of the subscriber, as acquire() does, and sends every runtime and driver API
  /// callback to `listener` until stop_api_calls(). CUPTI's answer: CUPTI_SUCCESS, or why not
  /// (nothing held then). One listener at a time; call outside any capture on this thread.
  [[nodiscard]] CUptiResult listen_to_api_calls(api_listener listener) noexcept {
    const CUptiResult taken = take_share();
    if (taken != CUPTI_SUCCESS) {
      return taken;
    }
    const std::lock_guard lock(subscription_mutex_);
    const relaxed_capture_mode_guard relaxed;
    api_listener_.store(listener, std::memory_order_release);
    CUptiResult enabled = cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (enabled == CUPTI_SUCCESS) {
      enabled = cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
    }
    if (enabled != CUPTI_SUCCESS) {
      stop_api_calls_locked();
    }
    return enabled;
  }

  /// One runtime or driver call, by its CUPTI callback id.
  struct api_call {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId id;
  };

  /// Takes a share of the subscriber and sends the exits of `calls` (a list that outlives the
  /// watch) to `watcher` until stop_watching_calls(): the liveness free watch. The watcher may
  /// also get other calls while diagnostics listen to whole domains, and filters by id itself.
  /// CUPTI's answer: CUPTI_SUCCESS, or why not (nothing held then). One watcher at a time; call
  /// outside any capture on this thread.
  [[nodiscard]] CUptiResult watch_calls(std::span<const api_call> calls,
                                        api_listener watcher) noexcept {
    const CUptiResult taken = take_share();
    if (taken != CUPTI_SUCCESS) {
      return taken;
    }
    const std::lock_guard lock(subscription_mutex_);
    const relaxed_capture_mode_guard relaxed;
    watched_calls_ = calls;
    call_watcher_.store(watcher, std::memory_order_release);
    const CUptiResult enabled = enable_watched_calls(1);
    if (enabled != CUPTI_SUCCESS) {
      stop_watching_calls_locked();
    }
    return enabled;
  }

  /// Undoes a successful watch_calls().
  void stop_watching_calls() noexcept {
    const std::lock_guard lock(subscription_mutex_);
    stop_watching_calls_locked();
  }

  /// Undoes a successful listen_to_api_calls().
  void stop_api_calls() noexcept {
    const std::lock_guard lock(subscription_mutex_);
    stop_api_calls_locked();
  }

  /// Gives back one acquire(); the last gives the subscriber back to CUPTI, unless kept.
  void release() noexcept {
    const std::lock_guard lock(subscription_mutex_);
    if (users_ != 0) {
      --users_;
    }
    unsubscribe_if_unused();
  }

  /// Keeps the subscriber once taken, between captures too (true); or gives it back as soon as
  /// no capture uses it (false, the default).
  void keep_between_captures(bool keep) noexcept {
    const std::lock_guard lock(subscription_mutex_);
    kept_ = keep;
    unsubscribe_if_unused();
  }

  /// Logs the nodes created in `log.graph` from now on. False if out of memory.
  [[nodiscard]] bool watch(creation_log& log) noexcept {
    const std::lock_guard lock(logs_mutex_);
    try {
      watched_.push_back(&log);
    } catch (...) {
      return false;
    }
    return true;
  }

  /// Stops logging into `log` (nothing if it was not watched).
  void unwatch(const creation_log& log) noexcept {
    const std::lock_guard lock(logs_mutex_);
    std::erase(watched_, &log);
  }

private:
  creation_callbacks() = default;

  CUptiResult take_share() noexcept {
    const std::lock_guard lock(subscription_mutex_);
    if (subscriber_ == nullptr) {
      const relaxed_capture_mode_guard relaxed; // a global capture on another thread is left alone
      CUpti_SubscriberHandle subscriber = nullptr;
      const CUptiResult subscribed = cuptiSubscribe(&subscriber, &on_callback, this);
      if (subscribed != CUPTI_SUCCESS) {
        return subscribed;
      }
      const CUptiResult enabled = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                                      CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
      if (enabled != CUPTI_SUCCESS) {
        static_cast<void>(cuptiUnsubscribe(subscriber));
        return enabled;
      }
      subscriber_ = subscriber;
    }
    ++users_;
    return CUPTI_SUCCESS;
  }

  /// Enables (1) or disables (0) the watched calls' callbacks; the first failure's answer.
  CUptiResult enable_watched_calls(std::uint32_t enable) noexcept { // under subscription_mutex_
    CUptiResult answer = CUPTI_SUCCESS;
    for (const api_call& call : watched_calls_) {
      const CUptiResult result = cuptiEnableCallback(enable, subscriber_, call.domain, call.id);
      if (answer == CUPTI_SUCCESS) {
        answer = result;
      }
    }
    return answer;
  }

  void stop_watching_calls_locked() noexcept { // under subscription_mutex_, holding a share
    if (subscriber_ != nullptr && api_listener_.load(std::memory_order_acquire) == nullptr) {
      const relaxed_capture_mode_guard relaxed;
      static_cast<void>(enable_watched_calls(0)); // whole domains stay on for diagnostics
    }
    call_watcher_.store(nullptr, std::memory_order_release);
    watched_calls_ = {};
    if (users_ != 0) {
      --users_;
    }
    unsubscribe_if_unused();
  }

  void stop_api_calls_locked() noexcept { // under subscription_mutex_, holding a share
    if (subscriber_ != nullptr) {
      const relaxed_capture_mode_guard relaxed;
      static_cast<void>(cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API));
      static_cast<void>(cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API));
      // Disabling a domain disables each of its callbacks: the watched calls are wanted still.
      static_cast<void>(enable_watched_calls(1));
    }
    api_listener_.store(nullptr, std::memory_order_release);
    if (users_ != 0) {
      --users_;
    }
    unsubscribe_if_unused();
  }

  void unsubscribe_if_unused() noexcept { // under subscription_mutex_
    if (users_ == 0 && !kept_ && subscriber_ != nullptr) {
      const relaxed_capture_mode_guard relaxed;
      // Refused: CUPTI still holds it (and calls us); keep the handle, for the next capture to
      // reuse and its end to give back, rather than hold CUPTI's one subscriber for good.
      if (cuptiUnsubscribe(subscriber_) == CUPTI_SUCCESS) {
        subscriber_ = nullptr;
      }
    }
  }

  static void CUPTIAPI on_callback(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                   const void* data) noexcept {
    auto& callbacks = *static_cast<creation_callbacks*>(self);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      if (data == nullptr) {
        return;
      }
      const auto& call = *static_cast<const CUpti_CallbackData*>(data);
      const api_listener watcher = callbacks.call_watcher_.load(std::memory_order_acquire);
      if (watcher != nullptr) {
        watcher(domain, id, call);
      }
      const api_listener listener = callbacks.api_listener_.load(std::memory_order_acquire);
      if (listener != nullptr) {
        listener(domain, id, call);
      }
      return;
    }
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
        data == nullptr) {
      return;
    }
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    const auto* created = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
    if (created == nullptr) {
      return;
    }
    const std::lock_guard lock(callbacks.logs_mutex_);
    const auto log =
        std::find_if(callbacks.watched_.begin(), callbacks.watched_.end(),
                     [&](const creation_log* l) { return l->graph == created->graph; });
    if (log == callbacks.watched_.end()) {
      return; // a graph no annotated capture is building
    }
    try {
      (*log)->nodes.push_back(created->node);
      (*log)->size.store(static_cast<std::uint32_t>((*log)->nodes.size()),
                         std::memory_order_release);
    } catch (...) {
      (*log)->incomplete = true;
    }
  }

  // Two locks: CUPTI may wait for callbacks in flight (which take logs_mutex_) while it
  // unsubscribes under subscription_mutex_.
  std::mutex subscription_mutex_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  unsigned users_ = 0;
  bool kept_ = false;
  std::atomic<api_listener> api_listener_{nullptr};
  std::atomic<api_listener> call_watcher_{nullptr};
  std::span<const api_call> watched_calls_; // under subscription_mutex_
  std::mutex logs_mutex_;
  std::vector<creation_log*> watched_;
};

/// One capture's share of the subscriber and its log: move-only, gives both back when destroyed.
class creation_watch {
public:
  creation_watch() noexcept = default;
  creation_watch(creation_watch&& other) noexcept
      : log_(std::move(other.log_)), subscribed_(std::exchange(other.subscribed_, false)),
        watching_(std::exchange(other.watching_, false)) {}
  creation_watch& operator=(creation_watch&& other) noexcept {
    if (this != &other) {
      stop();
      log_ = std::move(other.log_);
      subscribed_ = std::exchange(other.subscribed_, false);
      watching_ = std::exchange(other.watching_, false);
    }
    return *this;
  }
  creation_watch(const creation_watch&) = delete;
  creation_watch& operator=(const creation_watch&) = delete;
  ~creation_watch() { stop(); }

  /// Before the capture begins: takes a share of the subscriber. False where it is unavailable.
  [[nodiscard]] bool subscribe() noexcept {
    if (!subscribed_) {
      subscribed_ = creation_callbacks::instance().acquire();
    }
    return subscribed_;
  }

  /// Once the capture's graph is known: logs its nodes. False (and nothing logged) on failure.
  [[nodiscard]] bool start(CUgraph graph) noexcept {
    if (!subscribed_) {
      return false;
    }
    try {
      if (!log_) {
        log_ = std::make_unique<creation_log>(); // on the heap: the callback holds its address
      }
    } catch (...) {
      return false;
    }
    log_->graph = graph;
    log_->nodes.clear();
    log_->size.store(0);
    log_->incomplete = false;
    watching_ = creation_callbacks::instance().watch(*log_);
    return watching_;
  }

  [[nodiscard]] bool watching() const noexcept { return watching_; }

  /// How many nodes the log holds now: where a scope opened or closed now begins or ends.
  [[nodiscard]] std::uint32_t position() const noexcept {
    return log_->size.load(std::memory_order_acquire);
  }

  /// Stops logging; the log stays readable. Safe to call again.
  void finish() noexcept {
    if (watching_) {
      creation_callbacks::instance().unwatch(*log_);
      watching_ = false;
    }
  }

  /// The log, once finish() has run: no callback writes to it any more.
  [[nodiscard]] const creation_log& log() const noexcept { return *log_; }

  /// Stops logging and gives the subscriber share back. Outside any capture on this thread.
  void stop() noexcept {
    finish();
    if (subscribed_) {
      creation_callbacks::instance().release();
      subscribed_ = false;
    }
  }

private:
  std::unique_ptr<creation_log> log_;
  bool subscribed_ = false;
  bool watching_ = false;
};

} // namespace graphcap::detail
