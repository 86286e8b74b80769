// Runtime tests of graphcap::verify (<graphcap/verify.hpp>): the replay compared with eager work,
// on work the host can execute (memsets and copies), so that both backends run them.
#include <graphcap/graphcap.hpp>
#include <graphcap/verify.hpp>

#include "catch.hpp"
#include "cuda_helpers.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace gc = graphcap;

namespace {

/// The elements of `device` (count objects of T), copied to the host.
template <class T>
std::vector<T> read(const T* device, std::size_t count) {
  std::vector<T> host(count);
  CUDA_REQUIRE(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

template <class T>
void write(T* device, const std::vector<T>& host) {
  CUDA_REQUIRE(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("verify: a memset graph that writes every output matches its eager run") {
  gctest::device_buffer<int> counts(64);
  gctest::device_buffer<float> zeros(16);
  gc::graph graph;
  gc::buffer<unsigned char> bytes;
  const auto work = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(counts.get(), 7, counts.bytes(), s));
    CUDA_REQUIRE(cudaMemsetAsync(zeros.get(), 0, zeros.bytes(), s));
    if (bytes) {
      CUDA_REQUIRE(cudaMemsetAsync(bytes.data(), 3, bytes.size_bytes(), s));
    }
  };
  graph.capture([&](gc::graph::scope& cap) {
    bytes = cap.make_buffer<unsigned char>(100);
    work(cap.stream());
  });
  const std::size_t nodes = graph.node_count();
  const gc::verify_report report =
      gc::verify(graph, work, gc::output(counts.get(), counts.size(), "counts"),
                 std::span<float>{zeros.get(), zeros.size()}, bytes);
  INFO(report.text());
  CHECK(report.ok());
  CHECK(static_cast<bool>(report));
  REQUIRE(report.outputs().size() == 3);
  CHECK(report[0].name == "counts");
  CHECK(report[0].type == "int");
  CHECK(report[0].count == 64);
  CHECK(report[1].floating);
  CHECK(report[1].bit_identical());
  CHECK(report[2].type == "unsigned char");
  CHECK(contains(report.text(), "output 0 'counts' (int[64]): equal (bit-identical)"));
  CHECK_NOTHROW(report.require());
  CHECK(graph.node_count() == nodes); // the graph is not changed
  CHECK(graph.state() == gc::graph_state::instantiated);
  CHECK(read(counts.get(), 1)[0] == 0x07070707);
  gctest::require_no_last_error();
}

TEST_CASE("verify: an output the graph does not write keeps the poison and is named") {
  gctest::device_buffer<int> written(8);
  gctest::device_buffer<float> missed(4);
  gc::lean_graph graph;
  graph.capture([&](cudaStream_t s) { // the capture missed `missed`
    CUDA_REQUIRE(cudaMemsetAsync(written.get(), 1, written.bytes(), s));
  });
  const auto eager = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(written.get(), 1, written.bytes(), s));
    CUDA_REQUIRE(cudaMemsetAsync(missed.get(), 0, missed.bytes(), s));
  };
  const gc::verify_report report = gc::verify(graph, eager, gc::output(written.get(), 8, "written"),
                                              gc::output(missed.get(), 4, "missed"));
  INFO(report.text());
  CHECK_FALSE(report.ok());
  CHECK(report[0].ok());
  const gc::output_report& out = report[1];
  CHECK_FALSE(out.ok());
  CHECK(out.mismatches() == 4);
  CHECK(out.poisoned() == 4);
  CHECK(out.first_mismatch() == 0);
  CHECK(out.eager_value() == "0");
  CHECK(out.replay_value() == "nan (0xffffffff)");
  CHECK(contains(report.text(), "1 of 2 outputs differ"));
  CHECK(contains(out.text(), "output 1 'missed' (float[4]): differs at 4 of 4 elements; first at "
                             "index 0: eager 0, replay nan (0xffffffff)"));
  CHECK(contains(out.text(), "still holds the poison pattern"));
  // Left as the replay wrote it: the poison, untouched.
  const std::vector<float> after = read(missed.get(), 4);
  unsigned char first[sizeof(float)];
  std::memcpy(first, after.data(), sizeof(float));
  CHECK(first[0] == 0xFF);
  CHECK(first[3] == 0xFF);
  CHECK_THROWS_AS(report.require(), gc::verify_error);
  try {
    report.require();
  } catch (const gc::verify_error& error) {
    CHECK(std::string{error.what()} == report.text());
  }
  gctest::require_no_last_error();
}

TEST_CASE("verify: a pointer baked into the graph and changed since on the host is caught") {
  gctest::device_buffer<int> first(32);
  gctest::device_buffer<int> second(32);
  gctest::device_buffer<int> result(32);
  std::vector<int> first_values(32);
  std::vector<int> second_values(32);
  for (int i = 0; i < 32; ++i) {
    first_values[static_cast<std::size_t>(i)] = i;
    second_values[static_cast<std::size_t>(i)] = i < 5 ? i : 100 + i; // differs from index 5 on
  }
  write(first.get(), first_values);
  write(second.get(), second_values);
  const int* source = first.get();
  const auto copy = [&](cudaStream_t s) {
    CUDA_REQUIRE(
        cudaMemcpyAsync(result.get(), source, result.bytes(), cudaMemcpyDeviceToDevice, s));
  };
  gc::lean_graph graph;
  graph.capture(copy);
  source = second.get(); // the graph still reads `first`
  gctest::stream stream;
  gc::verify_options options;
  options.stream = stream;
  const gc::verify_report report =
      gc::verify(graph, copy, options, gc::output(result.get(), result.size(), "result"));
  INFO(report.text());
  CHECK_FALSE(report.ok());
  CHECK(report[0].mismatches() == 27);
  CHECK(report[0].first_mismatch() == 5);
  CHECK(report[0].eager_value() == "105");
  CHECK(report[0].replay_value() == "5");
  CHECK(report[0].poisoned() == 0);
  CHECK(read(result.get(), 32) == first_values); // as the replay wrote it
  source = first.get();
  CHECK(gc::verify(graph, copy, options, gc::output(result.get(), 32)).ok());
  gctest::require_no_last_error();
}

TEST_CASE("verify: floating-point outputs within and outside a tolerance") {
  gctest::device_buffer<float> captured_values(4);
  gctest::device_buffer<float> eager_values(4);
  gctest::device_buffer<float> out(4);
  write(captured_values.get(), std::vector<float>{1.0F, 2.0F, 3.0F, -4.0F});
  write(eager_values.get(), std::vector<float>{1.0F, 2.0F + 2e-6F, 3.0F, -4.0F - 1e-5F});
  const float* source = captured_values.get();
  const auto copy = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(out.get(), source, out.bytes(), cudaMemcpyDeviceToDevice, s));
  };
  gc::lean_graph graph;
  graph.capture(copy);
  source = eager_values.get(); // eager and replay now differ by what an atomic order could give

  SECTION("bit equality by default: index 1 is named with both values") {
    const gc::verify_report report = gc::verify(graph, copy, gc::output(out.get(), 4, "sum"));
    INFO(report.text());
    CHECK_FALSE(report.ok());
    const gc::output_report& sum = report[0];
    CHECK(sum.mismatches() == 2);
    CHECK(sum.first_mismatch() == 1);
    CHECK(sum.eager_value() == "2.00000191");
    CHECK(sum.replay_value() == "2");
    CHECK(sum.max_abs_diff() > 0.9e-5); // -4 - 1e-5 in float: 21 ulps of 4 below -4
    CHECK(sum.max_abs_diff() < 1.1e-5);
    CHECK(sum.max_rel_diff() > 2.4e-6);
    CHECK(sum.max_rel_diff() < 2.6e-6);
    CHECK(contains(sum.text(), "'sum' (float[4]): differs at 2 of 4 elements; first at index 1: "
                               "eager 2.00000191, replay 2"));
    CHECK(contains(sum.text(), "max abs diff 1"));
  }
  SECTION("a relative tolerance accepts them, not bit-identical") {
    gc::verify_options options;
    options.rtol = 1e-5;
    const gc::verify_report report = gc::verify(graph, copy, options, gc::output(out.get(), 4));
    INFO(report.text());
    CHECK(report.ok());
    CHECK_FALSE(report[0].bit_identical());
    CHECK(contains(report.text(), "equal within the tolerance (2 elements not bit-identical)"));
  }
  SECTION("an absolute tolerance between the two differences rejects only the larger") {
    gc::verify_options options;
    options.atol = 5e-6;
    const gc::verify_report report = gc::verify(graph, copy, options, gc::output(out.get(), 4));
    INFO(report.text());
    CHECK(report[0].mismatches() == 1);
    CHECK(report[0].first_mismatch() == 3);
  }
}

