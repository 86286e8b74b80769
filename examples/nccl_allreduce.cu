// nccl_allreduce: an NCCL all-reduce over two GPUs captured into one graph per device, replayed
// against the same all-reduce issued eagerly, for messages of 4 B to 1 MiB.
//
// A graph belongs to one device: each rank's share of the collective is captured into that
// device's graph, on a stream of that device. The communicators are set up outside any
// capture (ncclCommInitAll); the captures of all ranks are open at once around one NCCL group,
// as NCCL wants for several devices driven by one thread. With one process per GPU (MPI,
// torchrun) each process captures its own rank's graph the same way: docs/multi-gpu.md.
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <nccl.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace {

constexpr int ranks = 2;

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, ncclGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

/// What each device holds: its communicator, a stream, and the all-reduce's buffers.
struct rank_state {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* receive = nullptr;
};

// thread_local capture mode: NCCL's proxy thread keeps making CUDA calls while we capture, which
// a global-mode capture would refuse. No pool: NCCL's buffers are ours.
using rank_graph = graphcap::graph_with<graphcap::mode::thread_local_>;

/// The all-reduce of `count` floats on every rank, as one NCCL group; `stream_of(rank)` says
/// where each rank's share goes.
template <class StreamOf>
void all_reduce(std::array<rank_state, ranks>& state, std::size_t count, StreamOf stream_of) {
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int rank = 0; rank < ranks; ++rank) {
    check_nccl(ncclAllReduce(state[rank].send, state[rank].receive, count, ncclFloat, ncclSum,
                             state[rank].comm, stream_of(rank)),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void synchronize_all(const std::array<rank_state, ranks>& state) {
  for (int rank = 0; rank < ranks; ++rank) {
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    example::check(cudaStreamSynchronize(state[rank].stream), "cudaStreamSynchronize");
  }
}

/// Every rank received the sum of every rank's contribution (rank r sends r + 1).
bool received_sum(const std::array<rank_state, ranks>& state, std::size_t count) {
  constexpr float expected = ranks * (ranks + 1) / 2.0F;
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<float> host(count, 0.0F);
    example::check(
        cudaMemcpy(host.data(), state[rank].receive, count * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
    for (const float value : host) {
      if (value != expected) {
        return false;
      }
    }
  }
  return true;
}

} // namespace

int main() {
  if (!example::device_present("nccl_allreduce")) {
    return 0;
  }
  int devices = 0;
  example::check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < ranks) {
    std::printf("nccl_allreduce: needs %d GPUs, found %d; built, not run.\n", ranks, devices);
    return 0;
  }
  constexpr std::size_t largest = (std::size_t{1} << 20) / sizeof(float); // 1 MiB of floats

  // Communicators, streams and buffers: set up once, outside any capture.
  std::array<rank_state, ranks> state{};
  std::array<ncclComm_t, ranks> comms{};
  std::array<int, ranks> device_ids{};
  for (int rank = 0; rank < ranks; ++rank) {
    device_ids[rank] = rank;
  }
  check_nccl(ncclCommInitAll(comms.data(), ranks, device_ids.data()), "ncclCommInitAll");
  for (int rank = 0; rank < ranks; ++rank) {
    rank_state& own = state[rank];
    own.comm = comms[rank];
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    own.stream = example::create_stream();
    own.send = example::allocate<float>(largest);
    own.receive = example::allocate<float>(largest);
    const std::vector<float> contribution(largest, static_cast<float>(rank + 1));
    example::check(
        cudaMemcpy(own.send, contribution.data(), largest * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  }

  std::printf("nccl_allreduce: %d GPUs, NCCL %d.%d.%d; time per all-reduce (us)\n", ranks,
              NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  // One eager all-reduce first: NCCL connects the ranks lazily, at the first collective, and
  // that setup (allocations, host registration) must not happen inside a capture.
  all_reduce(state, 1, [&](int rank) { return state[rank].stream; });
  synchronize_all(state);
  std::printf("  %10s %10s %10s %8s\n", "bytes", "eager", "replay", "speedup");
  bool all_right = true;
  for (std::size_t bytes = 4; bytes <= largest * sizeof(float); bytes *= 4) {
    const std::size_t count = bytes / sizeof(float);

    // [nccl-capture]
    std::array<rank_graph, ranks> graphs; // one graph per device
    {
      std::array<std::optional<rank_graph::scope>, ranks> captures;
      for (int rank = 0; rank < ranks; ++rank) {
        example::check(cudaSetDevice(rank), "cudaSetDevice"); // the graph's device: current
        captures[rank].emplace(graphs[rank].begin_capture()); // at the capture's start
      }
      all_reduce(state, count, [&](int rank) { return captures[rank]->stream(); });
      for (int rank = 0; rank < ranks; ++rank) {
        example::check(cudaSetDevice(rank), "cudaSetDevice");
        captures[rank]->end();
      }
    }
    auto replay = [&] {
      for (int rank = 0; rank < ranks; ++rank) {
        example::check(cudaSetDevice(graphs[rank].device()), "cudaSetDevice");
        graphs[rank].replay(state[rank].stream); // a stream of the graph's own device
      }
    };
    // [/nccl-capture]

    auto eager = [&] { all_reduce(state, count, [&](int rank) { return state[rank].stream; }); };
    const int iterations = bytes <= 65536 ? 2000 : 500;

    for (const rank_state& own : state) { // the replay must produce the sum by itself
      example::check(cudaMemset(own.receive, 0, bytes), "cudaMemset");
    }
    replay();
    synchronize_all(state);
    const bool right = received_sum(state, count);
    all_right = all_right && right;
    const auto wait = [&] { synchronize_all(state); };
    const double eager_us = example::time_us(iterations, eager, wait);
    const double replay_us = example::time_us(iterations, replay, wait);
    std::printf("  %10zu %10.2f %10.2f %7.2fx%s\n", bytes, eager_us, replay_us,
                eager_us / replay_us, right ? "" : "  WRONG RESULT");
  }

  for (rank_state& own : state) {
    check_nccl(ncclCommDestroy(own.comm), "ncclCommDestroy");
    example::check(cudaStreamDestroy(own.stream), "cudaStreamDestroy");
    example::check(cudaFree(own.send), "cudaFree");
    example::check(cudaFree(own.receive), "cudaFree");
  }
  return all_right ? 0 : EXIT_FAILURE;
}
