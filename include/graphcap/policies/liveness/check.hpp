// graphcap/policies/liveness/check.hpp - liveness::check: are the graph's inputs still alive?
//
// A graph bakes in the addresses it read at capture. A liveness policy learns the graph's
// external inputs at capture end (and from `scope::input`) and, before each replay, refuses to
// launch if one of them was freed. liveness::off (off.hpp) stores nothing and checks nothing.
//
// liveness::check reads the inputs from the captured graph itself, so it sees every kernel,
// whoever launched it (cuBLAS, another module): the pointer-sized words of each kernel node's
// parameters, memcpy sources and destinations, memset destinations. An input is identified by
// its allocation's buffer id (CU_POINTER_ATTRIBUTE_BUFFER_ID): a freed allocation has none, and
// a new allocation at the same address has a new one. Memory the graph allocates itself (memory
// allocation nodes) and ranges given to exclude() are internal, not inputs. See docs/liveness.md.
#pragma once

#include <graphcap/detail/cuda_check.hpp>
#include <graphcap/detail/demangle.hpp>
#include <graphcap/detail/driver.hpp>
#include <graphcap/detail/hooks.hpp>
#include <graphcap/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace graphcap {

namespace detail {

/// How the liveness check words its need of a driver function (driver_function::require).
inline constexpr std::string_view liveness_needs = "graphcap's liveness check needs";

} // namespace detail

namespace liveness {

/// Liveness checking enabled: one pass over the graph at capture end, then one driver query per
/// input allocation (and one weak_ptr test per token) before every replay. A dead input makes
/// replay() throw liveness_error before anything is launched.
class check : public detail::no_hooks<detail::liveness_category> {
public:
  /// How many inputs at most a liveness_error lists one by one.
  static constexpr std::size_t listed_inputs = 8;

  /// Declares an input the graph reaches indirectly (a pointer stored in device memory). Called
  /// by scope::input() during the capture; the pointer must lie in CUDA-allocated memory (device,
  /// pinned host or managed) or in memory the graph allocates itself (then it is not an input).
  void add_input(const void* pointer) { declare(pointer, std::nullopt); }

  /// Declares an input whose life the allocator reports through `token`: the replay is refused
  /// once the token has expired. For sub-allocators (caching allocators, pools) that hand out
  /// pieces of one big allocation, whose buffer id never changes when a piece is freed. The
  /// pointer may be any address (null too); if it lies in a CUDA allocation, that is checked too.
  void add_input(const void* pointer, std::weak_ptr<const void> token) {
    declare(pointer, std::move(token));
  }

  /// Marks [base, base + bytes) as internal memory (e.g. a pool's slab that the graph's own
  /// allocations come from): no input is tracked there. Holds for the graph's current capture,
  /// before or after its end, and is dropped with the rest of the tracking by reset().
  void exclude(const void* base, std::size_t bytes) {
    if (bytes == 0) {
      return;
    }
    const auto begin = reinterpret_cast<std::uintptr_t>(base);
    excluded_.push_back({begin, begin + bytes});
    std::erase_if(inputs_, [&](const tracked_input& input) {
      return excluded_.back().contains(input.address);
    });
    if (captured_) {
      rebuild_watch_list();
    }
  }

  /// Distinct input addresses tracked for the current capture.
  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }

  // ---- hooks -----------------------------------------------------------------------------------

  /// Resolves cuPointerGetAttribute (once per process) before the capture begins, so that input()
  /// during the capture never makes the entry-point lookup inside it, and replays call it through
  /// a pointer resolved already. A driver without it fails here, before anything began. The
  /// other driver functions are resolved at their first use, at the capture's end.
  void before_capture(cudaStream_t /*stream*/) { resolve_query(); }

  /// The one pass over the captured graph: graph allocations first (internal), then every node's
  /// pointers.
  void after_capture_end(cudaGraph_t graph) {
    const detail::driver_api& driver = detail::driver();
    std::vector<cudaGraphNode_t> nodes;
    collect_nodes(graph, nodes);
    for (cudaGraphNode_t node : nodes) {
      if (node_type(node) == cudaGraphNodeTypeMemAlloc) {
        cudaMemAllocNodeParams params{};
        detail::check(cudaGraphMemAllocNodeGetParams(node, &params),
                      "cudaGraphMemAllocNodeGetParams");
        const auto begin = reinterpret_cast<std::uintptr_t>(params.dptr);
        internal_.push_back({begin, begin + params.bytesize});
      }
    }
    drop_internal_inputs();
    graph_scan scan{*this, driver};
    for (cudaGraphNode_t node : nodes) {
      scan.node(node);
    }
    resolve_declared_inputs();
    captured_ = true;
    rebuild_watch_list();
  }

