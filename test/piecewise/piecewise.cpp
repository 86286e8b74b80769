// Piecewise graphs (<graphcap/piecewise.hpp>): graph segments with eager islands between them,
// on work the host can execute (host functions, memset, memcpy), so that both backends run it.
// Order is observed through host functions on the replay's stream: segments and islands append
// their letter to a log in the order the stream runs them.
#include <graphcap/control_flow.hpp>
#include <graphcap/family.hpp>
#include <graphcap/graphcap.hpp>
#include <graphcap/piecewise.hpp>
#include <graphcap/verify.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

/// What the host functions of one test append to.
struct letter {
  std::string* log;
  char value;
};

void CUDART_CB append(void* data) {
  const auto* entry = static_cast<const letter*>(data);
  entry->log->push_back(entry->value);
}

/// A log and the letters that write to it (stable addresses: the nodes point at them).
struct log_fixture {
  gctest::stream stream;
  std::string log;
  std::vector<letter> letters = make_letters();

  std::vector<letter> make_letters() {
    std::vector<letter> made;
    for (char c = 'A'; c <= 'Z'; ++c) {
      made.push_back({&log, c});
    }
    for (char c = 'a'; c <= 'z'; ++c) {
      made.push_back({&log, c});
    }
    return made;
  }
  /// Enqueues "append c" on `s` (captured in a segment, or run eagerly by an island).
  void write(cudaStream_t s, char c) {
    const auto index =
        c >= 'a' ? static_cast<std::size_t>(26 + c - 'a') : static_cast<std::size_t>(c - 'A');
    CUDA_REQUIRE(cudaLaunchHostFunc(s, append, &letters.at(index)));
  }
  /// The log of one replay on the fixture's stream.
  template <class Graph>
  std::string replayed(Graph& graph) {
    log.clear();
    graph.replay(stream);
    stream.synchronize();
    return log;
  }
};

using piecewise = gc::piecewise_graph<>;

} // namespace

TEST_CASE_METHOD(log_fixture, "piecewise: segments and islands replay in capture order") {
  piecewise step;
  step.capture(stream, [&](piecewise::scope& cap) {
    write(cap.stream(), 'A');
    write(cap.stream(), 'B');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    write(cap.stream(), 'C');
    cap.eager([&](cudaStream_t s) {
      write(s, 'y');
      write(s, 'z');
    });
    write(cap.stream(), 'D');
  });
  CHECK(log.empty()); // nothing runs at capture, islands included
  CHECK(step.segment_count() == 3);
  CHECK(step.island_count() == 2);
  CHECK(step.node_count() == 4);
  CHECK(replayed(step) == "ABxCyzD");
  CHECK(replayed(step) == "ABxCyzD");
}

TEST_CASE_METHOD(log_fixture, "piecewise: islands at the start and the end, and empty segments") {
  piecewise step;
  step.capture(stream, [&](auto& cap) {
    cap.eager([&](cudaStream_t s) { write(s, 'a'); }); // segment 0 is empty
    write(cap.stream(), 'B');
    cap.eager([&](cudaStream_t s) { write(s, 'c'); });
    cap.eager([&](cudaStream_t s) { write(s, 'd'); }); // an empty segment between two islands
    cap.eager([&](cudaStream_t s) { write(s, 'e'); }); // the last segment is empty
  });
  CHECK(step.segment_count() == 5);
  CHECK(step.segment(0).node_count() == 0);
  CHECK(step.segment(2).node_count() == 0);
  CHECK(replayed(step) == "aBcde");
}

TEST_CASE_METHOD(log_fixture, "piecewise: 100 islands") {
  piecewise step;
  step.capture(stream, [&](auto& cap) {
    for (int i = 0; i < 100; ++i) {
      write(cap.stream(), 'S');
      cap.eager([&](cudaStream_t s) { write(s, 'i'); });
    }
    write(cap.stream(), 'E');
  });
  CHECK(step.island_count() == 100);
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    expected += "Si";
  }
  expected += 'E';
  CHECK(replayed(step) == expected);
}

