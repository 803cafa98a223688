#include "flymc/mcmc/state_store.hpp"

namespace flymc {

bool same_stored_options(const RunConfig& a, const RunConfig& b) {
  RunConfig free_fields = a;  // the fields a resumed run may change take b's values
  free_fields.threads = b.threads;
  free_fields.profile = b.profile;
  return free_fields == b;
}

}  // namespace flymc
