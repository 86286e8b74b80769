#include "checks.hpp"
int main() {
  return 0;
}
