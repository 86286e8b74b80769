// graphcap/families/family_types.hpp - what graphcap::graph_family takes and reports: its
// options, the progress of capture_all(), its result, per-key statistics and its error.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace graphcap {

/// A bad key or key set for a graph_family: an empty set, a key given twice, a request above the
/// largest captured key (with no capture on demand). The message names the key.
class family_key_error : public error {
public:
  using error::error;
};

/// One-executable mode with family_options::verify_first_switch: a key's first switch to its
/// group's executable replayed other values than its work run eagerly. The message names the key
/// and gives verify()'s report; the key has an executable of its own from then on.
class family_verify_error : public error {
public:
  using error::error;
};

/// A byte budget for capture_all(keys, byte_budget{bytes}, stream, work): the family captures
/// largest first and keeps the densest ladder of keys whose pool and executable bytes fit.
struct byte_budget {
  std::size_t bytes = 0; ///< device bytes the family may take (its pool and its executables)
};

/// capture_all() under a byte_budget that not even the smallest key fits: the message names the
/// budget, the key and its bytes.
class family_budget_error : public error {
public:
  using error::error;
};

/// Device memory a family_options::verify_first_switch check compares, byte for byte: what the
/// key's work writes.
struct family_output {
  void* data = nullptr;  ///< device memory
  std::size_t bytes = 0; ///< how many bytes of it
  std::string name;      ///< how the report names it
};

/// When capture_all() runs the work eagerly before capturing (family_options::warmup_runs).
enum class family_warmup : std::uint8_t {
  once,    ///< warmup_runs runs of the largest key, before the first capture
  per_key, ///< warmup_runs runs of each key, before its capture
};

/// Why capture_all() stopped before capturing every key.
enum class family_stop : std::uint8_t {
  none,          ///< it did not stop: every key was tried
  time_budget,   ///< family_options::time_budget was reached
  memory_budget, ///< the pool reached family_options::memory_budget bytes
  byte_budget,   ///< capture_all(keys, byte_budget, ...) left keys out (see left_out)
};

/// What graph_family::release_executables() does with the device memory of the executables it
/// destroys, which the driver keeps in its cache for the context's next instantiations.
enum class executable_memory : std::uint8_t {
  keep_cached, ///< left to the driver (nothing gives it back: the ledger counts it as held)
  /// Pressed back: a cudaMalloc of all the free memory and one beyond it (which fails) make the
  /// driver give back its unused pieces (an H100 gave 582 of 704 MiB). For that moment the
  /// device has no free memory: another thread's or process's allocation can fail then.
  give_back,
};

/// The clock of a graph_family: steady_clock's time points, from a function tests may replace.
using family_clock = std::chrono::steady_clock;

/// One step of capture_all(), for its progress callback.
struct family_progress {
  std::size_t index = 0;              ///< this key is the index-th captured (1-based)
  std::size_t count = 0;              ///< of this many keys
  std::chrono::nanoseconds elapsed{}; ///< since capture_all() began
  std::size_t nodes = 0;              ///< the key's graph's nodes (0 if its capture failed)
  std::size_t pool_bytes = 0;         ///< the family's pool, reserved bytes, now
  bool failed = false;                ///< the key's capture threw (see the result's failures)
};

/// How a graph_family captures and looks up its graphs.
template <class Key>
struct family_options {
  int warmup_runs = 0;                        ///< eager runs of the work (it takes a stream)
  family_warmup warmup = family_warmup::once; ///< of the largest key only, or of every key
  std::optional<std::chrono::nanoseconds> time_budget{}; ///< stop capture_all() past this time
  std::optional<std::size_t> memory_budget{}; ///< stop once the pool reserves this many bytes
  /// Called after each key's capture (or failure) with its key and where capture_all() stands.
  std::function<void(const Key&, const family_progress&)> on_progress{};
  bool progress_line = true;      ///< a line on stderr per key once capture_all() takes over 1 s
  bool capture_on_demand = false; ///< replay_at_least() above the largest key captures it
  /// One executable graph per topology: every key's template is kept, and a key whose topology
  /// another key's executable has takes it by cudaGraphExecUpdate when it is replayed (no
  /// recapture); keys of another topology get an executable of their own.
  bool one_executable = false;
  /// One-executable mode: the first switch of each key to its group's executable (an executable
  /// another key held, set or updated to this key's template) runs verify() on it before the key
  /// is trusted: the work eagerly for the key (it must take (key, cudaStream_t)) on the replay's
  /// stream, verify_outputs(key) copied, poisoned, the executable replayed and compared byte for
  /// byte. A mismatch throws family_verify_error naming the key, and the key gets an executable
  /// of its own (instantiated from its template). Costs one eager run and one replay more per key,
  /// once; later switches and replays are unchanged.
  bool verify_first_switch = false;
  /// What verify_first_switch compares for a key (the outputs its work writes).
  std::function<std::vector<family_output>(const Key&)> verify_outputs{};
  /// Smaller keys' temporaries reuse the blocks larger keys freed (pool_core::reuse_larger_blocks)
  bool reuse_larger_blocks = true;
  std::function<family_clock::time_point()> clock{}; ///< null: family_clock::now (tests replace it)
};

