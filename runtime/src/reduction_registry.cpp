// The table of user-defined reduction operators, by id (reprise/reduction.h).
#include <fmt/core.h>

#include <array>
#include <memory>
#include <mutex>

#include "reprise/error.h"
#include "reprise/reduction.h"

namespace reprise::detail {

namespace {
struct Table {
  std::mutex mutex;  // registration only: lookups happen after it (before start())
  std::array<std::unique_ptr<const CustomReduction>, 256> ops;
};
Table& table() {
  static Table t;
  return t;
}
}  // namespace

const CustomReduction* custom_reduction(ReductionOp op) {
  return is_custom(op) ? table().ops[std::uint8_t(op)].get() : nullptr;
}

void register_custom_reduction(std::uint8_t id, CustomReduction r) {
  if (id < kFirstCustomReduction)
    throw Error(
        fmt::format("register_reduction('{}'): id {} is reserved for the built-in "
                    "operators (use {} to 255)",
                    r.name, id, kFirstCustomReduction));
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mutex);
  if (const CustomReduction* old = t.ops[id].get()) {
    // Registering the same operator again (a program's set-up run twice) is harmless.
    if (old->fold == r.fold && old->name == r.name) return;
    throw Error(
        fmt::format("register_reduction('{}'): id {} is already the reduction operator '{}'",
                    r.name, id, old->name));
  }
  t.ops[id] = std::make_unique<const CustomReduction>(std::move(r));
}

}  // namespace reprise::detail
