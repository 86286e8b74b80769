// graphcap/inspection/verify_report.hpp - what verify() found: per output, equal or not, the first
// differing element with both values, the largest differences; printable, and a require() that
// throws verify_error with the report's text. Plain values: no CUDA call.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/error.hpp>
#include <graphcap/inspection/detail/verify_compare.hpp>

#include <cstddef>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace graphcap {

/// A verify() whose replay did not match the eager run; what() is the report's text.
class verify_error : public error {
public:
  using error::error;
};

/// One output compared by verify().
template <class = void>
struct basic_output_report {
  std::size_t index = 0; ///< its place among verify()'s outputs
  std::string name;      ///< the name it was given ("" if none)
  std::string type;      ///< its element type, e.g. "float"
  std::size_t count = 0; ///< how many elements
  bool floating = false; ///< floating-point elements: compared within the tolerance
  /// What the comparison found (mismatches, first_mismatch, values, largest differences).
  detail::inspection::comparison result;

  /// True when every element matched (within the tolerance for floating-point elements).
  [[nodiscard]] bool ok() const noexcept { return result.mismatches == 0; }
  /// True when every element's bits are the eager run's.
  [[nodiscard]] bool bit_identical() const noexcept { return result.not_identical == 0; }
  /// Elements outside the tolerance (not bit-equal, for other types).
  [[nodiscard]] std::size_t mismatches() const noexcept { return result.mismatches; }
  /// The first such element's index (meaningful when !ok()).
  [[nodiscard]] std::size_t first_mismatch() const noexcept { return result.first_mismatch; }
  /// The first such element as the eager run left it, as text.
  [[nodiscard]] const std::string& eager_value() const noexcept { return result.eager_value; }
  /// The first such element as the replay left it, as text.
  [[nodiscard]] const std::string& replay_value() const noexcept { return result.replay_value; }
  /// Mismatched elements that still hold the poison pattern: the replay did not write them.
  [[nodiscard]] std::size_t poisoned() const noexcept { return result.poisoned; }
  /// Elements the eager run itself left equal to the poison pattern: a match there does not
  /// show that the replay wrote them.
  [[nodiscard]] std::size_t eager_poison() const noexcept { return result.eager_poison; }
  /// The largest |replay - eager| (floating-point outputs; infinite where one side is NaN).
  [[nodiscard]] double max_abs_diff() const noexcept { return result.max_abs_diff; }
  /// The largest |replay - eager| / |eager| (floating-point outputs).
  [[nodiscard]] double max_rel_diff() const noexcept { return result.max_rel_diff; }

  /// One line: "output 1 'y' (float[1024]): differs at 3 of 1024 elements; first at 17: ...".
  [[nodiscard]] std::string text() const {
    std::string line = "output " + std::to_string(index);
    if (!name.empty()) {
      line += " '" + name + "'";
    }
    line += " (" + type + "[" + std::to_string(count) + "]): ";
    if (ok()) {
      line += bit_identical()
                  ? "equal (bit-identical)"
                  : "equal within the tolerance (" + std::to_string(result.not_identical) +
                        " elements not bit-identical)";
    } else {
      line += "differs at " + std::to_string(result.mismatches) + " of " + std::to_string(count) +
              " elements; first at index " + std::to_string(result.first_mismatch) + ": eager " +
              result.eager_value + ", replay " + result.replay_value;
      if (result.poisoned == result.mismatches) {
        line += "; every differing element still holds the poison pattern: the replay did not "
                "write them (an output the graph does not write, or work outside the capture)";
      } else if (result.poisoned > 0) {
        line += "; " + std::to_string(result.poisoned) +
                " of them still hold the poison pattern (not written by the replay)";
      }
    }
    if (result.eager_poison > 0) {
      line += "; " + std::to_string(result.eager_poison) +
              " elements of the eager result are the poison pattern itself: the replay may not "
              "have written them (verify again with another options.poison)";
    }
    if (floating && !bit_identical()) {
      line += "; max abs diff " + number(result.max_abs_diff) + ", max rel diff " +
              number(result.max_rel_diff);
    }
    return line;
  }

  /// A difference as text, "%.6g".
  static std::string number(double value) {
    char text[32];
    static_cast<void>(std::snprintf(text, sizeof(text), "%.6g", value));
    return text;
  }
};
/// What to name: basic_output_report<> (a template only so that its bodies compile where used).
using output_report = basic_output_report<>;

/// What verify() found, output by output. Printable (`std::cout << report`); `require()` throws.
template <class = void>
class basic_verify_report {
public:
  /// An empty report for a comparison with these settings.
  basic_verify_report(double atol, double rtol, unsigned char poison) noexcept
      : atol_(atol), rtol_(rtol), poison_(poison) {}

  /// Adds one output's comparison.
  void add(output_report output) { outputs_.push_back(std::move(output)); }

  /// True when every output matched.
  [[nodiscard]] bool ok() const noexcept {
    for (const output_report& output : outputs_) {
      if (!output.ok()) {
        return false;
      }
    }
    return true;
  }
  /// True when every output matched (`if (report)`).
  [[nodiscard]] explicit operator bool() const noexcept { return ok(); }

  /// The outputs, in the order verify() was given them.
  [[nodiscard]] const std::vector<output_report>& outputs() const noexcept { return outputs_; }
  /// Output `index`.
  [[nodiscard]] const output_report& operator[](std::size_t index) const {
    return outputs_.at(index);
  }

  /// The report: a heading with the verdict and the settings, then one line per output.
  [[nodiscard]] std::string text() const {
    std::size_t failed = 0;
    for (const output_report& output : outputs_) {
      failed += output.ok() ? 0U : 1U;
    }
    char poison[8];
    static_cast<void>(std::snprintf(poison, sizeof(poison), "0x%02x", poison_));
    std::string text = "graphcap::verify: ";
    text += failed == 0 ? "the replay matches the eager run"
                        : std::to_string(failed) + " of " + std::to_string(outputs_.size()) +
                              " outputs differ between the replay and the eager run";
    text += " (atol " + output_report::number(atol_) + ", rtol " + output_report::number(rtol_) +
            ", poison " + poison + ")";
    for (const output_report& output : outputs_) {
      text += "\n  " + output.text();
    }
    return text;
  }

  /// Throws verify_error with text() unless ok().
  void require() const {
    if (!ok()) {
      throw verify_error(text());
    }
  }

  /// Writes text().
  friend std::ostream& operator<<(std::ostream& out, const basic_verify_report& report) {
    return out << report.text();
  }

private:
  double atol_;
  double rtol_;
  unsigned char poison_;
  std::vector<output_report> outputs_;
};
/// What to name: basic_verify_report<> (a template only so that its bodies compile where used).
using verify_report = basic_verify_report<>;

} // namespace graphcap