TEST_CASE_METHOD(log_fixture, "piecewise: no island is one segment, replayed as a graph") {
  piecewise step;
  gc::graph plain;
  const auto work = [&](cudaStream_t s) {
    write(s, 'A');
    write(s, 'B');
  };
  step.capture(stream, work);
  plain.capture(stream, work);
  CHECK(step.segment_count() == 1);
  CHECK(step.island_count() == 0);
  CHECK(replayed(step) == replayed(plain));
}

TEST_CASE_METHOD(log_fixture, "piecewise: a pool block bridges a break at a fixed address") {
  constexpr std::size_t bytes = 256;
  piecewise step;
  std::vector<unsigned char> seen(bytes, 0);
  unsigned char* bridge = nullptr;
  unsigned char* second = nullptr;
  step.capture(stream, [&](piecewise::scope& cap) {
    bridge = cap.allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(bridge, 7, bytes, cap.stream())); // segment 0 writes it
    cap.eager([&](cudaStream_t s) {                                // the island reads it
      CUDA_REQUIRE(cudaMemcpyAsync(seen.data(), bridge, bytes, cudaMemcpyDeviceToHost, s));
    });
    second = cap.allocate<unsigned char>(bytes); // segment 1 draws from the same pool
    CUDA_REQUIRE(cudaMemcpyAsync(second, bridge, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
  });
  REQUIRE(bridge != nullptr);
  REQUIRE(second != nullptr);
  CHECK(second != bridge); // segment 0's block is still the graph's: not handed out again
  step.replay(stream);
  stream.synchronize();
  CHECK(seen == std::vector<unsigned char>(bytes, 7));
  std::vector<unsigned char> copied(bytes, 0);
  CUDA_REQUIRE(cudaMemcpy(copied.data(), second, bytes, cudaMemcpyDeviceToHost));
  CHECK(copied == std::vector<unsigned char>(bytes, 7));
}

TEST_CASE_METHOD(log_fixture, "piecewise: an island that throws stops the replay there") {
  piecewise step;
  bool fail = true;
  step.capture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    write(cap.stream(), 'B');
    cap.eager([&](cudaStream_t /*s*/) {
      if (fail) {
        throw std::runtime_error("tokenizer unavailable");
      }
    });
    write(cap.stream(), 'C');
  });
  log.clear();
  try {
    step.replay(stream);
    FAIL("the island's exception did not surface");
  } catch (const gc::island_error& failure) {
    CHECK(failure.island() == 1);
    const std::string what = failure.what();
    CHECK_THAT(what, gctest::contains("island 1"));
    CHECK_THAT(what, gctest::contains("tokenizer unavailable"));
    CHECK_THAT(what, gctest::contains("were not launched"));
    try {
      std::rethrow_if_nested(failure);
      FAIL("the island's own exception is not nested");
    } catch (const std::runtime_error& own) {
      CHECK(std::string{own.what()} == "tokenizer unavailable");
    }
  }
  stream.synchronize();
  CHECK(log == "AxB"); // the segment after the island was not launched
  fail = false;
  CHECK(replayed(step) == "AxBC"); // and the graph stays replayable
}

TEST_CASE_METHOD(log_fixture, "piecewise: work forked and not joined before a break") {
  piecewise step;
  gctest::stream side;
  gctest::event forked;
  try {
    step.capture(stream, [&](auto& cap) {
      CUDA_REQUIRE(cudaEventRecord(forked, cap.stream()));
      CUDA_REQUIRE(cudaStreamWaitEvent(side, forked, 0));
      write(side, 'A'); // forked onto `side`, never joined back
      cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    });
    FAIL("the unjoined fork was accepted");
  } catch (const gc::capture_error& failure) {
    const std::string what = failure.what();
    CHECK_THAT(what, gctest::contains("segment 0, ended at the break before island 0"));
    CHECK_THAT(what, gctest::contains("joined back"));
  }
  CHECK(step.empty());
  CHECK_FALSE(gctest::capturing(stream));
  CHECK_FALSE(gctest::capturing(side));
  static_cast<void>(cudaGetLastError());
  step.capture(stream, [&](auto& cap) { write(cap.stream(), 'A'); }); // it captures again
  CHECK(replayed(step) == "A");
}

