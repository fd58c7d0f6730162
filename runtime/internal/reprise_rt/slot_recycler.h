#pragma once
// Reuse of the table slots of destroyed region-tree nodes. A slot is retired with the event
// of the op that last needs it (a destruction completes once every op issued before it has
// been analysed and, for a region, has completed); it is reused oldest first, and only once
// more than kQuarantine slots wait, so that the application thread almost never waits for
// that event. Which slot a creation gets depends on the calls the program made alone, not on
// timing: every shard of a control-replicated run reuses alike.
#include <cstdint>
#include <deque>
#include <optional>

#include "reprise_rt/event.h"

namespace reprise::detail {

class SlotRecycler {
 public:
  static constexpr std::size_t kQuarantine = 64;

  void retire(std::uint32_t slot, Event released) { retired_.push_back({slot, released}); }

  // A slot to reuse (after wait(event) has returned), or nothing: append a new one.
  template <class Wait>
  std::optional<std::uint32_t> take(Wait&& wait) {
    if (retired_.size() <= kQuarantine) return std::nullopt;
    const Retired r = retired_.front();
    retired_.pop_front();
    wait(r.released);
    return r.slot;
  }

 private:
  struct Retired {
    std::uint32_t slot;
    Event released;
  };
  std::deque<Retired> retired_;
};

}  // namespace reprise::detail
