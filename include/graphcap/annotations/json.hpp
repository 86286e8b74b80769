// graphcap/annotations/json.hpp - annotations as JSON (write_annotations_json), and the JSON
// pieces the trace writer shares: escaped strings, microseconds, files opened for writing.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/annotations/values.hpp>
#include <graphcap/cuda/node_type.hpp>
#include <graphcap/error.hpp>

#include <cstdint>
#include <fstream>
#include <ios>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace graphcap {
namespace detail {

/// Writes `text` as a JSON string: quoted, with quotes, backslashes and control characters
/// escaped.
template <class = void>
void write_json_string(std::ostream& out, std::string_view text) {
  out << '"';
  for (const char c : text) {
    switch (c) {
    case '"':
      out << "\\\"";
      break;
    case '\\':
      out << "\\\\";
      break;
    case '\n':
      out << "\\n";
      break;
    case '\t':
      out << "\\t";
      break;
    case '\r':
      out << "\\r";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        constexpr std::string_view hex = "0123456789abcdef";
        const auto code = static_cast<unsigned char>(c);
        out << "\\u00" << hex[code >> 4U] << hex[code & 0xfU];
      } else {
        out << c;
      }
    }
  }
  out << '"';
}

/// Microseconds with nanosecond digits, as Chrome traces want them ("12.345").
template <class = void>
void write_microseconds(std::ostream& out, std::uint64_t nanoseconds) {
  out << nanoseconds / 1000;
  const std::uint64_t rest = nanoseconds % 1000;
  if (rest != 0) {
    char digits[4] = {'0', '0', '0', '\0'};
    const std::uint64_t tens = rest / 10;
    digits[0] = static_cast<char>('0' + rest / 100);
    digits[1] = static_cast<char>('0' + tens % 10);
    digits[2] = static_cast<char>('0' + rest % 10);
    out << '.' << digits;
  }
}

/// Opens `path` for writing `what` (replacing the file); graphcap::error if it cannot.
template <class = void>
void open_for_writing(std::ofstream& file, const std::string& path, std::string_view what) {
  file.open(path, std::ios::out | std::ios::trunc);
  if (!file) {
    throw error("graphcap: cannot write " + std::string{what} + " to '" + path +
                "': the file could not be opened (does its directory exist, is it writable?)");
  }
}

} // namespace detail

/// Writes `annotations` as JSON: {"annotations": [{"id", "template_id", "type", "kernel",
/// "values": {key: value}}]}. Ids are JSON numbers (64-bit: read them as integers).
template <class = void>
void write_annotations_json(std::ostream& out, const std::vector<node_annotation>& list) {
  out << "{\"annotations\": [";
  const char* separator = "\n  ";
  for (const node_annotation& node : list) {
    out << separator << "{\"id\": " << node.id << ", \"template_id\": " << node.template_id
        << ", \"type\": ";
    detail::write_json_string(out, to_string(node.type));
    out << ", \"kernel\": ";
    detail::write_json_string(out, node.kernel);
    out << ", \"values\": {";
    const char* comma = "";
    for (const auto& [key, value] : node.values) {
      out << comma;
      detail::write_json_string(out, key);
      out << ": ";
      detail::write_json_string(out, value);
      comma = ", ";
    }
    out << "}}";
    separator = ",\n  ";
  }
  out << "\n]}\n";
}

/// The same, into the file at `path` (replaced). Throws graphcap::error if it cannot be written.
template <class = void>
void write_annotations_json(const std::string& path, const std::vector<node_annotation>& list) {
  std::ofstream file;
  detail::open_for_writing(file, path, "annotations");
  write_annotations_json(file, list);
  if (!file.flush()) {
    throw error("graphcap: writing annotations to '" + path + "' failed (disk full?)");
  }
}

} // namespace graphcap
