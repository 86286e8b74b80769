// graphcap/core/detail/allocation_size.hpp - an element count as the pools take it: refused when it
// is negative or its byte size is absurd, with the count and the element type named.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace graphcap::detail {

/// The name of T as the compiler spells it ("float", "my::pair<int, char>"), from the signature
/// of this function: no demangler and no RTTI.
template <class T>
[[nodiscard]] constexpr std::string_view type_name() noexcept {
  const std::string_view signature = __PRETTY_FUNCTION__; // "... [with T = float; ...]"
  const std::size_t start = signature.find("T = ");
  if (start == std::string_view::npos) {
    return "T";
  }
  const std::string_view rest = signature.substr(start + 4);
  return rest.substr(0, rest.find_first_of(";]"));
}

/// The most bytes one allocation may ask for: PTRDIFF_MAX. Larger counts are what a negative
/// count converted to std::size_t becomes, and would overflow the pools' size rounding.
inline constexpr std::size_t max_allocation_bytes = static_cast<std::size_t>(PTRDIFF_MAX);

/// Throws the std::invalid_argument for a count that allocate() or make_buffer() refuses.
template <class T>
[[noreturn]] void refuse_count(std::string_view call, const std::string& count, bool negative) {
  std::string message{"graphcap: "};
  message.append(call).append("<").append(type_name<T>()).append(">() was given a count of ");
  message.append(count);
  if (negative) {
    message += ", which is negative";
  } else {
    message += " objects of " + std::to_string(sizeof(T)) +
               " bytes each, whose byte size overflows size_t (over PTRDIFF_MAX bytes; a "
               "negative count converted to std::size_t?)";
  }
  message += ": nothing was allocated";
  throw std::invalid_argument(message);
}

/// `count` as a std::size_t number of objects of T; std::invalid_argument (nothing allocated)
/// when it is negative or `count * sizeof(T)` is over max_allocation_bytes.
template <class T, std::integral Count>
[[nodiscard]] std::size_t element_count(Count count, std::string_view call) {
  if constexpr (std::is_signed_v<Count>) {
    if (count < Count{0}) [[unlikely]] {
      refuse_count<T>(call, std::to_string(count), true);
    }
  }
  if (static_cast<std::uintmax_t>(count) > max_allocation_bytes / sizeof(T)) [[unlikely]] {
    refuse_count<T>(call, std::to_string(count), false);
  }
  return static_cast<std::size_t>(count);
}

/// The bytes `count` objects of T take; `count` comes from element_count(), so this fits.
template <class T>
[[nodiscard]] constexpr std::size_t allocation_bytes(std::size_t count) noexcept {
  return count * sizeof(T);
}

} // namespace graphcap::detail
