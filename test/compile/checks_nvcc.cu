#include "checks.hpp"
#include "liveness_checks.hpp"
int main() {
  return 0;
}
