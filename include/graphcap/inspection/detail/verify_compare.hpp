// graphcap/inspection/detail/verify_compare.hpp - what verify() compares: one output's eager copy
// against what the replay wrote, element by element, with a tolerance for floating-point types, and
// the elements printed for the report. Host code only, no CUDA call.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ios>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

namespace graphcap::detail::inspection {

/// How elements are compared: |replay - eager| <= atol + rtol * |eager| for floating-point
/// types, bit equality for every other type.
struct compare_settings {
  double atol = 0.0;
  double rtol = 0.0;
  unsigned char poison = 0xFF;
};

/// One output compared.
struct comparison {
  std::size_t mismatches = 0;     // elements outside the tolerance (not bit-equal: other types)
  std::size_t not_identical = 0;  // elements whose bits differ
  std::size_t poisoned = 0;       // mismatched elements that still hold the poison pattern
  std::size_t eager_poison = 0;   // elements the eager run left equal to the poison pattern
  std::size_t first_mismatch = 0; // valid when mismatches > 0
  std::string eager_value;        // the first mismatched element, eager and replayed
  std::string replay_value;
  double max_abs_diff = 0.0; // floating-point outputs: over every element
  double max_rel_diff = 0.0;
};

/// The object's bytes in hex, most significant first on a little-endian machine: "0xffffffff".
template <class T>
std::string bytes_text(const T& value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  std::string text = "0x";
  constexpr const char* digits = "0123456789abcdef";
  for (std::size_t i = sizeof(T); i-- > 0;) {
    text += digits[bytes[i] >> 4U];
    text += digits[bytes[i] & 0xFU];
  }
  return text;
}

/// One element as text: the value for arithmetic types, the bytes in hex otherwise.
template <class T>
std::string element_text(const T& value) {
  std::ostringstream text;
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) { // "-nan" or "nan" says little: the bits show the poison
      return "nan (" + bytes_text(value) + ")";
    }
    text.precision(std::numeric_limits<T>::max_digits10);
    text << value;
  } else if constexpr (std::is_same_v<T, bool>) {
    text << (value ? "true" : "false");
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    text << static_cast<int>(value); // a number, not a character
  } else if constexpr (std::is_arithmetic_v<T>) {
    text << value;
  } else {
    return bytes_text(value);
  }
  return text.str();
}

/// The absolute and relative difference of two floating-point values; infinite where one is NaN
/// and the other not (or infinities of opposite signs).
template <class = void>
void float_difference(double eager, double replay, double& absolute, double& relative) {
  absolute = std::fabs(replay - eager);
  if (std::isnan(absolute)) {
    absolute = std::numeric_limits<double>::infinity();
  }
  if (absolute == 0.0) {
    relative = 0.0;
  } else {
    relative = std::fabs(eager) > 0.0 ? absolute / std::fabs(eager)
                                      : std::numeric_limits<double>::infinity();
  }
}

/// Compares one element `i` of T (see compare_elements). `is_poison` tells whether an element's
/// bytes are the poison pattern.
template <class T, class IsPoison>
void compare_element(const std::byte* eager, const std::byte* replay, std::size_t i,
                     const compare_settings& settings, const IsPoison& is_poison, comparison& out) {
  const std::byte* expected_bytes = eager + i * sizeof(T);
  const std::byte* actual_bytes = replay + i * sizeof(T);
  const bool identical = std::memcmp(expected_bytes, actual_bytes, sizeof(T)) == 0;
  T expected;
  T actual;
  std::memcpy(&expected, expected_bytes, sizeof(T));
  std::memcpy(&actual, actual_bytes, sizeof(T));
  bool good = identical;
  if constexpr (std::is_floating_point_v<T>) {
    double absolute = 0.0;
    double relative = 0.0;
    if (!identical) {
      float_difference(static_cast<double>(expected), static_cast<double>(actual), absolute,
                       relative);
      good = absolute <= settings.atol + settings.rtol * std::fabs(static_cast<double>(expected));
    }
    out.max_abs_diff = std::max(out.max_abs_diff, absolute);
    out.max_rel_diff = std::max(out.max_rel_diff, relative);
  }
  out.not_identical += identical ? 0U : 1U;
  if (good) {
    return;
  }
  if (out.mismatches == 0) {
    out.first_mismatch = i;
    out.eager_value = element_text(expected);
    out.replay_value = element_text(actual);
  }
  ++out.mismatches;
  out.poisoned += is_poison(actual_bytes) ? 1U : 0U;
}