TEST_CASE_METHOD(log_fixture, "piecewise: an island inside a conditional body is refused") {
  piecewise step;
  try {
    step.capture(stream, [&](auto& cap) {
      auto flag = graphcap::make_condition(cap, 1);
      graphcap::if_(cap, flag,
                    [&](auto& /*body*/) { cap.eager([&](cudaStream_t s) { write(s, 'x'); }); });
    });
    FAIL("an island inside a body was accepted");
  } catch (const gc::capture_error& failure) {
    CHECK_THAT(std::string{failure.what()}, gctest::contains("inside a conditional body"));
  }
  CHECK(step.empty());
  CHECK_FALSE(gctest::capturing(stream));
  static_cast<void>(cudaGetLastError());
}

TEST_CASE_METHOD(log_fixture, "piecewise: work that throws leaves the graph empty") {
  piecewise step;
  CHECK_THROWS_AS(step.capture(stream,
                               [&](auto& cap) {
                                 write(cap.stream(), 'A');
                                 cap.eager([&](cudaStream_t s) { write(s, 'x'); });
                                 write(cap.stream(), 'B');
                                 throw std::runtime_error("user");
                               }),
                  std::runtime_error);
  CHECK(step.empty());
  CHECK(step.segment_count() == 0);
  CHECK_FALSE(gctest::capturing(stream));
  step.capture(stream, [&](auto& cap) { write(cap.stream(), 'C'); });
  CHECK(replayed(step) == "C");
}

TEST_CASE_METHOD(log_fixture, "piecewise: state errors, reset and move") {
  piecewise step;
  CHECK_THROWS_AS(step.replay(stream), gc::state_error);
  step.capture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
  });
  CHECK_THROWS_AS(step.capture(stream, [] {}), gc::state_error);
  piecewise moved = std::move(step);
  CHECK(step.empty()); // NOLINT(bugprone-use-after-move): moved-from graphs are empty
  CHECK(replayed(moved) == "Ax");
  moved.reset();
  CHECK(moved.empty());
  CHECK_THROWS_AS(moved.replay(stream), gc::state_error);
}

TEST_CASE_METHOD(log_fixture, "piecewise: segments of lean graphs (no pool)") {
  gc::piecewise_graph<gc::lean_graph> step;
  step.capture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    write(cap.stream(), 'B');
  });
  CHECK(replayed(step) == "AxB");
}

TEST_CASE_METHOD(log_fixture, "piecewise: liveness checks every segment before launching any") {
  using checked = gc::graph_with<gc::liveness::check>;
  gc::piecewise_graph<checked> step;
  auto* input = static_cast<unsigned char*>(nullptr);
  CUDA_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&input), 64));
  step.capture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    CUDA_REQUIRE(cudaMemsetAsync(input, 0, 64, cap.stream())); // segment 1's input
  });
  CHECK(replayed(step) == "Ax");
  CUDA_REQUIRE(cudaFree(input));
  log.clear();
  CHECK_THROWS_AS(step.replay(stream), gc::liveness_error);
  stream.synchronize();
  CHECK(log.empty()); // segment 0 and the island did not run
}

TEST_CASE_METHOD(log_fixture,
                 "embed: a kept graph becomes one node, in order, in another capture") {
  gctest::stream side;
  gc::graph inner{gc::keep_graph};
  inner.capture(side, [&](cudaStream_t s) {
    write(s, 'x');
    write(s, 'y');
  });
  gc::lean_graph outer;
  outer.capture(stream, [&](gc::lean_graph::scope& cap) {
    write(cap.stream(), 'A');
    gc::embed(cap, inner);
    write(cap.stream(), 'B');
  });
  CHECK(outer.node_count() == 3); // A, the child-graph node, B
  CHECK(replayed(outer) == "AxyB");
  CHECK(replayed(inner) == "xy"); // the embedded graph replays on its own too
}

TEST_CASE_METHOD(log_fixture, "embed: inside a piecewise capture, and across an island") {
  gctest::stream side;
  gc::graph inner{gc::keep_graph};
  inner.capture(side, [&](cudaStream_t s) { write(s, 'e'); });
  piecewise step;
  step.capture(stream, [&](piecewise::scope& cap) {
    cap.embed(inner);
    cap.eager([&](cudaStream_t s) { write(s, 'i'); });
    cap.embed(inner);
  });
  CHECK(replayed(step) == "eie");
}