/// A key capture_all() under a byte_budget left out: requests for it go to the next larger key.
template <class Key>
struct family_left_out {
  Key key;               ///< the key
  std::size_t bytes = 0; ///< what it would have taken (its pool growth and executable)
  std::size_t left = 0;  ///< of the budget, what was left when it came
  std::string reason;    ///< the sentence the family's report shows
};

/// A key whose capture threw during capture_all(): the others stay usable.
template <class Key>
struct family_failure {
  Key key;                  ///< the key
  std::string message;      ///< what() of the exception, or a placeholder
  std::exception_ptr error; ///< the exception itself, to rethrow
};

/// What capture_all() did: the keys captured, those it did not reach, and those that failed.
/// Not to be dropped: a capture_all() whose keys all failed returns normally (see failures).
template <class Key>
struct [[nodiscard]] family_capture_result {
  std::vector<Key> captured;                  ///< in capture order: largest first
  std::vector<Key> not_captured;              ///< keys a budget kept from being captured
  std::vector<family_left_out<Key>> left_out; ///< of those, what a byte_budget left out, and why
  std::vector<family_failure<Key>> failures;  ///< keys whose capture threw
  family_stop stopped_by = family_stop::none; ///< which budget stopped it, if one did
  std::chrono::nanoseconds elapsed{};         ///< the whole capture_all()

  /// True when every key was captured.
  [[nodiscard]] bool complete() const noexcept { return not_captured.empty() && failures.empty(); }
  /// Rethrows the first failure's exception, if any.
  void rethrow_first_failure() const {
    if (!failures.empty()) {
      std::rethrow_exception(failures.front().error);
    }
  }
};

/// What a graph_family knows of one key.
struct family_key_statistics {
  std::chrono::nanoseconds capture_time{}; ///< its capture
  /// instantiation; one-executable mode: the join of its group (an update or an instantiation)
  std::chrono::nanoseconds instantiate_time{};
  std::size_t nodes = 0;      ///< nodes of its graph
  std::size_t pool_bytes = 0; ///< what the pool grew by for its capture
  /// what the device's free memory dropped by for that growth (pool_statistics::device_bytes:
  /// a stream-ordered pool's reserve counts, lumpy); what budgets and the ledger count
  std::size_t pool_device_bytes = 0;
  std::size_t pool_in_use_bytes = 0;     ///< what its capture left in use in the pool (buffers)
  std::size_t pool_high_water_bytes = 0; ///< the most the pool had in use during its capture
  std::size_t executable_nodes = 0;      ///< its nodes that take executable memory (not memsets)
  /// device bytes its instantiations took (cudaMemGetInfo's drop, lumpy: the driver takes 2 MiB
  /// pieces; 0 for updates; family_ledger spreads the sum over the keys)
  std::size_t executable_bytes = 0;
  std::size_t replays = 0; ///< replays through the family
  /// One executable: times this key had to take its group's executable (at its join, or at a
  /// replay while another key held it); the first key of a topology founds its group, no switch.
  std::size_t switches = 0;
  /// Of those, switched in place: the nodes that differ set (patches), or cudaGraphExecUpdate
  std::size_t updates = 0;
  /// Of the updates, those made by set-params on the nodes whose parameters differ from the key
  /// the executable held (no cudaGraphExecUpdate; docs/families.md)
  std::size_t patches = 0;
  /// Of those, instantiated instead: a group of its topology could not take it (CUDA refused the
  /// update, or its launches differ: own_executable says why; one more in executables()), or its
  /// group held none (the key that held it was evicted).
  std::size_t fallbacks = 0;
  /// One executable: why this key has an executable of its own though a group of its topology
  /// existed (its kernels' functions or launch attributes differ, or CUDA refused the update);
  /// empty otherwise
  std::string own_executable;
};

} // namespace graphcap