  /// Refuses the replay (liveness_error) if an input's allocation is gone or replaced.
  void before_replay(cudaStream_t /*stream*/) const {
    for (const watched_allocation& watched : watched_) {
      unsigned long long buffer_id = 0;
      const CUresult status = query_(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, watched.address);
      // Any failure goes to the cold diagnosis, which tells them apart: only
      // CUDA_ERROR_INVALID_VALUE means freed, any other failure is a cuda_error (death_of).
      if (status != CUDA_SUCCESS || buffer_id != watched.buffer_id) [[unlikely]] {
        diagnose();
        return;
      }
    }
    for (const std::weak_ptr<const void>& token : tokens_) {
      if (token.expired()) [[unlikely]] {
        diagnose();
        return;
      }
    }
  }

  void on_capture_abort() noexcept { clear(); }
  void on_reset() noexcept { clear(); }

private:
  struct address_range {
    std::uintptr_t begin;
    std::uintptr_t end;
    [[nodiscard]] bool contains(std::uintptr_t address) const noexcept {
      return address >= begin && address < end;
    }
  };

  /// One way the graph uses an input ("memcpy source", "kernel k, parameter 0 (offset 0)"), and
  /// in how many nodes.
  struct input_use {
    std::string what;
    std::size_t nodes = 1;
  };

  struct tracked_input {
    std::uintptr_t address = 0;
    std::optional<unsigned long long> buffer_id; // none: not (yet) known as a CUDA allocation
    std::optional<std::weak_ptr<const void>> token;
    std::vector<input_use> uses;

    void add_use(std::string what) {
      const auto same = std::find_if(uses.begin(), uses.end(),
                                     [&](const input_use& use) { return use.what == what; });
      if (same != uses.end()) {
        ++same->nodes;
      } else {
        uses.push_back({std::move(what)});
      }
    }
  };

  /// What the replay checks: one representative address per allocation.
  struct watched_allocation {
    CUdeviceptr address;
    unsigned long long buffer_id;
  };

  /// A kernel's parameter layout and name, read once per function during a scan.
  struct kernel_layout {
    std::string name;
    std::vector<std::pair<std::size_t, std::size_t>> parameters; // offset, size
  };

  /// The state of one pass over a captured graph.
  class graph_scan {
  public:
    graph_scan(check& owner, const detail::driver_api& driver) : owner_(owner), driver_(driver) {
      for (std::size_t i = 0; i < owner_.inputs_.size(); ++i) {
        index_.emplace(owner_.inputs_[i].address, i);
      }
    }

    void node(cudaGraphNode_t node) {
      switch (node_type(node)) {
      case cudaGraphNodeTypeKernel:
        kernel(node);
        break;
      case cudaGraphNodeTypeMemcpy: {
        cudaMemcpy3DParms params{};
        detail::check(cudaGraphMemcpyNodeGetParams(node, &params), "cudaGraphMemcpyNodeGetParams");
        if (params.srcArray == nullptr) {
          use(reinterpret_cast<std::uintptr_t>(params.srcPtr.ptr), [] { return "memcpy source"; });
        }
        if (params.dstArray == nullptr) {
          use(reinterpret_cast<std::uintptr_t>(params.dstPtr.ptr),
              [] { return "memcpy destination"; });
        }
        break;
      }
      case cudaGraphNodeTypeMemset: {
        cudaMemsetParams params{};
        detail::check(cudaGraphMemsetNodeGetParams(node, &params), "cudaGraphMemsetNodeGetParams");
        use(reinterpret_cast<std::uintptr_t>(params.dst), [] { return "memset destination"; });
        break;
      }
      default:
        break;
      }
    }