TEST_CASE("verify: a chosen poison pattern, and work that takes no stream") {
  gctest::device_buffer<unsigned char> out(16);
  gc::lean_graph graph;
  graph.capture([](cudaStream_t) {}); // writes nothing
  gc::verify_options options;
  options.poison = 0xAB;
  const gc::verify_report report = gc::verify(
      graph, [&] { CUDA_REQUIRE(cudaMemset(out.get(), 1, out.bytes())); }, options,
      gc::output(out.get(), out.size()));
  INFO(report.text());
  CHECK(report[0].poisoned() == 16);
  CHECK(report[0].replay_value() == "171");
  CHECK(contains(report.text(), "poison 0xab"));
}

TEST_CASE("verify: an eager result equal to the poison is flagged, and another poison decides") {
  gctest::device_buffer<unsigned char> out(8);
  const auto all_ones = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(out.get(), 0xFF, out.bytes(), s));
  };
  gc::lean_graph graph;
  graph.capture([](cudaStream_t) {}); // writes nothing, which the default poison cannot show
  const gc::verify_report blind = gc::verify(graph, all_ones, gc::output(out.get(), 8, "out"));
  INFO(blind.text());
  CHECK(blind.ok());
  CHECK(blind[0].eager_poison() == 8);
  CHECK(contains(blind.text(), "8 elements of the eager result are the poison pattern itself"));
  gc::verify_options options;
  options.poison = 0x00;
  const gc::verify_report seen =
      gc::verify(graph, all_ones, options, gc::output(out.get(), 8, "out"));
  INFO(seen.text());
  CHECK_FALSE(seen.ok());
  CHECK(seen[0].poisoned() == 8);
  CHECK(seen[0].eager_poison() == 0);
}

