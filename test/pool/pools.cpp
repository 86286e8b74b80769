// Runtime tests: memory allocated during a capture (the Pool policies), with CUDA work the host
// can execute, so that they run on the CUDA test double and on the GPU.
#include <graphcap/graphcap.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gc = graphcap;

namespace {

constexpr std::size_t bytes = 4096;

using gctest::capture_fill;

} // namespace

TEST_CASE("graphcap::graph is torch.cuda.graph's defaults: global mode and a private pool") {
  STATIC_REQUIRE(std::is_same_v<gc::graph::mode_type, gc::mode::global>);
  STATIC_REQUIRE(std::is_same_v<gc::graph::pool_type, gc::pool::private_pool>);
  STATIC_REQUIRE(std::is_same_v<gc::graph::annot_type, gc::annot::off>);
  STATIC_REQUIRE(std::is_same_v<gc::graph::liveness_type, gc::liveness::off>);
}

TEST_CASE("memory allocated during capture keeps its address and is readable after replay") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph graph;
  unsigned char* block = capture_fill(graph, host, 7);
  REQUIRE(block != nullptr);
  CHECK(host[0] == 0);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 7));
  // The block is the graph's static output: readable outside the graph, same address each time.
  std::vector<unsigned char> direct(bytes, 0);
  CUDA_REQUIRE(cudaMemcpy(direct.data(), block, bytes, cudaMemcpyDeviceToHost));
  CHECK(direct == host);
  CUDA_REQUIRE(cudaMemset(block, 0, bytes));
  CUDA_REQUIRE(cudaDeviceSynchronize()); // cudaMemset may return before it ran
  graph.replay(stream);
  stream.synchronize();
  CUDA_REQUIRE(cudaMemcpy(direct.data(), block, bytes, cudaMemcpyDeviceToHost));
  CHECK(direct == std::vector<unsigned char>(bytes, 7));
}

TEST_CASE("a block freed during the capture is reused on the same stream, not on another") {
  gctest::stream side;
  gctest::event fork;
  gctest::event join;
  gc::graph graph;
  graph.capture([&](gc::graph::scope& cap) {
    float* first = cap.allocate<float>(1000);
    cap.deallocate(first);
    float* second = cap.allocate<float>(1000); // same stream, same size class: reused
    CHECK(second == first);
    cap.deallocate(second);
    CUDA_REQUIRE(cudaEventRecord(fork, cap.stream()));
    CUDA_REQUIRE(cudaStreamWaitEvent(side, fork, 0));
    float* on_side = cap.allocate<float>(1000, side); // no captured order with the free: new
    CHECK(on_side != first);
    CUDA_REQUIRE(cudaMemsetAsync(on_side, 0, 1000 * sizeof(float), side));
    CUDA_REQUIRE(cudaEventRecord(join, side));
    CUDA_REQUIRE(cudaStreamWaitEvent(cap.stream(), join, 0));
  });
  CHECK(graph.pool_statistics().blocks_in_use == 2);
}

TEST_CASE("a private pool stays reserved while the graph lives and is released on reset") {
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph graph;
  CHECK(graph.pool_statistics().reserved_bytes == 0);
  capture_fill(graph, host, 1);
  const gc::pool_statistics held = graph.pool_statistics();
  CHECK(held.reserved_bytes >= bytes);
  CHECK(held.in_use_bytes == bytes);
  CHECK(held.blocks_in_use == 1);
  graph.replay(stream);
  stream.synchronize();
  CHECK(graph.pool_statistics().reserved_bytes == held.reserved_bytes);
  graph.reset();
  CHECK(graph.pool_statistics().reserved_bytes == 0);
  CHECK(graph.pool_statistics().in_use_bytes == 0);
}