/// How many of the `count` objects of `Size` bytes at `bytes` are the poison pattern (`count`
/// under 2^32: count_eager_poison passes runs of 1024). Objects of 1, 2, 4 or 8 bytes are loaded
/// as one unsigned word each and compared with the pattern's word, counted in 32 bits (a 64-bit
/// count per element would widen every lane): a loop g++ vectorizes at -O3. It reads every
/// element of the eager copy, about what a memcmp of the two copies costs again (this machine,
/// session 25, not stored: 150-220 us against memcmp's 130-170 us at 1 Mi floats), which is why
/// verify() runs it beside the replay's copy rather than after it.
template <std::size_t Size>
std::size_t count_poison(const std::byte* bytes, std::size_t count, unsigned char poison) {
  std::uint32_t found = 0;
  if constexpr (Size == 1 || Size == 2 || Size == 4 || Size == 8) {
    using word = std::conditional_t<
        Size == 1, std::uint8_t,
        std::conditional_t<Size == 2, std::uint16_t,
                           std::conditional_t<Size == 4, std::uint32_t, std::uint64_t>>>;
    word pattern = 0;
    std::memset(&pattern, poison, Size);
    for (std::size_t i = 0; i < count; ++i) {
      word value = 0;
      std::memcpy(&value, bytes + i * Size, Size);
      found += value == pattern ? 1U : 0U;
    }
  } else {
    std::array<std::byte, Size> pattern{};
    pattern.fill(static_cast<std::byte>(poison));
    for (std::size_t i = 0; i < count; ++i) {
      found += std::memcmp(bytes + i * Size, pattern.data(), Size) == 0 ? 1U : 0U;
    }
  }
  return found;
}

/// How many of the `count` objects of T in `eager` (the eager run's copy) hold the poison pattern:
/// a replay that wrote nothing there would go unseen (verify_report's eager_poison).
template <class T>
std::size_t count_eager_poison(const std::byte* eager, std::size_t count, unsigned char poison) {
  std::size_t found = 0;
  constexpr std::size_t run = 1024; // count_poison counts in 32 bits
  for (std::size_t begin = 0; begin < count; begin += run) {
    found +=
        count_poison<sizeof(T)>(eager + begin * sizeof(T), std::min(run, count - begin), poison);
  }
  return found;
}

/// Compares `count` objects of T: `eager` (the eager run's copy) against `replay`, every count
/// of `out` but eager_poison (count_eager_poison: verify() counts it on another thread while the
/// replay runs). Runs of elements whose bytes are identical (the usual case) are compared with
/// one memcmp: bit-identical elements match under any tolerance and differ by 0, so skipping the
/// per-element pass there changes no count, no first mismatch and no largest difference. The
/// other runs are compared element by element (compare_element).
template <class T>
void compare_differences(const std::byte* eager, const std::byte* replay, std::size_t count,
                         const compare_settings& settings, comparison& out) {
  std::array<std::byte, sizeof(T)> pattern{};
  pattern.fill(static_cast<std::byte>(settings.poison));
  const auto is_poison = [&pattern](const std::byte* bytes) {
    return std::memcmp(bytes, pattern.data(), sizeof(T)) == 0;
  };
  constexpr std::size_t run = 1024; // elements per memcmp
  for (std::size_t begin = 0; begin < count; begin += run) {
    const std::size_t end = std::min(count, begin + run);
    if (std::memcmp(eager + begin * sizeof(T), replay + begin * sizeof(T),
                    (end - begin) * sizeof(T)) == 0) {
      continue;
    }
    for (std::size_t i = begin; i < end; ++i) {
      compare_element<T>(eager, replay, i, settings, is_poison, out);
    }
  }
}

/// Compares `count` objects of T, every count of `out` (compare_differences, then
/// count_eager_poison, on this thread).
template <class T>
void compare_elements(const std::byte* eager, const std::byte* replay, std::size_t count,
                      const compare_settings& settings, comparison& out) {
  compare_differences<T>(eager, replay, count, settings, out);
  out.eager_poison += count_eager_poison<T>(eager, count, settings.poison);
}

/// compare_differences<T>, through a plain function pointer (outputs of several types in one list).
using compare_function = void (*)(const std::byte*, const std::byte*, std::size_t,
                                  const compare_settings&, comparison&);
/// count_eager_poison<T>, through a plain function pointer.
using poison_count_function = std::size_t (*)(const std::byte*, std::size_t, unsigned char);

} // namespace graphcap::detail::inspection