TEST_CASE("verify: wrong arguments are clear errors") {
  gctest::device_buffer<int> out(4);
  const auto work = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(out.get(), 0, out.bytes(), s));
  };
  gc::lean_graph graph;

  SECTION("a graph without a capture: state_error") {
    CHECK_THROWS_AS(gc::verify(graph, work, gc::output(out.get(), 4)), gc::state_error);
    try {
      static_cast<void>(gc::verify(graph, work, gc::output(out.get(), 4)));
    } catch (const gc::state_error& error) {
      CHECK(contains(error.what(), "cannot verify() a graph that is empty: capture it first"));
    }
  }
  graph.capture(work);
  SECTION("host memory: invalid_argument naming the output") {
    std::vector<int> host(4);
    try {
      static_cast<void>(gc::verify(graph, work, gc::output(out.get(), 4),
                                   gc::output(host.data(), host.size(), "host")));
      FAIL("verify() accepted host memory");
    } catch (const std::invalid_argument& error) {
      INFO(error.what());
      CHECK(contains(error.what(), "verify(): output 1 ('host') is not CUDA memory, not device "
                                   "memory"));
    }
  }
  SECTION("pinned host memory: invalid_argument") {
    void* pinned = nullptr;
    CUDA_REQUIRE(cudaMallocHost(&pinned, 16));
    CHECK_THROWS_AS(gc::verify(graph, work, gc::output(static_cast<int*>(pinned), 4)),
                    std::invalid_argument);
    CUDA_REQUIRE(cudaFreeHost(pinned));
  }
  SECTION("a null pointer with elements: invalid_argument") {
    CHECK_THROWS_AS(gc::verify(graph, work, gc::output(static_cast<int*>(nullptr), 4)),
                    std::invalid_argument);
  }
  SECTION("a capturing stream: state_error, and the capture goes on") {
    gctest::stream stream;
    gc::lean_graph other;
    auto cap = other.begin_capture(stream);
    gc::verify_options options;
    options.stream = stream;
    CHECK_THROWS_AS(gc::verify(graph, work, options, gc::output(out.get(), 4)), gc::state_error);
    CHECK(gctest::capturing(stream));
    cap.end();
  }
  gctest::require_no_last_error();
}