TEST_CASE("in_use counts what the pool handed out and got back: a block deallocated during a "
          "capture stays the graph's (private) or goes back at its end (shared)") {
  // Two 4 KiB blocks taken, one deallocated: the private pool's graph keeps it (its replays use
  // it, and later allocations of this capture may reuse it) until reset; a shared pool gets it
  // back when the capture ends, for the next capture.
  auto two_taken_one_freed = [](auto& graph) {
    using graph_type = std::remove_reference_t<decltype(graph)>;
    graph.capture([&](typename graph_type::scope& cap) {
      auto* first = cap.template allocate<unsigned char>(bytes);
      auto* second = cap.template allocate<unsigned char>(bytes);
      CUDA_REQUIRE(cudaMemsetAsync(first, 1, bytes, cap.stream()));
      CUDA_REQUIRE(cudaMemcpyAsync(second, first, bytes, cudaMemcpyDeviceToDevice, cap.stream()));
      cap.deallocate(first);
    });
  };
  SECTION("pool::private_pool") {
    gc::graph graph;
    two_taken_one_freed(graph);
    CHECK(graph.pool_statistics().in_use_bytes == 2 * bytes);
    CHECK(graph.pool_statistics().blocks_in_use == 2);
  }
  SECTION("pool::shared") {
    gc::graph_with<gc::pool::shared> graph{gc::graph_pool_handle()};
    two_taken_one_freed(graph);
    CHECK(graph.pool_statistics().in_use_bytes == bytes);
    CHECK(graph.pool_statistics().blocks_in_use == 1);
  }
}

TEST_CASE("pool_statistics prints with operator<<") {
  STATIC_REQUIRE(std::is_same_v<decltype(std::cout << std::declval<const gc::pool_statistics&>()),
                                std::ostream&>);
  gctest::stream stream;
  std::vector<unsigned char> host(bytes, 0);
  gc::graph graph;
  capture_fill(graph, host, 1);
  std::ostringstream out;
  out << graph.pool_statistics();
  CHECK(out.str() == "pool: 2097152 bytes reserved in 1 slab, 4096 bytes in use in 1 block");
  std::ostringstream empty;
  empty << gc::pool_statistics{};
  CHECK(empty.str() == "pool: 0 bytes reserved in 0 slabs, 0 bytes in use in 0 blocks");
}

TEST_CASE("exact pool sizes around the size classes") {
  struct expectation {
    std::size_t request;
    std::size_t in_use;
    std::size_t reserved;
  };
  const std::size_t mib = std::size_t{1} << 20;
  for (const expectation expected :
       {expectation{1, 512, 2 * mib}, expectation{512, 512, 2 * mib},
        expectation{513, 1024, 2 * mib}, expectation{mib, mib, 2 * mib},
        expectation{mib + 512, 2 * mib, 2 * mib},
        expectation{10 * mib + 512, 12 * mib, 12 * mib}}) {
    INFO("request of " << expected.request << " bytes");
    gc::graph graph;
    graph.capture([&](gc::graph::scope& cap) {
      auto* block = cap.allocate<unsigned char>(expected.request);
      CUDA_REQUIRE(cudaMemsetAsync(block, 0, expected.request, cap.stream()));
    });
    CHECK(graph.pool_statistics().in_use_bytes == expected.in_use);
    CHECK(graph.pool_statistics().reserved_bytes == expected.reserved);
  }
}