TEST_CASE_METHOD(log_fixture,
                 "embed: refused without a kept template, or with a conditional node") {
  gctest::stream side;
  gc::graph not_kept;
  not_kept.capture(side, [&](cudaStream_t s) { write(s, 'x'); });
  gctest::device_buffer<unsigned char> flagged(16);
  gc::graph conditional{gc::keep_graph};
  conditional.capture(side, [&](gc::graph::scope& cap) {
    auto flag = graphcap::make_condition(cap, 1);
    graphcap::if_(cap, flag,
                  [&](cudaStream_t s) { CUDA_REQUIRE(cudaMemsetAsync(flagged.get(), 1, 16, s)); });
  });
  gc::lean_graph outer;
  CHECK_THROWS_AS(
      outer.capture(stream, [&](gc::lean_graph::scope& cap) { gc::embed(cap, not_kept); }),
      gc::state_error);
  CHECK(outer.empty());
  try {
    outer.capture(stream, [&](gc::lean_graph::scope& cap) { gc::embed(cap, conditional); });
    FAIL("a graph with a conditional node was embedded");
  } catch (const gc::capture_error& failure) {
    CHECK_THAT(std::string{failure.what()},
               gctest::contains("no conditional node in a child graph"));
  }
  CHECK(outer.empty());
  gc::graph_with<gc::pool::graph_memory_nodes> allocating{gc::keep_graph};
  allocating.capture(side, [&](auto& inner_cap) {
    auto* block = inner_cap.template allocate<unsigned char>(64);
    CUDA_REQUIRE(cudaMemsetAsync(block, 0, 64, inner_cap.stream()));
  });
  try {
    outer.capture(stream, [&](gc::lean_graph::scope& cap) { gc::embed(cap, allocating); });
    FAIL("a graph with memory nodes was embedded");
  } catch (const gc::capture_error& failure) {
    CHECK_THAT(std::string{failure.what()}, gctest::contains("no memory node in a child graph"));
  }
  CHECK(outer.empty());
  CHECK_FALSE(gctest::capturing(stream));
  static_cast<void>(cudaGetLastError());
}

TEST_CASE_METHOD(log_fixture,
                 "a capture on a stream another capture holds is refused, naming embed") {
  gc::lean_graph outer;
  gc::lean_graph inner;
  auto cap = outer.begin_capture(stream);
  try {
    inner.capture(stream, [&](cudaStream_t s) { write(s, 'x'); });
    FAIL("a capture joined another one");
  } catch (const gc::capture_error& failure) {
    CHECK(failure.code() == cudaErrorIllegalState);
    CHECK_THAT(std::string{failure.what()}, gctest::contains("graphcap::embed(cap, graph)"));
  }
  CHECK(inner.empty());
  write(cap.stream(), 'A');
  cap.end(); // the outer capture goes on, unharmed
  CHECK(replayed(outer) == "A");
  static_cast<void>(cudaGetLastError());
}

TEST_CASE_METHOD(log_fixture, "piecewise recapture: segments updated in place, islands replaced") {
  piecewise step;
  const auto work = [&](char first, char island, char second) {
    return [=, this](piecewise::recapture_scope& cap) {
      write(cap.stream(), first);
      cap.eager([=, this](cudaStream_t s) { write(s, island); });
      write(cap.stream(), second);
    };
  };
  step.capture(stream, [&](piecewise::scope& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    write(cap.stream(), 'B');
  });
  CHECK(replayed(step) == "AxB");
  const std::vector<gc::update_result> updates = step.recapture(stream, work('C', 'y', 'D'));
  REQUIRE(updates.size() == 2);
  INFO(updates[0].reason);
  CHECK(updates[0].updated());
  CHECK(updates[1].updated());
  CHECK(replayed(step) == "CyD");
}

