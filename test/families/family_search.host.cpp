// Host tests: the binary search behind a shape family's lookups
// (detail::families::lower_bound_index) gives std::lower_bound's answer for every family size and
// request, on both of its paths (arithmetic keys without branches, other keys through
// std::lower_bound).
#include <graphcap/family.hpp>

#include "catch.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

template <class Key>
std::size_t expected_index(const std::vector<Key>& keys, const Key& n) {
  return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), n) - keys.begin());
}

} // namespace

TEST_CASE("a family's lookup finds std::lower_bound's index for every size and request") {
  for (std::size_t count = 0; count <= 70; ++count) {
    std::vector<std::size_t> keys; // 3, 6, 9, ...: gaps on both sides of every key
    for (std::size_t i = 0; i < count; ++i) {
      keys.push_back(3 * (i + 1));
    }
    for (std::size_t n = 0; n <= 3 * count + 4; ++n) {
      const std::size_t found =
          graphcap::detail::families::lower_bound_index(keys.data(), keys.size(), n);
      INFO("count " << count << ", request " << n);
      REQUIRE(found == expected_index(keys, n));
    }
  }
}

TEST_CASE("a family's lookup is right for signed and floating-point keys") {
  const std::vector<int> signed_keys{-40, -7, 0, 5, 1000};
  for (int n = -50; n <= 1010; ++n) {
    REQUIRE(graphcap::detail::families::lower_bound_index(signed_keys.data(), signed_keys.size(),
                                                          n) == expected_index(signed_keys, n));
  }
  const std::vector<double> real_keys{0.25, 0.5, 1.0, 2.0};
  for (const double n : {0.0, 0.25, 0.3, 1.0, 1.5, 2.0, 2.5}) {
    REQUIRE(graphcap::detail::families::lower_bound_index(real_keys.data(), real_keys.size(), n) ==
            expected_index(real_keys, n));
  }
}

TEST_CASE("a family's lookup of keys that are not numbers goes through std::lower_bound") {
  const std::vector<std::string> keys{"b", "d", "f"};
  for (const std::string n : {"a", "b", "c", "d", "e", "f", "g"}) {
    REQUIRE(graphcap::detail::families::lower_bound_index(keys.data(), keys.size(), n) ==
            expected_index(keys, n));
  }
}