TEST_CASE("two successive captures with temporaries: a shared pool reserves less") {
  gctest::stream stream;
  const std::size_t big = 3 * (std::size_t{1} << 20); // a slab of its own: easy to count
  auto capture_with_temporary = [&](auto& graph, std::vector<unsigned char>& host, int value) {
    using graph_type = std::remove_reference_t<decltype(graph)>;
    return graph.capture([&](typename graph_type::scope& cap) {
      auto* temporary = cap.template allocate<unsigned char>(big);
      CUDA_REQUIRE(cudaMemsetAsync(temporary, value, big, cap.stream()));
      CUDA_REQUIRE(
          cudaMemcpyAsync(host.data(), temporary, bytes, cudaMemcpyDeviceToHost, cap.stream()));
      cap.deallocate(temporary);
      return temporary;
    });
  };
  std::vector<unsigned char> host1(bytes, 0);
  std::vector<unsigned char> host2(bytes, 0);

  gc::graph private1;
  gc::graph private2;
  capture_with_temporary(private1, host1, 1);
  capture_with_temporary(private2, host2, 2);
  const std::size_t private_reserved =
      private1.pool_statistics().reserved_bytes + private2.pool_statistics().reserved_bytes;

  for (const bool by_handle : {true, false}) {
    INFO((by_handle ? "shared by graph_pool_handle()" : "shared by first.pool()"));
    const auto pool = gc::graph_pool_handle();
    gc::graph_with<gc::pool::shared> first{pool};
    auto* first_temporary = capture_with_temporary(first, host1, 1);
    gc::graph_with<gc::pool::shared> second{by_handle ? pool : first.pool()};
    auto* second_temporary = capture_with_temporary(second, host2, 2);
    CHECK(second_temporary == first_temporary); // the later capture reused the freed block
    CHECK(pool.statistics().reserved_bytes < private_reserved);
    CHECK(pool.statistics().reserved_bytes == big + (std::size_t{1} << 20)); // one 4 MiB slab
    first.replay(stream);
    second.replay(stream); // capture order: each result is right
    stream.synchronize();
    CHECK(host1 == std::vector<unsigned char>(bytes, 1));
    CHECK(host2 == std::vector<unsigned char>(bytes, 2));
  }
}

TEST_CASE("failed captures give back every block: 1000 of them leave the pool empty") {
  gctest::stream stream;
  gc::graph graph;
  for (int i = 0; i < 1000; ++i) {
    try {
      graph.capture([&](gc::graph::scope& cap) {
        auto* block = cap.allocate<float>(1024 + static_cast<std::size_t>(i % 7) * 4096);
        CUDA_REQUIRE(cudaMemsetAsync(block, 0, 1024, cap.stream()));
        throw std::runtime_error("the work failed");
      });
    } catch (const std::runtime_error&) {
    }
    REQUIRE(graph.pool_statistics().reserved_bytes == 0);
    REQUIRE(graph.pool_statistics().blocks_in_use == 0);
  }
  std::vector<unsigned char> host(bytes, 0);
  capture_fill(graph, host, 5); // and the graph still works
  graph.replay(stream);
  stream.synchronize();
  CHECK(host[bytes - 1] == 5);
}

TEST_CASE("out of memory during capture: a typed error naming the bytes, the graph recovers") {
  gctest::stream stream;
  gc::graph graph;
  const std::size_t huge = std::size_t{1} << 50; // a petabyte
  try {
    graph.capture(
        [&](gc::graph::scope& cap) { static_cast<void>(cap.allocate<unsigned char>(huge)); });
    FAIL("a petabyte was allocated");
  } catch (const gc::out_of_memory_error& failure) {
    INFO(failure.what());
    CHECK_THAT(std::string(failure.what()), gctest::contains(std::to_string(huge)));
    CHECK_THAT(std::string(failure.what()), gctest::contains("the pool holds"));
  }
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(stream));
  gctest::require_no_last_error();
  std::vector<unsigned char> host(bytes, 0);
  capture_fill(graph, host, 3);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host[0] == 3);
}

TEST_CASE("a user memory pool backs the graph's slabs") {
  gctest::memory_pool memory_pool;
  gctest::stream stream;
  {
    gc::graph_with<gc::pool::user> graph{memory_pool};
    std::vector<unsigned char> host(bytes, 0);
    capture_fill(graph, host, 9);
    graph.replay(stream);
    stream.synchronize();
    CHECK(host[0] == 9);
    std::uint64_t used = 0;
    CUDA_REQUIRE(cudaMemPoolGetAttribute(memory_pool, cudaMemPoolAttrUsedMemCurrent, &used));
    CHECK(used >= bytes);
  }
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  memory_pool.destroy();
}