  private:
    void kernel(cudaGraphNode_t node) {
      CUDA_KERNEL_NODE_PARAMS_v2 params{};
      driver_check(
          driver_.graph_kernel_node_get_params.require(detail::liveness_needs)(node, &params),
          "cuGraphKernelNodeGetParams");
      CUfunction function = params.func;
      if (function == nullptr && params.kern != nullptr) {
        driver_check(
            driver_.kernel_get_function.require(detail::liveness_needs)(&function, params.kern),
            "cuKernelGetFunction");
      }
      const kernel_layout& layout = layout_of(function);
      const unsigned char* packed = packed_parameters(params.extra);
      for (std::size_t index = 0; index < layout.parameters.size(); ++index) {
        // Plain variables, not a structured binding: lambdas capture those only since clang 16.
        const std::size_t offset = layout.parameters[index].first;
        const std::size_t size = layout.parameters[index].second;
        const unsigned char* bytes = nullptr;
        if (params.kernelParams != nullptr) {
          bytes = static_cast<const unsigned char*>(params.kernelParams[index]);
        } else if (packed != nullptr) {
          bytes = packed + offset;
        }
        if (bytes == nullptr) {
          continue;
        }
        // Pointers sit at 8-byte-aligned offsets of the parameter block, inside structs too.
        for (std::size_t at = (8 - offset % 8) % 8; at + 8 <= size; at += 8) {
          std::uint64_t word = 0;
          std::memcpy(&word, bytes + at, sizeof word);
          if (word < 4096) {
            continue; // null, small integers: never an allocation
          }
          use(static_cast<std::uintptr_t>(word), [&] {
            std::string what = "kernel " + layout.name + ", parameter " + std::to_string(index) +
                               " (offset " + std::to_string(offset + at) + ")";
            if (at != 0 || size != 8) {
              what += ", the word at byte " + std::to_string(at) + " of it";
            }
            return what;
          });
        }
      }
    }

    /// The parameter buffer of a launch made with CU_LAUNCH_PARAM_BUFFER_POINTER, else null.
    static const unsigned char* packed_parameters(void** extra) {
      for (void** option = extra; option != nullptr && *option != CU_LAUNCH_PARAM_END;
           option += 2) {
        if (*option == CU_LAUNCH_PARAM_BUFFER_POINTER) {
          return static_cast<const unsigned char*>(option[1]);
        }
      }
      return nullptr;
    }

    const kernel_layout& layout_of(CUfunction function) {
      auto known = layouts_.find(function);
      if (known != layouts_.end()) {
        return known->second;
      }
      const auto param_info = driver_.func_get_param_info.require(detail::liveness_needs);
      kernel_layout layout;
      const char* name = nullptr;
      const auto get_name = driver_.func_get_name.find(); // without it: "(unnamed kernel)"
      layout.name =
          get_name != nullptr && get_name(&name, function) == CUDA_SUCCESS && name != nullptr
              ? detail::demangled(name)
              : std::string{"(unnamed kernel)"};
      for (std::size_t index = 0;; ++index) {
        std::size_t offset = 0;
        std::size_t size = 0;
        const CUresult status = param_info(function, index, &offset, &size);
        if (status == CUDA_ERROR_INVALID_VALUE) {
          break; // past the last parameter
        }
        driver_check(status, "cuFuncGetParamInfo (kernel " + layout.name + ")");
        layout.parameters.emplace_back(offset, size);
      }
      return layouts_.emplace(function, std::move(layout)).first->second;
    }

    /// Records that the graph uses `address`, if it is an allocation outside internal memory.
    template <class Describe>
    void use(std::uintptr_t address, Describe&& describe) {
      if (address == 0 || owner_.is_internal(address)) {
        return;
      }
      auto known = index_.find(address);
      if (known == index_.end()) {
        const std::optional<unsigned long long> buffer_id = owner_.buffer_id_of(address);
        if (!buffer_id) {
          return; // not CUDA memory (a plain integer, pageable host memory)
        }
        owner_.inputs_.push_back({address, buffer_id, std::nullopt, {}});
        known = index_.emplace(address, owner_.inputs_.size() - 1).first;
      }
      owner_.inputs_[known->second].add_use(std::string{describe()});
    }

    static void driver_check(CUresult status, const std::string& call) {
      if (status != CUDA_SUCCESS) [[unlikely]] {
        detail::throw_error(static_cast<cudaError_t>(status), call);
      }
    }

    check& owner_;
    const detail::driver_api& driver_;
    std::unordered_map<std::uintptr_t, std::size_t> index_;
    std::unordered_map<CUfunction, kernel_layout> layouts_;
  };

  // ---- capture-time helpers --------------------------------------------------------------------

  void resolve_query() {
    query_ = detail::driver().pointer_get_attribute.require(detail::liveness_needs);
  }

