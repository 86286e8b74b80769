// bench_loops: the cost of one loop iteration, for a body of K = 1, 8, 32 tiny kernels, run
// 2000 times in a row: n replays of the body's graph, replay_loop (the body unrolled into copies
// of it), a WHILE node captured with graphcap (a kernel counts down and clears the condition),
// the same WHILE node written by hand against the runtime, graphcap::device_loop (the same
// structure: a start kernel sets the counter, a step kernel ends each iteration), and a host loop
// that replays the body and copies a flag back each iteration (what a loop deciding on the host
// pays).
//
// replay_loop runs in each of its forms (#32, goal 3): automatic (the default, which copies
// flat where it can), flat and child graphs asked for, and child graphs with the rest of
// 2000 / 64 replayed one iteration at a time (the form of sessions up to 15). Beside them, the
// floor: the body unrolled inside one raw graph, 64 copies launched 31 times and 16 copies once
// (the launches an unrolled loop of 64 copies cannot avoid), and 2000 copies launched once.
//
// Each sample is the wall time of the whole loop, device work included (the stream is drained
// before and after), divided by the iterations. Arms interleave round by round.
#include <graphcap/control_flow.hpp>
#include <graphcap/device_loop.cuh>
#include <graphcap/graphcap.hpp>
#include <graphcap/replay_loop.hpp>

#include "harness.hpp"
#include "workload.cuh"

#include <string>
#include <vector>

namespace {

constexpr int iterations = 2000;

/// One thread: --*counter, and the condition says whether iterations are left.
__global__ void count_down(int* counter, cudaGraphConditionalHandle more) {
  const int left = --*counter;
  cudaGraphSetConditional(more, left > 0 ? 1U : 0U);
}

__global__ void set_counter(int* counter, int value) {
  *counter = value;
}

/// The time of `loop()` (which runs `iterations` iterations) per iteration, device work included.
template <class Loop>
double per_iteration(cudaStream_t stream, Loop&& loop) {
  bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto start = bench::steady::now();
  loop();
  bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return bench::micros(start, bench::steady::now()) / iterations;
}

/// The WHILE node written by hand: capture info, handle, node, bodies captured to the graph.
class raw_while {
public:
  raw_while(cudaStream_t stream, cudaStream_t body_stream, int kernels, int* sink, int* counter) {
    bench::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin");
    set_counter<<<1, 1, 0, stream>>>(counter, iterations);
    cudaStreamCaptureStatus status{};
    cudaGraph_t graph = nullptr;
    const cudaGraphNode_t* deps = nullptr;
    std::size_t count = 0;
    bench::check(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &count),
                 "cudaStreamGetCaptureInfo");
    cudaGraphConditionalHandle handle = 0;
    bench::check(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault),
                 "cudaGraphConditionalHandleCreate");
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t node = nullptr;
    bench::check(cudaGraphAddNode(&node, graph, deps, nullptr, count, &params), "cudaGraphAddNode");
    cudaGraph_t body = params.conditional.phGraph_out[0];
    bench::check(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                     cudaStreamSetCaptureDependencies),
                 "cudaStreamUpdateCaptureDependencies");
    bench::check(cudaStreamBeginCaptureToGraph(body_stream, body, nullptr, nullptr, 0,
                                               cudaStreamCaptureModeGlobal),
                 "cudaStreamBeginCaptureToGraph");
    bench::issue_tiny(body_stream, kernels, sink);
    count_down<<<1, 1, 0, body_stream>>>(counter, handle);
    cudaGraph_t ended = nullptr;
    bench::check(cudaStreamEndCapture(body_stream, &ended), "end body");
    cudaGraph_t captured = nullptr;
    bench::check(cudaStreamEndCapture(stream, &captured), "end");
    bench::check(cudaGraphInstantiateWithFlags(&exec_, captured, 0), "instantiate");
    bench::check(cudaGraphDestroy(captured), "cudaGraphDestroy");
  }
  raw_while(const raw_while&) = delete;
  raw_while& operator=(const raw_while&) = delete;
  raw_while(raw_while&&) = delete;
  raw_while& operator=(raw_while&&) = delete;
  ~raw_while() { cudaGraphExecDestroy(exec_); }

  void replay(cudaStream_t stream) const {
    bench::check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
  }