TEST_CASE("CUDA graph memory nodes as a pool strategy") {
  gctest::stream stream;
  gc::graph_with<gc::pool::graph_memory_nodes> graph;
  std::vector<unsigned char> host(bytes, 0);
  graph.capture([&](auto& cap) {
    auto* block = cap.template allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(block, 4, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), block, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    cap.deallocate(block);
  });
  CHECK(graph.node_count() == 4); // alloc, memset, memcpy, free
  graph.replay(stream);
  graph.replay(stream);
  stream.synchronize();
  CHECK(host == std::vector<unsigned char>(bytes, 4));
}

TEST_CASE("deallocate() of a pointer the capture did not allocate is an error") {
  gc::graph graph;
  int local = 0;
  CHECK_THROWS_AS(graph.capture([&](gc::graph::scope& cap) { cap.deallocate(&local); }), gc::error);
  CHECK(graph.empty());
}

TEST_CASE("a hundred thousand allocations and deallocations in one capture: reuse, recapture") {
  // Every deallocate() looks its block up among all the blocks the capture holds. With a lookup
  // linear in them this capture took minutes (about 10^10 comparisons) and CTest's timeout
  // failed it; with the index it takes well under a second. No time is asserted: the checks are
  // the pool's behaviour at this scale.
  constexpr std::size_t count = 100'000;
  constexpr std::size_t floats = 128; // 512 bytes: the smallest size class
  gctest::stream stream;
  gc::graph graph;
  const auto work = [&](std::vector<float*>& first, std::vector<float*>& again) {
    return [&first, &again](gc::graph::scope& cap) {
      first.assign(count, nullptr);
      again.assign(count, nullptr);
      for (float*& block : first) {
        block = cap.allocate<float>(floats);
      }
      for (std::size_t i = count; i-- > 0;) { // the last block first: the stack of freed blocks
        cap.deallocate(first[i]);             // then hands out first[0] first
      }
      for (float*& block : again) {
        block = cap.allocate<float>(floats); // a freed block of this stream and size class
      }
    };
  };
  std::vector<float*> first;
  std::vector<float*> again;
  graph.capture(stream, work(first, again));
  CHECK(again == first);
  CHECK(std::set<float*>(first.begin(), first.end()).size() == count);
  const gc::pool_statistics held = graph.pool_statistics();
  CHECK(held.blocks_in_use == count);
  CHECK(held.in_use_bytes == count * 512);
  CHECK(held.slabs == (count * 512 + (std::size_t{2} << 20) - 1) / (std::size_t{2} << 20));
  // A recapture gives every block back in allocation order: the same sequence gets the same
  // addresses, and the pool does not grow.
  std::vector<float*> first_again;
  std::vector<float*> again_again;
  graph.recapture(stream, work(first_again, again_again));
  CHECK(first_again == first);
  CHECK(again_again == again);
  CHECK(graph.pool_statistics().slabs == held.slabs);
  CHECK(graph.pool_statistics().blocks_in_use == count);
  graph.replay(stream);
  stream.synchronize();
  graph.reset();
  CHECK(graph.pool_statistics().reserved_bytes == 0);
}

TEST_CASE("a hundred thousand graph memory nodes allocated and freed in one capture") {
  // deallocate() finds the block among those the capture allocated (to free on reset what it
  // did not free): with a linear search (std::erase over them) this capture was quadratic too.
  constexpr std::size_t count = 100'000;
  gctest::stream stream;
  gc::graph_with<gc::pool::graph_memory_nodes> graph{gc::keep_graph};
  std::vector<float*> blocks(count);
  graph.capture(stream, [&](auto& cap) {
    for (float*& block : blocks) {
      block = cap.template allocate<float>(64);
    }
    for (std::size_t i = count; i-- > 0;) {
      cap.deallocate(blocks[i]);
    }
  });
  CHECK(graph.node_count() == 2 * count);
  CHECK(std::set<float*>(blocks.begin(), blocks.end()).size() == count);
}