  static cudaGraphNodeType node_type(cudaGraphNode_t node) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    detail::check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    return type;
  }

  /// Every node of `graph`, those of its child graphs included.
  static void collect_nodes(cudaGraph_t graph, std::vector<cudaGraphNode_t>& nodes) {
    std::size_t count = 0;
    detail::check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
    const std::size_t first = nodes.size();
    nodes.resize(first + count);
    detail::check(cudaGraphGetNodes(graph, nodes.data() + first, &count), "cudaGraphGetNodes");
    nodes.resize(first + count);
    for (std::size_t i = first; i < first + count; ++i) {
      if (node_type(nodes[i]) == cudaGraphNodeTypeGraph) {
        cudaGraph_t child = nullptr;
        detail::check(cudaGraphChildGraphNodeGetGraph(nodes[i], &child),
                      "cudaGraphChildGraphNodeGetGraph");
        collect_nodes(child, nodes);
      }
    }
  }

  /// The buffer id of the allocation holding `address`; none if CUDA knows no allocation there.
  /// Only CUDA_ERROR_INVALID_VALUE, the driver's answer for an address it has no allocation at,
  /// means that. Any other failure (no context, a driver not initialized or shutting down) says
  /// nothing about the address: taken for "not CUDA memory" it would leave an input of the graph
  /// silently unchecked, so it is a cuda_error instead.
  [[nodiscard]] std::optional<unsigned long long> buffer_id_of(std::uintptr_t address) const {
    unsigned long long buffer_id = 0;
    const CUresult status =
        query_(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, static_cast<CUdeviceptr>(address));
    if (status == CUDA_ERROR_INVALID_VALUE) {
      return std::nullopt;
    }
    if (status != CUDA_SUCCESS) [[unlikely]] {
      query_failed(status, address);
    }
    return buffer_id;
  }

  GRAPHCAP_COLD [[noreturn]] static void query_failed(CUresult status, std::uintptr_t address) {
    detail::throw_error(static_cast<cudaError_t>(status), "cuPointerGetAttribute",
                        "graphcap's liveness check could not ask the driver whether " +
                            hex(address) + " is CUDA memory that it must check before replays");
  }

  [[nodiscard]] bool is_internal(std::uintptr_t address) const noexcept {
    const auto holds = [&](const address_range& range) { return range.contains(address); };
    return std::any_of(internal_.begin(), internal_.end(), holds) ||
           std::any_of(excluded_.begin(), excluded_.end(), holds);
  }

  void declare(const void* pointer, std::optional<std::weak_ptr<const void>> token) {
    resolve_query();
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    if (is_internal(address) || (address == 0 && !token)) {
      return;
    }
    auto known = std::find_if(inputs_.begin(), inputs_.end(),
                              [&](const tracked_input& input) { return input.address == address; });
    std::optional<unsigned long long> buffer_id;
    if ((known == inputs_.end() || !known->buffer_id) && address != 0) {
      // Queried now, while the caller vouches for the memory, and before the tracking changes:
      // a query that fails (cuda_error) leaves it as it was. Graph allocations may not resolve
      // during the capture; resolve_declared_inputs() asks again at its end.
      buffer_id = buffer_id_of(address);
    }
    if (known == inputs_.end()) {
      inputs_.push_back({address, std::nullopt, std::nullopt, {}});
      known = std::prev(inputs_.end());
    }
    if (!known->buffer_id) {
      known->buffer_id = buffer_id;
    }
    known->add_use(token ? "declared with input() and a liveness token" : "declared with input()");
    if (token) {
      known->token = std::move(token);
    }
    if (captured_) {
      resolve_declared_inputs();
      rebuild_watch_list();
    }
  }

  /// At capture end: a declared pointer is either a CUDA allocation, internal memory, or covered
  /// by a token; anything else cannot be checked, which the caller must hear about. (After the
  /// capture end, declare() has just queried the one new input: nothing is asked again.)
  void resolve_declared_inputs() {
    drop_internal_inputs();
    for (auto input = inputs_.begin(); input != inputs_.end(); ++input) {
      if (!captured_ && !input->buffer_id && input->address != 0) {
        input->buffer_id = buffer_id_of(input->address);
      }
      if (!input->buffer_id && !input->token) [[unlikely]] {
        const std::string address = hex(input->address);
        inputs_.erase(input);
        detail::throw_error(cudaErrorInvalidValue, "graphcap::scope::input(" + address + ")",
                            "the pointer declared with input() is not in memory CUDA allocated "
                            "(device, pinned host or managed memory), or that memory was already "
                            "freed; only CUDA allocations can be checked. For a sub-allocator's "
                            "memory, declare the input with a liveness token");
      }
    }
  }

  void drop_internal_inputs() {
    std::erase_if(inputs_, [&](const tracked_input& input) { return is_internal(input.address); });
  }

  void rebuild_watch_list() {
    watched_.clear();
    tokens_.clear();
    std::unordered_set<unsigned long long> seen;
    for (const tracked_input& input : inputs_) {
      if (input.buffer_id && seen.insert(*input.buffer_id).second) {
        watched_.push_back({static_cast<CUdeviceptr>(input.address), *input.buffer_id});
      }
      if (input.token) {
        tokens_.push_back(*input.token);
      }
    }
  }

  void clear() noexcept {
    inputs_.clear();
    internal_.clear();
    excluded_.clear();
    watched_.clear();
    tokens_.clear();
    captured_ = false;
  }

  // ---- the refusal -----------------------------------------------------------------------------

  /// Why an input is dead, or nothing if it is alive.
  [[nodiscard]] std::optional<std::string_view> death_of(const tracked_input& input) const {
    if (input.token && input.token->expired()) {
      return "released by its allocator (its liveness token expired)";
    }
    if (!input.buffer_id) {
      return std::nullopt;
    }
    unsigned long long buffer_id = 0;
    const CUresult status =
        query_(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, static_cast<CUdeviceptr>(input.address));
    if (status == CUDA_ERROR_INVALID_VALUE) {
      return "freed"; // the driver knows no allocation there any more
    }
    if (status != CUDA_SUCCESS) {
      // Another failure says nothing about the input: reported as "freed", it would send the
      // caller looking for a free that never happened.
      detail::throw_error(static_cast<cudaError_t>(status), "cuPointerGetAttribute",
                          "graphcap's liveness check could not query an input of the graph");
    }
    if (buffer_id != *input.buffer_id) {
      return "replaced (freed, and a new allocation now has the same address)";
    }
    return std::nullopt;
  }

  /// The cold half of before_replay(): a check failed. Lists the dead inputs in a liveness_error;
  /// returns only if every input turns out alive (the first query failed for another reason,
  /// e.g. no context was current on this thread yet, which binding the runtime's one cures).
  GRAPHCAP_COLD void diagnose() const {
    bind_runtime_context();
    std::vector<std::pair<const tracked_input*, std::string_view>> dead;
    for (const tracked_input& input : inputs_) {
      if (const std::optional<std::string_view> death = death_of(input)) {
        dead.emplace_back(&input, *death);
      }
    }
    if (dead.empty()) {
      return;
    }
    std::string text =
        "graphcap: replay refused, nothing was launched: " + std::to_string(dead.size()) +
        (dead.size() == 1 ? " input of the graph is" : " inputs of the graph are") +
        " no longer alive";
    for (std::size_t i = 0; i < dead.size() && i < listed_inputs; ++i) {
      const auto& [input, death] = dead[i];
      text += "\n  ";
      text += hex(input->address);
      text += ' ';
      text.append(death);
      text += ": ";
      for (std::size_t u = 0; u < input->uses.size(); ++u) {
        text += u == 0 ? "" : "; ";
        text += input->uses[u].what;
        if (input->uses[u].nodes > 1) {
          text += " (in " + std::to_string(input->uses[u].nodes) + " nodes)";
        }
      }
    }
    if (dead.size() > listed_inputs) {
      text += "\n  and " + std::to_string(dead.size() - listed_inputs) + " more";
    }
    text += "\nThe graph reads and writes the addresses it saw at capture: keep its inputs alive "
            "while it may replay, or reset() it and capture again with the new buffers.";
    throw liveness_error(text);
  }

  /// Makes the runtime's context current on this thread (a thread that has made no CUDA runtime
  /// call yet has none), clearing any error that leaves.
  static void bind_runtime_context() noexcept {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
    }
  }

  static std::string hex(std::uintptr_t address) {
    char digits[2 * sizeof address + 2] = {'0', 'x'};
    const auto end = std::to_chars(digits + 2, digits + sizeof digits, address, 16).ptr;
    return {digits, end};
  }

  // Replay reads only these two, and query_.
  std::vector<watched_allocation> watched_;
  std::vector<std::weak_ptr<const void>> tokens_;
  PFN_cuPointerGetAttribute_v4000 query_ = nullptr;
  // The tracking behind them, for the error message and for exclude()/add_input() updates.
  std::vector<tracked_input> inputs_;
  std::vector<address_range> internal_; // the graph's own allocations
  std::vector<address_range> excluded_; // exclude()
  bool captured_ = false;
};

} // namespace liveness
} // namespace graphcap