TEST_CASE("verify's comparison: identical runs skipped whole, differences and poison still found") {
  // 3000 floats: runs of 1024 elements are compared with one memcmp where identical; the
  // difference sits in the second run, eager poison-valued elements in the first and third.
  constexpr std::size_t count = 3000;
  std::vector<float> eager(count, 1.0F);
  std::vector<float> replay(count, 1.0F);
  const auto poison_at = [&](std::size_t i) { std::memset(&eager[i], 0xFF, sizeof(float)); };
  poison_at(5);
  poison_at(2500);
  replay[5] = eager[5]; // the same bytes: identical, still counted as eager poison
  replay[2500] = eager[2500];
  replay[1500] = 2.0F; // the one difference
  gc::detail::inspection::comparison compared;
  gc::detail::inspection::compare_elements<float>(reinterpret_cast<const std::byte*>(eager.data()),
                                                  reinterpret_cast<const std::byte*>(replay.data()),
                                                  count, gc::detail::inspection::compare_settings{},
                                                  compared);
  CHECK(compared.mismatches == 1);
  CHECK(compared.not_identical == 1);
  CHECK(compared.first_mismatch == 1500);
  CHECK(compared.eager_poison == 2);
  CHECK(compared.max_abs_diff == 1.0);
}

TEST_CASE("verify: host copies kept between calls never stand in for a later call's values") {
  // 5000 floats (four memcmp runs, the last partial): the eager source differs from the one the
  // graph baked in at index 2048 (a NaN that is not the poison) and at the last element only.
  constexpr std::size_t count = 5000;
  gctest::device_buffer<float> baked(count);
  gctest::device_buffer<float> changed(count);
  gctest::device_buffer<float> out(count);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>(i) * 0.5F;
  }
  write(baked.get(), values);
  const std::uint32_t quiet_nan = 0x7fc00001U;
  std::memcpy(&values[2048], &quiet_nan, sizeof(float));
  values[count - 1] += 1.0F; // 2499.5 -> 2500.5
  write(changed.get(), values);
  const float* source = baked.get();
  const auto copy = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(out.get(), source, out.bytes(), cudaMemcpyDeviceToDevice, s));
  };
  gc::lean_graph graph;
  graph.capture(copy);
  // The first check matches: the kept copies now hold equal eager and replay values.
  const gc::verify_report equal = gc::verify(graph, copy, gc::output(out.get(), count, "out"));
  INFO(equal.text());
  CHECK(equal.ok());
  CHECK(equal[0].bit_identical());

  source = changed.get();
  const gc::verify_report kept = gc::verify(graph, copy, gc::output(out.get(), count, "out"));
  INFO(kept.text());
  CHECK(kept[0].mismatches() == 2);
  CHECK(kept[0].result.not_identical == 2);
  CHECK(kept[0].first_mismatch() == 2048);
  CHECK(kept[0].eager_value() == "nan (0x7fc00001)");
  CHECK(kept[0].replay_value() == "1024");
  CHECK(kept[0].max_abs_diff() == std::numeric_limits<double>::infinity());
  CHECK(kept[0].poisoned() == 0);
  CHECK(kept[0].eager_poison() == 0);

  gc::verify_options fresh;
  fresh.keep_host_copies = false; // buffers of its own: the same report
  const gc::verify_report own = gc::verify(graph, copy, fresh, gc::output(out.get(), count, "out"));
  CHECK(own.text() == kept.text());

  gc::verify_options tolerant;
  tolerant.rtol = 1e-3; // accepts 2499.5 for 2500.5, never a NaN
  const gc::verify_report within =
      gc::verify(graph, copy, tolerant, gc::output(out.get(), count, "out"));
  INFO(within.text());
  CHECK(within[0].mismatches() == 1);
  CHECK(within[0].result.not_identical == 2);
  CHECK(within[0].first_mismatch() == 2048);

  // A smaller check after the larger ones: kept buffers larger than needed, the same results.
  source = baked.get();
  CHECK(gc::verify(graph, copy, gc::output(out.get(), count, "out")).ok());
  source = changed.get();
  const gc::verify_report last = gc::verify(graph, copy, gc::output(out.get() + 4990, 10));
  INFO(last.text());
  CHECK(last[0].mismatches() == 1);
  CHECK(last[0].first_mismatch() == 9);
  CHECK(last[0].eager_value() == "2500.5");
  CHECK(last[0].replay_value() == "2499.5");
  gctest::require_no_last_error();
}

