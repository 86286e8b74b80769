// nccl_sleep_wake: an NCCL all-reduce in graphs whose buffers live in a sleepable pool
// (pool::sleepable), put to sleep and woken, with one rank per GPU it finds (at most two).
//
// Each rank holds two graphs of the same step: `send = state + rank + 1`, an all-reduce of
// `send` into `receive`, `state = receive`. Their buffers are graphcap::buffer blocks of the
// rank's sleepable pool, so the pool keeps them until the end.
//  - The plain graph's buffers are registered with NCCL by nobody: NCCL runs its collective
//    through its own internal buffers. This example turns NCCL's graph registration off
//    (NCCL_GRAPH_REGISTER=0, unless you set it): with it on, NCCL registers the buffers of a
//    captured collective itself where it can, and that registration, made on the pages mapped
//    at capture, lives as long as the graph. The plain graph replays after wake as it was
//    captured.
//  - The registered graph's buffers are registered with ncclCommRegister before its capture, so
//    NCCL may use them directly (zero copy) and may put what the registration gave it (peer
//    mappings of the pages) into the captured kernels' arguments. A wake maps new pages at the
//    same addresses: a registration made before the sleep, and a graph captured with it, point at
//    pages that are gone. So: deregister before sleep(), register again after wake(), and capture
//    the graph again (recapture(), updated in place where CUDA allows) before replaying it.
//
// What it checks: both graphs' states are bit-identical before the sleep and after the wake
// (backup::host), and the replays after the wake continue the same sequence (exact in floats):
// with R ranks all holding s, a step gives R * s + R * (R + 1) / 2. Exits 1 if a check fails.
//
// What it does not show: with one GPU, an all-reduce over one rank moves nothing between GPUs,
// so a stale registration could not show here; on two GPUs it could. Whether NCCL registered
// the pool's memory at all the example cannot see (NCCL's peer registration shares the pages with
// the peers, the pool creates them without a shareable handle type, and NCCL may decline and use
// its internal buffers): run it with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=REG for NCCL's account. A
// replay of a graph captured with a registration that went stale is not tried: it may hang
// (sglang #40648).
#include <graphcap/graphcap.hpp>
#include <graphcap/sleepable_pool.hpp>

#include "example_support.cuh"

#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

namespace {

constexpr int most_ranks = 2;
constexpr std::size_t count = 1 << 20; // floats per buffer (4 MiB)
constexpr int steps = 3;               // replays before the sleep, and again after the wake
constexpr int threads = 256;
constexpr int blocks = static_cast<int>((count + threads - 1) / threads);

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    std::fprintf(stderr, "nccl_sleep_wake: %s failed: %s\n", what, ncclGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

__global__ void prepare(const float* state, float* send, float contribution, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    send[i] = state[i] + contribution;
  }
}

__global__ void adopt(const float* receive, float* state, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    state[i] = receive[i];
  }
}

// thread_local capture mode: NCCL's proxy thread may make CUDA calls while we capture.
using sleepy_graph = graphcap::graph_with<graphcap::pool::sleepable, graphcap::mode::thread_local_>;

/// The three buffers of one graph's step.
struct step_buffers {
  graphcap::buffer<float> state;
  graphcap::buffer<float> send;
  graphcap::buffer<float> receive;
};

/// What each rank holds.
struct rank_state {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  graphcap::sleepable_pool_handle pool;
  std::optional<sleepy_graph> setup; // made the buffers
  step_buffers plain;
  step_buffers registered;
  void* send_registration = nullptr; // ncclCommRegister's handles (null: not registered)
  void* receive_registration = nullptr;
  std::optional<sleepy_graph> plain_graph;
  std::optional<sleepy_graph> registered_graph;
};

/// Which of a rank's two graphs.
enum class kind : unsigned char { plain, registered };

sleepy_graph& graph_of(rank_state& own, kind which) {
  return which == kind::plain ? *own.plain_graph : *own.registered_graph;
}
const step_buffers& buffers_of(const rank_state& own, kind which) {
  return which == kind::plain ? own.plain : own.registered;
}