TEST_CASE("the held-block index finds each of 100000 pool-like blocks in a few probes") {
  // The index behind deallocate() (pool/detail/held_blocks.hpp): what makes a capture of N
  // allocations cost O(N) is that a block is found in a constant number of probes. Blocks like a
  // pool's: 512-byte blocks of 2 MiB slabs at scattered bases, and 2 MiB blocks, all aligned, which
  // a hash of the low address bits would pile onto a few slots.
  gc::detail::pool::held_blocks held;
  std::vector<void*> addresses;
  const std::uintptr_t base = std::uintptr_t{0x7f3a} << 32;
  const std::size_t slab = std::size_t{2} << 20;
  for (std::size_t s = 0; addresses.size() < 90'000; ++s) {
    const std::uintptr_t slab_base = base + s * 3 * slab + (s % 5) * 64 * slab;
    for (std::size_t offset = 0; offset < slab && addresses.size() < 90'000; offset += 512) {
      addresses.push_back(reinterpret_cast<void*>(slab_base + offset));
    }
  }
  for (std::size_t i = 0; i < 10'000; ++i) { // large blocks, each a slab of its own
    addresses.push_back(reinterpret_cast<void*>(base + (std::uintptr_t{1} << 40) + i * slab));
  }
  std::size_t misplaced = 0; // blocks added, found or kept at another position than their own
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    held.reserve_one();
    misplaced += held.add(addresses[i], i) != i ? 1 : 0;
  }
  REQUIRE(held.size() == 100'000);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    misplaced += held.find(addresses[i]) != i || held[i].size != i ? 1 : 0;
  }
  CHECK(misplaced == 0);
  CHECK(held.find(static_cast<char*>(addresses[7]) + 256) == gc::detail::pool::held_blocks::npos);
  CHECK(held.find(nullptr) == gc::detail::pool::held_blocks::npos);
  const auto index = held.statistics();
  INFO("slots " << index.slots << ", longest probe " << index.longest << ", total displacement "
                << index.displacement);
  CHECK(index.slots >= 2 * held.size());    // at most half full
  CHECK(index.slots <= 8 * held.size());    // and not much larger
  CHECK(index.displacement <= held.size()); // on average at most one slot past the home slot
  CHECK(index.longest <= 64);

  // Removing by a filter keeps the order of the rest and rebuilds the index.
  held.erase_if([](const gc::detail::pool::held_block& block) { return block.size % 2 == 1; });
  REQUIRE(held.size() == 50'000);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    const std::size_t expected = i % 2 == 0 ? i / 2 : gc::detail::pool::held_blocks::npos;
    misplaced += held.find(addresses[i]) != expected ? 1 : 0;
  }
  CHECK(misplaced == 0);
  held.clear();
  CHECK(held.empty());
  CHECK(held.find(addresses[0]) == gc::detail::pool::held_blocks::npos);
}