TEST_CASE("verify: outputs of several types and odd sizes, each compared at its own place") {
  gctest::device_buffer<unsigned char> bytes(3);
  gctest::device_buffer<double> baked(5);
  gctest::device_buffer<double> changed(5);
  gctest::device_buffer<double> doubles(5);
  gctest::device_buffer<short> shorts(7);
  write(baked.get(), std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0});
  write(changed.get(), std::vector<double>{1.0, 2.0, 3.0, 4.0, -5.0});
  const double* source = baked.get();
  const auto work = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemsetAsync(bytes.get(), 7, bytes.bytes(), s));
    CUDA_REQUIRE(
        cudaMemcpyAsync(doubles.get(), source, doubles.bytes(), cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemsetAsync(shorts.get(), 0xFF, shorts.bytes(), s)); // -1: the poison
  };
  gc::lean_graph graph;
  graph.capture(work);
  source = changed.get();
  for (const bool keep : {true, false}) {
    gc::verify_options options;
    options.keep_host_copies = keep;
    const gc::verify_report report =
        gc::verify(graph, work, options, gc::output(bytes.get(), 3, "bytes"),
                   gc::output(doubles.get(), 5, "doubles"), gc::output(shorts.get(), 7, "shorts"));
    INFO(report.text());
    CHECK(report[0].ok());
    CHECK(report[0].eager_poison() == 0);
    CHECK(report[1].mismatches() == 1);
    CHECK(report[1].first_mismatch() == 4);
    CHECK(report[1].eager_value() == "-5");
    CHECK(report[1].replay_value() == "5");
    CHECK(report[1].max_abs_diff() == 10.0);
    CHECK(report[1].max_rel_diff() == 2.0);
    CHECK(report[2].ok());
    CHECK(report[2].eager_poison() == 7);
  }
  gctest::require_no_last_error();
}

TEST_CASE("verify: outputs of 1 MiB and more, their eager poison counted beside the replay") {
  constexpr std::size_t n = (std::size_t{1} << 18) + 3; // floats: 1 MiB and 12 bytes
  constexpr std::size_t poisoned = 1000;
  gctest::device_buffer<float> out(n);
  gctest::device_buffer<int> small(16);
  std::vector<float> values(n, 2.0F);
  gctest::device_buffer<float> baked(n);
  gctest::device_buffer<float> changed(n);
  write(baked.get(), values);
  values[n - 2] = -2.0F;
  write(changed.get(), values);
  const float* source = baked.get();
  const auto work = [&](cudaStream_t s) {
    CUDA_REQUIRE(cudaMemcpyAsync(out.get(), source, out.bytes(), cudaMemcpyDeviceToDevice, s));
    CUDA_REQUIRE(cudaMemsetAsync(out.get() + 5000, 0xFF, poisoned * sizeof(float), s));
    CUDA_REQUIRE(cudaMemsetAsync(small.get(), 0xFF, small.bytes(), s));
  };
  gc::lean_graph graph;
  graph.capture(work);
  source = changed.get();
  for (const bool keep : {true, false}) {
    gc::verify_options options;
    options.keep_host_copies = keep;
    const gc::verify_report report =
        gc::verify(graph, work, options, gc::output(out.get(), n, "out"),
                   gc::output(small.get(), 16, "small"));
    INFO(report.text());
    CHECK(report[0].eager_poison() == poisoned);
    CHECK(report[0].mismatches() == 1);
    CHECK(report[0].first_mismatch() == n - 2);
    CHECK(report[1].ok());
    CHECK(report[1].eager_poison() == 16);
  }
  gctest::require_no_last_error();
}

TEST_CASE("verify: the eager poison count beside the replay, with and without a helper thread") {
  namespace insp = gc::detail::inspection;
  constexpr std::size_t count = std::size_t{1} << 18; // floats: 1 MiB, the helper's threshold
  std::vector<float> eager(count, 1.0F);
  std::memset(eager.data() + 10, 0xFF, 77 * sizeof(float));
  gc::detail::verify_slot slot;
  slot.count = count;
  slot.bytes = count * sizeof(float);
  slot.count_eager_poison = &insp::count_eager_poison<float>;
  const std::vector<gc::detail::verify_slot> slots{slot, slot};
  const std::vector<std::size_t> offsets{0, 0};
  const auto* bytes = reinterpret_cast<const std::byte*>(eager.data());
  REQUIRE(2 * slot.bytes >= gc::detail::poison_count_thread_bytes);
  for (const std::size_t total : {2 * slot.bytes, std::size_t{64}}) { // a thread, then none
    std::vector<std::size_t> counts;
    bool ran = false;
    gc::detail::count_poison_beside(slots, offsets, bytes, 0xFF, total, counts,
                                    [&] { ran = true; });
    CHECK(ran);
    CHECK(counts == std::vector<std::size_t>{77, 77});
    // A replay that throws while the helper counts: the exception comes out, no thread is left
    // running (std::terminate otherwise).
    CHECK_THROWS_AS(gc::detail::count_poison_beside(slots, offsets, bytes, 0xFF, total, counts,
                                                    [] { throw std::runtime_error("replay"); }),
                    std::runtime_error);
  }
}