TEST_CASE_METHOD(log_fixture, "piecewise recapture with more and with fewer breaks") {
  piecewise step;
  step.capture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    write(cap.stream(), 'B');
  });
  const auto more = step.recapture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
    write(cap.stream(), 'B');
    cap.eager([&](cudaStream_t s) { write(s, 'y'); });
    write(cap.stream(), 'C');
  });
  REQUIRE(more.size() == 3);
  CHECK(more[0].updated());
  CHECK(more[1].updated());
  CHECK_FALSE(more[2].updated()); // a new segment: its first capture
  CHECK(step.segment_count() == 3);
  CHECK(replayed(step) == "AxByC");
  const auto fewer = step.recapture(stream, [&](auto& cap) { write(cap.stream(), 'D'); });
  REQUIRE(fewer.size() == 1);
  CHECK(fewer[0].updated());
  CHECK(step.segment_count() == 1);
  CHECK(step.island_count() == 0);
  CHECK(replayed(step) == "D");
}

TEST_CASE_METHOD(log_fixture, "piecewise recapture whose work throws leaves the graph empty") {
  piecewise step;
  step.capture(stream, [&](auto& cap) {
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t s) { write(s, 'x'); });
  });
  CHECK_THROWS_AS(step.recapture(stream,
                                 [&](auto& cap) {
                                   write(cap.stream(), 'A');
                                   cap.eager([&](cudaStream_t s) { write(s, 'x'); });
                                   throw std::runtime_error("user");
                                 }),
                  std::runtime_error);
  CHECK(step.empty());
  CHECK_FALSE(gctest::capturing(stream));
  step.capture(stream, [&](auto& cap) { write(cap.stream(), 'B'); });
  CHECK(replayed(step) == "B");
}

TEST_CASE_METHOD(log_fixture, "verify: a piecewise step against the same work run eagerly") {
  constexpr std::size_t bytes = 1024;
  gctest::device_buffer<unsigned char> out(bytes);
  unsigned char island_value = 2;
  const auto segment_work = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(out.get(), 1, bytes / 2, s));
  };
  const auto island_work = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(out.get() + bytes / 2, island_value, bytes / 2, s));
  };
  piecewise step;
  step.capture(stream, [&](piecewise::scope& cap) {
    segment_work(cap.stream());
    cap.eager(island_work);
  });
  CHECK(step.state() == gc::graph_state::instantiated);
  gc::verify_options options;
  options.stream = stream;
  const auto eager = [&](cudaStream_t s) {
    segment_work(s);
    island_work(s);
  };
  const gc::verify_report same =
      gc::verify(step, eager, options, gc::output(out.get(), bytes, "out"));
  CHECK(same.ok());
  // An island that computes something else than the eager work: verify() says where.
  const auto other = [&](cudaStream_t s) {
    segment_work(s);
    CUDA_REQUIRE(cudaMemsetAsync(out.get() + bytes / 2, 3, bytes / 2, s));
  };
  const gc::verify_report report =
      gc::verify(step, other, options, gc::output(out.get(), bytes, "out"));
  CHECK_FALSE(report.ok());
  CHECK_THROWS_AS(report.require(), gc::verify_error);
}

TEST_CASE_METHOD(log_fixture, "piecewise: a call a capture cannot hold names its segment") {
  piecewise step;
  try {
    step.capture(stream, [&](auto& cap) {
      write(cap.stream(), 'A');
      cap.eager([&](cudaStream_t s) { write(s, 'x'); });
      // A synchronize belongs in an island: in a segment it invalidates the capture.
      static_cast<void>(cudaStreamSynchronize(cap.stream()));
    });
    FAIL("the invalidated segment was accepted");
  } catch (const gc::capture_error& failure) {
    CHECK_THAT(std::string{failure.what()}, gctest::contains("segment 1, ended at the end of"));
  }
  CHECK(step.empty());
  CHECK_FALSE(gctest::capturing(stream));
  static_cast<void>(cudaGetLastError());
}