namespace {

/// Captures into `graph` a block of 16 floats, then a request of `count` floats; the request must
/// fail with out_of_memory_error saying that its size overflows size_t, and the capture must be
/// abandoned cleanly: no stream capturing, no CUDA error left, the block given back, the graph
/// empty and able to capture and replay again.
template <class T, class Graph, class Count>
void require_count_refused(const char* name, Graph& graph, cudaStream_t stream, Count count,
                           bool buffer, std::string_view expected) {
  INFO(name << ", a request of " << count << " objects of " << sizeof(T) << " bytes");
  bool requested = false;
  const auto request = [&](auto& cap) {
    requested = true;
    if constexpr (Graph::pool_type::has_handle) {
      if (buffer) {
        static_cast<void>(cap.template make_buffer<T>(count));
        return;
      }
    }
    static_cast<void>(cap.template allocate<T>(count));
  };
  try {
    graph.capture(stream, [&](typename Graph::scope& cap) {
      float* first = cap.template allocate<float>(16);
      CUDA_REQUIRE(cudaMemsetAsync(first, 0, 16 * sizeof(float), cap.stream()));
      request(cap);
      FAIL("a request of " << count << " objects was granted");
    });
    FAIL("the capture succeeded");
  } catch (const std::invalid_argument& failure) {
    INFO(failure.what());
    CHECK(requested);
    CHECK_THAT(std::string(failure.what()), gctest::contains(std::string{expected}));
    CHECK_THAT(std::string(failure.what()), gctest::contains("nothing was allocated"));
  }
  CHECK(graph.empty());
  CHECK_FALSE(gctest::capturing(stream));
  gctest::require_no_last_error();
  if constexpr (Graph::pool_type::has_handle) {
    CHECK(graph.pool_statistics().blocks_in_use == 0);
  }
  // The same graph captures and replays again.
  std::vector<unsigned char> host(bytes, 0);
  graph.capture(stream, [&](typename Graph::scope& cap) {
    auto* block = cap.template allocate<unsigned char>(bytes);
    CUDA_REQUIRE(cudaMemsetAsync(block, 5, bytes, cap.stream()));
    CUDA_REQUIRE(cudaMemcpyAsync(host.data(), block, bytes, cudaMemcpyDeviceToHost, cap.stream()));
    cap.deallocate(block);
  });
  graph.replay(stream);
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  CHECK(host == std::vector<unsigned char>(bytes, 5));
  graph.reset();
}

/// Every refused count of the reliability issue, for one graph (make_buffer where it exists).
template <class Graph>
void require_counts_refused(const char* name, Graph& graph, cudaStream_t stream) {
  // (max / 4 + 2) floats are 2^64 + 4 bytes: unchecked, the product wraps to a 4-byte request
  // that would succeed. A negative count converted to size_t overflows too; bytes of (size_t)-1
  // overflowed the size-class rounding and came back as a usable 2 MiB block.
  const std::size_t wraps_to_four = std::numeric_limits<std::size_t>::max() / sizeof(float) + 2;
  const std::size_t converted = static_cast<std::size_t>(-1);
  for (const bool buffer : {false, true}) {
    require_count_refused<float>(name, graph, stream, wraps_to_four, buffer, "overflows size_t");
    require_count_refused<float>(name, graph, stream, converted, buffer, "overflows size_t");
    require_count_refused<std::byte>(name, graph, stream, converted, buffer,
                                     "<std::byte>() was given a count of 18446744073709551615");
    require_count_refused<std::byte>(name, graph, stream, -1, buffer,
                                     "<std::byte>() was given a count of -1, which is negative");
    require_count_refused<char>(name, graph, stream, -100, buffer,
                                "<char>() was given a count of -100, which is negative");
    require_count_refused<float>(name, graph, stream, -1L, buffer,
                                 "<float>() was given a count of -1, which is negative");
  }
}

} // namespace

TEST_CASE("an element count whose size overflows size_t is refused, and the graph recovers") {
  gctest::stream stream;
  gctest::memory_pool memory_pool;
  {
    const auto pool = gc::graph_pool_handle();
    gc::graph private_graph;
    gc::graph_with<gc::pool::shared> shared_graph{pool};
    gc::graph_with<gc::pool::user> user_graph{memory_pool};
    gc::graph_with<gc::pool::graph_memory_nodes> nodes_graph;
    require_counts_refused("private_pool", private_graph, stream);
    require_counts_refused("shared", shared_graph, stream);
    CHECK(pool.statistics().blocks_in_use == 0);
    require_counts_refused("user", user_graph, stream);
    require_counts_refused("graph_memory_nodes", nodes_graph, stream);
  }
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  memory_pool.destroy();
}
