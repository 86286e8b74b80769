// expect: keeps_blocks must offer pool_that_recaptures
// An optional hook is looked for under one name (core/policy.hpp); a policy asserts the
// capabilities it means to offer next to itself, so a misspelt hook fails there, with the
// capability's name, instead of silently reading as "not offered".
#include <graphcap/graphcap.hpp>

struct keeps_blocks : graphcap::policy_base<graphcap::policy_kind::pool> {
  static constexpr bool can_allocate = false;
  static constexpr bool has_handle = false;
  static constexpr unsigned long long instantiate_flags = 0;
#ifdef GRAPHCAP_CONTROL
  void on_recapture() noexcept {}
#else
  void on_recaptre() noexcept {} // misspelt
#endif
};
static_assert(graphcap::pool_strategy<keeps_blocks>);
static_assert(graphcap::pool_that_recaptures<keeps_blocks>,
              "keeps_blocks must offer pool_that_recaptures");

int main() {}