/// The step of every rank into its `which` graph, all ranks' captures open around one NCCL
/// group (as NCCL wants for several devices driven by one thread); `again`: a recapture,
/// updating each executable in place where CUDA allows.
void capture_step(std::vector<rank_state>& ranks, kind which, bool again) {
  const int size = static_cast<int>(ranks.size());
  std::vector<std::optional<sleepy_graph::scope>> fresh(ranks.size());
  std::vector<std::optional<sleepy_graph::recapture_scope>> updates(ranks.size());
  std::vector<cudaStream_t> streams(ranks.size());
  for (int rank = 0; rank < size; ++rank) {
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    sleepy_graph& graph = graph_of(ranks[rank], which);
    const step_buffers& own = buffers_of(ranks[rank], which);
    if (again) {
      streams[rank] = updates[rank].emplace(graph.begin_recapture()).stream();
    } else {
      streams[rank] = fresh[rank].emplace(graph.begin_capture()).stream();
    }
    prepare<<<blocks, threads, 0, streams[rank]>>>(own.state.data(), own.send.data(),
                                                   static_cast<float>(rank + 1), count);
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int rank = 0; rank < size; ++rank) {
    const step_buffers& own = buffers_of(ranks[rank], which);
    check_nccl(ncclAllReduce(own.send.data(), own.receive.data(), count, ncclFloat, ncclSum,
                             ranks[rank].comm, streams[rank]),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  for (int rank = 0; rank < size; ++rank) {
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    const step_buffers& own = buffers_of(ranks[rank], which);
    adopt<<<blocks, threads, 0, streams[rank]>>>(own.receive.data(), own.state.data(), count);
    if (again) {
      updates[rank]->end();
    } else {
      fresh[rank]->end();
    }
  }
}

/// Registers (or, with `on` false, deregisters) the registered graph's buffers of every rank.
void registration(std::vector<rank_state>& ranks, bool on) {
  for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
    rank_state& own = ranks[rank];
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    if (on) {
      check_nccl(ncclCommRegister(own.comm, own.registered.send.data(), count * sizeof(float),
                                  &own.send_registration),
                 "ncclCommRegister");
      check_nccl(ncclCommRegister(own.comm, own.registered.receive.data(), count * sizeof(float),
                                  &own.receive_registration),
                 "ncclCommRegister");
    } else {
      check_nccl(ncclCommDeregister(own.comm, own.send_registration), "ncclCommDeregister");
      check_nccl(ncclCommDeregister(own.comm, own.receive_registration), "ncclCommDeregister");
      own.send_registration = nullptr;
      own.receive_registration = nullptr;
    }
  }
}

void replay_all(std::vector<rank_state>& ranks, int times) {
  for (int step = 0; step < times; ++step) {
    for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
      example::check(cudaSetDevice(rank), "cudaSetDevice");
      ranks[rank].plain_graph->replay(ranks[rank].stream);
      ranks[rank].registered_graph->replay(ranks[rank].stream);
    }
  }
  for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    example::check(cudaStreamSynchronize(ranks[rank].stream), "cudaStreamSynchronize");
  }
}

std::vector<float> read(const graphcap::buffer<float>& buffer, int rank) {
  example::check(cudaSetDevice(rank), "cudaSetDevice");
  std::vector<float> host(count, 0.0F);
  example::check(
      cudaMemcpy(host.data(), buffer.data(), count * sizeof(float), cudaMemcpyDeviceToHost),
      "cudaMemcpy");
  return host;
}

/// Every state of every rank, in order (rank 0 plain, rank 0 registered, rank 1 plain, ...).
std::vector<std::vector<float>> states(std::vector<rank_state>& ranks) {
  std::vector<std::vector<float>> all;
  for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
    all.push_back(read(ranks[rank].plain.state, rank));
    all.push_back(read(ranks[rank].registered.state, rank));
  }
  return all;
}

/// Every state holds `expected` everywhere.
bool all_equal(const std::vector<std::vector<float>>& all, float expected) {
  return std::all_of(all.begin(), all.end(), [&](const std::vector<float>& state) {
    return std::all_of(state.begin(), state.end(), [&](float value) { return value == expected; });
  });
}

bool bit_identical(const std::vector<std::vector<float>>& a,
                   const std::vector<std::vector<float>>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(a[i].data(), b[i].data(), count * sizeof(float)) != 0) {
      return false;
    }
  }
  return a.size() == b.size();
}

} // namespace

