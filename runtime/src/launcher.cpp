#include "reprise/launcher.h"

namespace reprise {

namespace {
// Launches rarely have more than four requirements: no regrowth (and copies) while adding.
void reserve_for(std::vector<RegionRequirement>& reqs) {
  if (reqs.empty()) reqs.reserve(4);
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
}  // namespace

TaskLauncher& TaskLauncher::add(Region r, Privilege p, std::initializer_list<FieldID> fields) {
  return add(r, p, std::vector<FieldID>(fields));
}
TaskLauncher& TaskLauncher::add(Region r, Privilege p, std::vector<FieldID> fields) {
  reserve_for(reqs_);
  reqs_.push_back(region_req(r, p, ReductionOp::None, std::move(fields)));
  return *this;
}
TaskLauncher& TaskLauncher::add_reduction(Region r, ReductionOp op,
                                          std::initializer_list<FieldID> fields) {
  reserve_for(reqs_);
  reqs_.push_back(region_req(r, Privilege::Reduce, op, fields));
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
  reserve_for(reqs_);
  reqs_.push_back(partition_req(p, proj, priv, ReductionOp::None, std::move(fields)));
  return *this;
}
IndexLauncher& IndexLauncher::add(Region r, Privilege priv, std::initializer_list<FieldID> fields) {
  reserve_for(reqs_);
  reqs_.push_back(region_req(r, priv, ReductionOp::None, fields));
  return *this;
}
IndexLauncher& IndexLauncher::add_reduction(const Partition& p, const Projection& proj,
                                            ReductionOp op, std::initializer_list<FieldID> fields) {
  reserve_for(reqs_);
  reqs_.push_back(partition_req(p, proj, Privilege::Reduce, op, fields));
  return *this;
}
IndexLauncher& IndexLauncher::add_reduction(Region r, ReductionOp op,
                                            std::initializer_list<FieldID> fields) {
  reserve_for(reqs_);
  reqs_.push_back(region_req(r, Privilege::Reduce, op, fields));
  return *this;
}
IndexLauncher& IndexLauncher::add_future(Future f) {
  futures_.push_back(std::move(f));
  return *this;
}

}  // namespace reprise
