// expect: T must be trivially copyable
// A device_value copies its T bytewise to the device: a type with a non-trivial copy is refused
// with a readable message.
#include <graphcap/rebind.hpp>

#include <string>

#ifdef GRAPHCAP_CONTROL
using value_type = int;
#else
using value_type = std::string;
#endif

int main() {
  graphcap::device_value<value_type>* value = nullptr;
  return value == nullptr ? 0 : static_cast<int>(sizeof(*value));
}