int main() {
  if (!example::device_present("nccl_sleep_wake")) {
    return 0;
  }
  int devices = 0;
  example::check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int size = std::min(devices, most_ranks);
  setenv("NCCL_GRAPH_REGISTER", "0", /*overwrite=*/0); // see the top of this file
  std::printf("nccl_sleep_wake: %d rank%s (one per GPU), NCCL %d.%d.%d, NCCL_GRAPH_REGISTER=%s, "
              "%zu floats per buffer\n",
              size, size == 1 ? "" : "s", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
              std::getenv("NCCL_GRAPH_REGISTER"), count);

  std::vector<rank_state> ranks(static_cast<std::size_t>(size));
  {
    std::vector<ncclComm_t> comms(ranks.size());
    std::vector<int> device_ids(ranks.size());
    for (int rank = 0; rank < size; ++rank) {
      device_ids[rank] = rank;
    }
    check_nccl(ncclCommInitAll(comms.data(), size, device_ids.data()), "ncclCommInitAll");
    for (int rank = 0; rank < size; ++rank) {
      ranks[rank].comm = comms[rank];
    }
  }
  // Each rank's buffers: blocks of its sleepable pool, kept by graphcap::buffer, zeroed by a
  // setup graph (replayed once) that made them.
  for (int rank = 0; rank < size; ++rank) {
    rank_state& own = ranks[rank];
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    own.stream = example::create_stream();
    own.setup.emplace(own.pool);
    own.setup->capture(own.stream, [&](sleepy_graph::scope& cap) {
      for (step_buffers* set : {&own.plain, &own.registered}) {
        for (graphcap::buffer<float>* buffer : {&set->state, &set->send, &set->receive}) {
          *buffer = cap.make_buffer<float>(count);
          example::check(cudaMemsetAsync(buffer->data(), 0, count * sizeof(float), cap.stream()),
                         "cudaMemsetAsync");
        }
      }
    });
    own.setup->replay(own.stream);
    example::check(cudaStreamSynchronize(own.stream), "cudaStreamSynchronize");
    own.plain_graph.emplace(own.pool);
    own.registered_graph.emplace(own.pool);
  }
  // One eager all-reduce first: NCCL connects the ranks at the first collective, which must not
  // happen inside a capture.
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int rank = 0; rank < size; ++rank) {
    check_nccl(ncclAllReduce(ranks[rank].plain.send.data(), ranks[rank].plain.receive.data(), 1,
                             ncclFloat, ncclSum, ranks[rank].comm, ranks[rank].stream),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  for (int rank = 0; rank < size; ++rank) {
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    example::check(cudaStreamSynchronize(ranks[rank].stream), "cudaStreamSynchronize");
  }

  // [nccl-sleep-wake]
  registration(ranks, true); // before the capture that uses the registered buffers
  capture_step(ranks, kind::plain, /*again=*/false);
  capture_step(ranks, kind::registered, /*again=*/false);
  replay_all(ranks, steps);
  const std::vector<std::vector<float>> before = states(ranks);

  registration(ranks, false); // the registration is tied to the pages that sleep() gives back
  for (rank_state& own : ranks) {
    own.pool.sleep(graphcap::pool::backup::host); // waits for the replays, copies, unmaps
  }
  // ... the GPUs' memory is free for something else ...
  for (rank_state& own : ranks) {
    own.pool.wake(); // new pages at the same addresses, the backup copied back
  }
  const std::vector<std::vector<float>> after = states(ranks);
  registration(ranks, true); // on the new pages
  capture_step(ranks, kind::registered, /*again=*/true);
  replay_all(ranks, steps); // the plain graph as captured, the registered one recaptured
  // [/nccl-sleep-wake]

  float expected = 0.0F;
  const auto r = static_cast<float>(size);
  for (int step = 0; step < steps; ++step) {
    expected = r * expected + r * (r + 1.0F) / 2.0F;
  }
  const bool kept = all_equal(before, expected) && bit_identical(before, after);
  for (int step = 0; step < steps; ++step) {
    expected = r * expected + r * (r + 1.0F) / 2.0F;
  }
  const bool continued = all_equal(states(ranks), expected);
  std::printf("nccl_sleep_wake: states %s across sleep(backup::host) and wake; the plain graph "
              "replayed as captured, the registered one deregistered before the sleep, "
              "registered again and recaptured after the wake: %s (every rank holds %.0f)\n",
              kept ? "bit-identical" : "CHANGED", continued ? "right" : "WRONG",
              static_cast<double>(expected));
  if (size == 1) {
    std::printf("nccl_sleep_wake: one rank: no data crossed GPUs, so a stale registration could "
                "not have shown (run on two GPUs for that)\n");
  }

  registration(ranks, false);
  for (int rank = 0; rank < size; ++rank) {
    rank_state& own = ranks[rank];
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    own.plain_graph.reset(); // the graphs before their communicator
    own.registered_graph.reset();
    check_nccl(ncclCommDestroy(own.comm), "ncclCommDestroy");
    example::check(cudaStreamDestroy(own.stream), "cudaStreamDestroy");
  }
  return kept && continued ? 0 : EXIT_FAILURE;
}