private:
  cudaGraphExec_t exec_ = nullptr;
};

} // namespace

int main() {
  if (!bench::device_present("bench_loops")) {
    return 0;
  }
  const bench::owned_stream stream;
  const bench::owned_stream capture_stream;
  const bench::owned_stream body_stream;
  const bench::device_array<int> sink(1);
  const bench::device_array<int> counter(1);
  const bench::device_array<int> flag(1);
  int* host_flag = nullptr;
  bench::check(cudaMallocHost(&host_flag, sizeof(int)), "cudaMallocHost");

  bench::report report("bench_loops",
                       "time per loop iteration (us), 2000 iterations of a body of K kernels");
  for (const int kernels : {1, 8, 32}) {
    graphcap::lean_graph body{graphcap::keep_graph};
    body.capture(capture_stream, [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); });
    body.upload(stream);
    graphcap::replay_loop loop{body};
    graphcap::lean_graph looped;
    looped.capture(capture_stream, [&](auto& cap) {
      set_counter<<<1, 1, 0, cap.stream()>>>(counter, iterations);
      const graphcap::condition more = graphcap::make_condition(cap, 1);
      graphcap::while_(cap, more, [&](cudaStream_t s) {
        bench::issue_tiny(s, kernels, sink);
        count_down<<<1, 1, 0, s>>>(counter, more.handle());
      });
    });
    looped.upload(stream);
    graphcap::graph repeated; // device_loop() takes its counter from the graph's pool
    repeated.capture(capture_stream, [&](graphcap::graph::scope& cap) {
      graphcap::device_loop(cap, iterations,
                            [&](cudaStream_t s) { bench::issue_tiny(s, kernels, sink); });
    });
    repeated.upload(stream);
    const raw_while hand_written(capture_stream, body_stream, kernels, sink, counter);
    // A second hand-written WHILE, timed just before graphcap's (the first just after): what the
    // arms' places in a round give or take (session 22: graphcap 1.028x the hand-written one).
    const raw_while control(capture_stream, body_stream, kernels, sink, counter);
    graphcap::lean_graph flagged{graphcap::keep_graph}; // the body plus the flag's update
    flagged.capture(capture_stream, [&](cudaStream_t s) {
      bench::issue_tiny(s, kernels, sink);
      bench::check(cudaMemsetAsync(flag, 1, sizeof(int), s), "cudaMemsetAsync");
    });
    flagged.upload(stream);

    using form = graphcap::replay_loop_form;
    graphcap::replay_loop flat{body, {.form = form::flat}};
    graphcap::replay_loop children{body, {.form = form::child_graphs}};
    graphcap::replay_loop children_replayed{
        body, {.form = form::child_graphs, .remainder = graphcap::replay_loop_remainder::replays}};
    // The floor: the body unrolled inside one raw graph.
    constexpr int unrolled_copies = 64;
    constexpr int full_launches = iterations / unrolled_copies;             // 31
    constexpr int left_over = iterations - full_launches * unrolled_copies; // 16
    const bench::raw_graph unrolled_64(capture_stream, [&](cudaStream_t s) {
      bench::issue_tiny(s, kernels * unrolled_copies, sink);
    });
    const bench::raw_graph unrolled_rest(
        capture_stream, [&](cudaStream_t s) { bench::issue_tiny(s, kernels * left_over, sink); });
    const bench::raw_graph unrolled_all(
        capture_stream, [&](cudaStream_t s) { bench::issue_tiny(s, kernels * iterations, sink); });
    for (const bench::raw_graph* raw : {&unrolled_64, &unrolled_rest, &unrolled_all}) {
      bench::check(cudaGraphUpload(raw->exec(), stream), "cudaGraphUpload");
    }
    for (auto* built : {&loop, &flat, &children, &children_replayed}) {
      built->replay(stream, iterations); // builds every executable the loop needs, untimed
    }

    std::vector<double> replays;
    std::vector<double> unrolled;
    std::vector<double> flat_times;
    std::vector<double> children_times;
    std::vector<double> children_replayed_times;
    std::vector<double> floor_64;
    std::vector<double> floor_all;
    std::vector<double> graphcap_while;
    std::vector<double> raw_while_times;
    std::vector<double> control_times;
    std::vector<double> repeat_times;
    std::vector<double> host_loop;
    const auto arm = [&](std::vector<double>& samples, auto loop_body) {
      return [&samples, loop_body, &stream](bool record) {
        const double t = per_iteration(stream, loop_body);
        if (record) {
          samples.push_back(t);
        }
      };
    };
    bench::interleave(
        bench::scaled(15), 2,
        {arm(replays,
             [&] {
               for (int i = 0; i < iterations; ++i) {
                 body.replay(stream);
               }
             }),
         arm(unrolled, [&] { loop.replay(stream, iterations); }),
         arm(flat_times, [&] { flat.replay(stream, iterations); }),
         arm(children_times, [&] { children.replay(stream, iterations); }),
         arm(children_replayed_times, [&] { children_replayed.replay(stream, iterations); }),
         arm(floor_64,
             [&] {
               for (int i = 0; i < full_launches; ++i) {
                 unrolled_64.replay(stream);
               }
               unrolled_rest.replay(stream);
             }),
         arm(floor_all, [&] { unrolled_all.replay(stream); }),
         arm(control_times, [&] { control.replay(stream); }),
         arm(graphcap_while, [&] { looped.replay(stream); }),
         arm(raw_while_times, [&] { hand_written.replay(stream); }),
         arm(repeat_times, [&] { repeated.replay(stream); }), arm(host_loop, [&] {
           for (int i = 0; i < iterations; ++i) {
             flagged.replay(stream);
             bench::check(
                 cudaMemcpyAsync(host_flag, flag, sizeof(int), cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
             bench::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
           }
         })});
    report.add("loop iteration", kernels, "graphcap WHILE", "us", graphcap_while);
    report.add("loop iteration", kernels, "hand-written WHILE", "us", raw_while_times);
    report.add("loop iteration", kernels, "hand-written WHILE, control", "us", control_times);
    report.add("loop iteration", kernels, "graphcap device_loop()", "us", repeat_times);
    report.add("loop iteration", kernels, "host flag loop", "us", host_loop);
    report.add("loop iteration", kernels, "n x replay()", "us", replays);
    report.add("loop iteration", kernels, "replay_loop", "us", unrolled);
    report.add("loop iteration", kernels, "replay_loop, flat", "us", flat_times);
    report.add("loop iteration", kernels, "replay_loop, child graphs", "us", children_times);
    report.add("loop iteration", kernels, "replay_loop, child graphs, rest replayed", "us",
               children_replayed_times);
    report.add("loop iteration", kernels, "unrolled in one raw graph, x64", "us", floor_64);
    report.add("loop iteration", kernels, "unrolled in one raw graph, x2000", "us", floor_all);
    const auto describe = [&](const char* name, auto& built) {
      report.note("K=" + std::to_string(kernels) + ": " + name + " unrolls " +
                  std::to_string(built.copies()) + " copies per launch, form " +
                  std::string{graphcap::to_string(built.form())} + " (" +
                  std::string{built.form_reason()} + ")");
    };
    describe("replay_loop", loop);
    describe("replay_loop, flat", flat);
    describe("replay_loop, child graphs", children);
    describe("replay_loop, child graphs, rest replayed", children_replayed);
  }
  cudaFreeHost(host_flag);
  report.finish();
  return 0;
}
