#include "reprise/launcher.h"

#include <unordered_map>
#include <utility>

namespace reprise {

namespace {
// Appends a requirement: what a launch made of the list before (ResolvedLaunch) no longer
// holds. (Launches rarely have more than four requirements: no regrowth while adding.)
void append(std::vector<RegionRequirement>& reqs, detail::KeptLaunches& kept, RegionRequirement r) {
  kept.reset();
  if (reqs.empty()) reqs.reserve(4);
  reqs.push_back(std::move(r));
}
RegionRequirement region_req(Region r, Privilege p, ReductionOp op, std::vector<FieldID> f) {
  RegionRequirement q;
  q.region = r;
  q.privilege = p;
  q.redop = op;
  q.fields = std::move(f);
  return q;
}
RegionRequirement partition_req(const Partition& part, const Projection& proj, Privilege p,
                                ReductionOp op, std::vector<FieldID> f) {
  RegionRequirement q;
  q.partition = part;
  q.projection = proj;
  q.privilege = p;
  q.redop = op;
  q.fields = std::move(f);
  return q;
}
struct PointHash {
  std::size_t operator()(const DomainPoint& p) const {
    std::size_t h = std::size_t(p.dim);
    for (int i = 0; i < p.dim; ++i)
      h = h * 0x9e3779b97f4a7c15ull + std::size_t(p.x[std::size_t(i)]);
    return h;
  }
};
}  // namespace

struct ArgumentMap::Data {
  std::unordered_map<DomainPoint, std::vector<std::byte>, PointHash> values;
};

ArgumentMap& ArgumentMap::set_point(const DomainPoint& p, const TaskArgs& value) {
  // A launch made with this map shares its data: give this map a copy of its own first.
  // (Another owner may drop its share concurrently; a copy made then is merely unneeded.)
  if (!data_)
    data_ = std::make_shared<Data>();
  else if (data_.use_count() > 1)
    data_ = std::make_shared<Data>(*data_);
  data_->values[p].assign(value.data(), value.data() + value.size());
  return *this;
}

bool ArgumentMap::has_point(const DomainPoint& p) const {
  return data_ && data_->values.count(p) > 0;
}

std::span<const std::byte> ArgumentMap::bytes(const DomainPoint& p) const {
  if (!data_) return {};
  auto it = data_->values.find(p);
  if (it == data_->values.end()) return {};
  return it->second;
}

std::size_t ArgumentMap::size() const {
  return data_ ? data_->values.size() : 0;
}

TaskLauncher& TaskLauncher::add(Region r, Privilege p, std::initializer_list<FieldID> fields) {
  return add(r, p, std::vector<FieldID>(fields));
}
TaskLauncher& TaskLauncher::add(Region r, Privilege p, std::vector<FieldID> fields) {
  append(reqs_, kept_, region_req(r, p, ReductionOp::None, std::move(fields)));
  return *this;
}
TaskLauncher& TaskLauncher::add_reduction(Region r, ReductionOp op,
                                          std::initializer_list<FieldID> fields) {
  append(reqs_, kept_, region_req(r, Privilege::Reduce, op, fields));
  return *this;
}
TaskLauncher& TaskLauncher::add_future(Future f) {
  futures_.push_back(std::move(f));
  return *this;
}

IndexLauncher& IndexLauncher::add(const Partition& p, const Projection& proj, Privilege priv,
                                  std::initializer_list<FieldID> fields) {
  return add(p, proj, priv, std::vector<FieldID>(fields));
}
IndexLauncher& IndexLauncher::add(const Partition& p, const Projection& proj, Privilege priv,
                                  std::vector<FieldID> fields) {
  append(reqs_, kept_, partition_req(p, proj, priv, ReductionOp::None, std::move(fields)));
  return *this;
}
IndexLauncher& IndexLauncher::add(Region r, Privilege priv, std::initializer_list<FieldID> fields) {
  append(reqs_, kept_, region_req(r, priv, ReductionOp::None, fields));
  return *this;
}
IndexLauncher& IndexLauncher::add_reduction(const Partition& p, const Projection& proj,
                                            ReductionOp op, std::initializer_list<FieldID> fields) {
  append(reqs_, kept_, partition_req(p, proj, Privilege::Reduce, op, fields));
  return *this;
}
IndexLauncher& IndexLauncher::add_reduction(Region r, ReductionOp op,
                                            std::initializer_list<FieldID> fields) {
  append(reqs_, kept_, region_req(r, Privilege::Reduce, op, fields));
  return *this;
}
IndexLauncher& IndexLauncher::add_future(Future f) {
  futures_.push_back(std::move(f));
  return *this;
}

}  // namespace reprise