namespace {

/// A 3-byte element: counted for the poison byte by byte, not as a word.
struct three_bytes {
  unsigned char bytes[3];
};

/// Compares `eager` with an identical copy and checks the eager poison count against a count
/// made element by element.
template <class T>
void check_poison_count(const std::vector<T>& eager, unsigned char poison) {
  std::vector<unsigned char> pattern(sizeof(T), poison);
  std::size_t expected = 0;
  for (const T& element : eager) {
    expected += std::memcmp(&element, pattern.data(), sizeof(T)) == 0 ? 1U : 0U;
  }
  const std::vector<T> replay = eager;
  gc::detail::inspection::compare_settings settings;
  settings.poison = poison;
  gc::detail::inspection::comparison compared;
  gc::detail::inspection::compare_elements<T>(reinterpret_cast<const std::byte*>(eager.data()),
                                              reinterpret_cast<const std::byte*>(replay.data()),
                                              eager.size(), settings, compared);
  CHECK(compared.mismatches == 0);
  CHECK(compared.not_identical == 0);
  CHECK(compared.eager_poison == expected);
  CHECK(expected > 0);
}

} // namespace

TEST_CASE("verify's comparison: the poison counted in identical runs for every element size") {
  constexpr std::size_t count = 2100; // three runs, the last partial
  // Every 7th element the poison; some others hold the poison byte in part of their bytes only.
  const auto fill = [](auto& elements, unsigned char poison) {
    for (std::size_t i = 0; i < elements.size(); ++i) {
      auto* bytes = reinterpret_cast<unsigned char*>(&elements[i]);
      const std::size_t size = sizeof(elements[i]);
      for (std::size_t b = 0; b < size; ++b) {
        bytes[b] =
            i % 7 == 0 || (i % 5 == 0 && b + 1 < size) ? poison : static_cast<unsigned char>(i + b);
      }
    }
  };
  for (const unsigned char poison : {0xFF, 0xAB, 0x00}) {
    std::vector<unsigned char> ones(count);
    std::vector<std::uint16_t> twos(count);
    std::vector<float> fours(count);
    std::vector<double> eights(count);
    std::vector<three_bytes> threes(count);
    fill(ones, poison);
    fill(twos, poison);
    fill(fours, poison);
    fill(eights, poison);
    fill(threes, poison);
    check_poison_count(ones, poison);
    check_poison_count(twos, poison);
    check_poison_count(fours, poison);
    check_poison_count(eights, poison);
    check_poison_count(threes, poison);
  }
}

TEST_CASE("verify's comparison: a difference in the last element of a partial run is found") {
  constexpr std::size_t count = 2049;
  std::vector<double> eager(count, 3.0);
  std::vector<double> replay(count, 3.0);
  replay[count - 1] = 3.0 + 3e-9; // within rtol 1e-6, not bit-identical
  gc::detail::inspection::compare_settings settings;
  gc::detail::inspection::comparison exact;
  gc::detail::inspection::compare_elements<double>(
      reinterpret_cast<const std::byte*>(eager.data()),
      reinterpret_cast<const std::byte*>(replay.data()), count, settings, exact);
  CHECK(exact.mismatches == 1);
  CHECK(exact.first_mismatch == count - 1);
  CHECK(exact.max_rel_diff > 0.9e-9);
  CHECK(exact.max_rel_diff < 1.1e-9);
  settings.rtol = 1e-6;
  gc::detail::inspection::comparison tolerant;
  gc::detail::inspection::compare_elements<double>(
      reinterpret_cast<const std::byte*>(eager.data()),
      reinterpret_cast<const std::byte*>(replay.data()), count, settings, tolerant);
  CHECK(tolerant.mismatches == 0);
  CHECK(tolerant.not_identical == 1);
  CHECK(tolerant.max_abs_diff == exact.max_abs_diff);
}
