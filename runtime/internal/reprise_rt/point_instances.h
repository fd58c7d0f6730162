#pragma once
// An op's instance for each (point, requirement), [point * reqs + r]. A replayed op may share
// its template's table (recorded once, never changed) instead of copying it: under control
// replication that table has a slot for every shard's points, and copying it into each op
// made a replay cost O(all points) on every shard. Small tables are copied inline (cheaper
// than a reference count touched by two threads).
#include <cstddef>
#include <memory>

#include "reprise_rt/inline_vector.h"
#include "reprise_rt/pool.h"

namespace reprise::detail {

class Instance;

class PointInstances {
 public:
  using Table = PoolVector<Instance*>;
  static constexpr std::size_t kInline = 8;

  std::size_t size() const { return shared_ ? shared_->size() : own_.size(); }
  bool empty() const { return size() == 0; }
  void clear() {
    own_.clear();
    if (shared_) shared_.reset();
  }
  Instance* const* data() const { return shared_ ? shared_->data() : own_.data(); }
  Instance* const* begin() const { return data(); }
  Instance* const* end() const { return data() + size(); }
  // Reading never copies: workers read a replayed op's table at the same time.
  Instance* operator[](std::size_t i) const { return data()[i]; }
  // Writing (the analysis, on its own op) goes to the op's own table: a shared one is copied
  // first, the template's stays as recorded.
  void set(std::size_t i, Instance* instance) { own()[i] = instance; }
  // Sets requirement r of every point (of `reqs` requirements each) to instance.
  void set_requirement(std::size_t r, std::size_t reqs, Instance* instance) {
    auto& table = own();
    for (std::size_t i = r; i < table.size(); i += reqs) table[i] = instance;
  }

  // The template's table: shared when it would not fit inline, else copied.
  void share(const std::shared_ptr<const Table>& table) {
    if (table->size() > kInline) {
      own_.clear();
      shared_ = table;
    } else {
      shared_.reset();
      own_.assign(table->begin(), table->end());
    }
  }
  void resize(std::size_t n) { own().resize(n, nullptr); }
  template <typename It>
  void assign(It first, It last) {
    own_.assign(first, last);  // (before the reset: the range may be the shared table's)
    shared_.reset();
  }
  void assign(std::initializer_list<Instance*> values) { assign(values.begin(), values.end()); }

 private:
  InlineVector<Instance*, kInline>& own() {
    if (shared_) {
      own_.assign(shared_->begin(), shared_->end());
      shared_.reset();
    }
    return own_;
  }

  InlineVector<Instance*, kInline> own_;
  std::shared_ptr<const Table> shared_;
};

}  // namespace reprise::detail