TEST_CASE_METHOD(log_fixture,
                 "piecewise: an event recorded in one segment, waited on in the next") {
  piecewise step;
  gctest::event recorded;
  cudaError_t wait = cudaSuccess;
  try {
    step.capture(stream, [&](auto& cap) {
      write(cap.stream(), 'A');
      CUDA_REQUIRE(cudaEventRecord(recorded, cap.stream())); // in segment 0's capture
      cap.eager([&](cudaStream_t s) { write(s, 'x'); });
      wait = cudaStreamWaitEvent(cap.stream(), recorded, 0); // in segment 1's
    });
    FAIL("the wait across a break was accepted");
  } catch (const gc::capture_error& failure) {
    const std::string what = failure.what();
    CHECK_THAT(what, gctest::contains("segment 1, ended at the end of the capture"));
    CHECK_THAT(what, gctest::contains("an event recorded in an earlier segment"));
  }
  CHECK(wait == cudaErrorInvalidValue); // what the H200 returns (benchmark/probes)
  CHECK(step.empty());
  CHECK_FALSE(gctest::capturing(stream));
  static_cast<void>(cudaGetLastError());
}

TEST_CASE_METHOD(log_fixture,
                 "piecewise: an island that throws names the mark() scopes it sits in") {
  piecewise step;
  step.capture(stream, [&](auto& cap) {
    auto attention = cap.mark("attention");
    auto layer = cap.mark({{"layer", "3"}});
    write(cap.stream(), 'A');
    cap.eager([&](cudaStream_t /*s*/) { throw std::runtime_error("no kernel for this length"); });
    write(cap.stream(), 'B');
  });
  try {
    step.replay(stream);
    FAIL("the island's exception did not surface");
  } catch (const gc::island_error& failure) {
    CHECK(failure.scope() == "attention/layer=3");
    CHECK_THAT(std::string{failure.what()},
               gctest::contains("island 0 (in scope 'attention/layer=3')"));
  }
  stream.synchronize();
}

TEST_CASE_METHOD(log_fixture, "piecewise graphs in a graph_family: one per key, one pool") {
  using step_graph = gc::piecewise_graph<gc::shared_pool_graph>;
  using step_family = gc::graph_family<std::size_t, step_graph>;
  step_family family;
  const gc::family_capture_result<std::size_t> result =
      family.capture_all({1, 2, 4}, stream, [&](std::size_t key, step_graph::scope& cap) {
        char* bridge = cap.allocate<char>(64 * key); // from the family's pool
        CUDA_REQUIRE(cudaMemsetAsync(bridge, 0, 64 * key, cap.stream()));
        write(cap.stream(), 'A');
        cap.eager([&, key](cudaStream_t s) { write(s, static_cast<char>('a' + key)); });
        for (std::size_t k = 0; k < key; ++k) {
          write(cap.stream(), 'B');
        }
      });
  REQUIRE(result.failures.empty());
  CHECK(family.size() == 3);
  CHECK(family.pool().statistics().reserved_bytes > 0);
  const step_graph* four = family.find(4);
  REQUIRE(four != nullptr);
  CHECK(four->segment_count() == 2);
  CHECK(four->state() == gc::graph_state::instantiated); // the family instantiates each key
  log.clear();
  CHECK(family.replay_at_least(3, stream) == 4);
  stream.synchronize();
  CHECK(log == "AeBBBB");
  log.clear();
  CHECK(family.replay_at_least(1, stream) == 1);
  stream.synchronize();
  CHECK(log == "AbB");
  CHECK(family.statistics(4)->nodes == four->node_count());

  // One-executable mode: refused for piecewise graphs until session 19; since then segment k of
  // every key shares its topology's executable (test/families/family_piecewise.cpp).
  step_family shared{{.one_executable = true}};
  REQUIRE(shared
              .capture_all({1, 4}, stream,
                           [&](std::size_t key, step_graph::scope& cap) {
                             write(cap.stream(), 'A');
                             cap.eager([&, key](cudaStream_t s) {
                               write(s, static_cast<char>('a' + key));
                             });
                             for (std::size_t k = 0; k < key; ++k) {
                               write(cap.stream(), 'B');
                             }
                           })
              .complete());
  CHECK(shared.executables() == 3); // segment 0 shared; segment 1 of two topologies
  log.clear();
  CHECK(shared.replay_at_least(2, stream) == 4);
  CHECK(shared.replay_at_least(1, stream) == 1);
  stream.synchronize();
  CHECK(log == "AeBBBBAbB");
}
