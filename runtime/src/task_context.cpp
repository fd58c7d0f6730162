#include "reprise/task_context.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "reprise_rt/bounding_box.h"
#include "reprise_rt/device.h"
#include "reprise_rt/executor.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/point_task.h"
#include "reprise_rt/runtime.h"

namespace reprise {

using detail::ReqInfo;

namespace {
// A point's accessor error: "op #N (...), point P: what". Out of line and cold, so that the
// checks on the way to every accessor stay a compare and a branch each.
template <typename... Args>
[[noreturn, gnu::cold, gnu::noinline]] void fail(const detail::PointTask& t,
                                                 fmt::format_string<Args...> what, Args&&... args) {
  throw Error(fmt::format("{}, point {}: {}", t.op->describe(), t.point.str(),
                          fmt::format(what, std::forward<Args>(args)...)));
}

// The op requirements of the program's requirement `req` (several for a sparse region).
// (One look at the payload: this is on the way to every accessor.)
inline std::pair<std::size_t, std::size_t> op_reqs(const detail::PointTask& t, int req) {
  const detail::Op& op = *t.op;
  const auto* payload = std::get_if<detail::TaskPayload>(&op.payload);
  if (payload && !payload->req_begin.empty()) [[unlikely]] {
    if (req < 0 || std::size_t(req) + 1 >= payload->req_begin.size())
      fail(t, "requirement {} does not exist (the task has {})", req, op.num_program_reqs());
    return {payload->req_begin[std::size_t(req)], payload->req_begin[std::size_t(req) + 1]};
  }
  if (req < 0 || std::size_t(req) >= op.reqs.size())
    fail(t, "requirement {} does not exist (the task has {})", req, op.reqs.size());
  return {std::size_t(req), std::size_t(req) + 1};
}

// The first of them: privilege, fields and instance are the same for all.
const ReqInfo& requirement(const detail::PointTask& t, int req) {
  return t.op->reqs[op_reqs(t, req).first];
}

// The bounds of requirement `req` for this point: for a sparse region, the bounding box of its
// rectangles (one op requirement each).
Domain bounds_of(const detail::PointTask& t, int req) {
  const auto [first, last] = op_reqs(t, req);
  Domain box = t.op->rect(t.point_index, first);
  for (std::size_t r = first + 1; r < last; ++r) detail::grow(box, t.op->rect(t.point_index, r));
  return box;
}

inline int field_position(const detail::PointTask& t, const ReqInfo& r, int req, FieldID fid) {
  for (std::size_t i = 0; i < r.fields.size(); ++i)
    if (r.fields[i] == fid) return r.field_indices[i];
  fail(t, "requirement {} does not name field {}", req, fid);
}

// The checked view of field `fi` of requirement `req` for this point; `what` names the accessor
// kind in messages. (`range`: the op requirements of `req`, which the caller has already. In
// place, and built whole: every task makes its accessors through here.)
inline detail::RawAccess field_view(const detail::PointTask& t, int req,
                                    std::pair<std::size_t, std::size_t> range, int fi, FieldID fid,
                                    std::size_t elem_size, int dim, const char* what) {
  const detail::Op& op = *t.op;
  const detail::Instance* inst = op.point_instances[t.point_index * op.reqs.size() + range.first];
  if (inst->field_size(fi) != elem_size)
    fail(t, "field {} has {} bytes, the {}'s type has {}", fid, inst->field_size(fi), what,
         elem_size);
  const detail::Runtime* rt = detail::Runtime::current();
  detail::RawAccess a =
      inst->view(fi, op.rect(t.point_index, range.first), rt && rt->config().bounds_checks,
                 detail::AccessSite{&t, req, fid});
  for (std::size_t r = range.first + 1; r < range.second; ++r)
    detail::grow(a.bounds, op.rect(t.point_index, r));
  if (a.bounds.dim != dim)
    fail(t, "requirement {} is {}-d, the {} is {}-d", req, a.bounds.dim, what, dim);
  return a;
}
}  // namespace

// Why an accessor cannot be made: the checks again, in full, with their messages (out of line,
// so that the way to every accessor keeps only the tests).
[[noreturn, gnu::cold, gnu::noinline]] void accessor_refused(const detail::PointTask& t, int req,
                                                             FieldID fid, std::size_t elem_size,
                                                             bool read_only, int dim) {
  const auto range = op_reqs(t, req);
  const ReqInfo& r = t.op->reqs[range.first];
  const int fi = field_position(t, r, req, fid);
  if (!read_only && r.privilege == Privilege::ReadOnly)
    fail(t, "requirement {} is READ_ONLY; ask for a read accessor (accessor<const T, N>)", req);
  if (r.privilege == Privilege::Reduce) fail(t, "requirement {} is REDUCE; use reducer<T, N>", req);
  field_view(t, req, range, fi, fid, elem_size, dim, "accessor");
  throw Error(fmt::format("internal: {}, point {}: accessor of requirement {} refused",
                          t.op->describe(), t.point.str(), req));
}

detail::RawAccess TaskContext::raw(int req, FieldID fid, std::size_t elem_size, bool read_only,
                                   int dim) const {
  // Every task makes its accessors here: the usual case — one op requirement, the field named,
  // the privilege allowing the access, sizes and dimensions agreeing — is one pass of tests,
  // any of which failing sends it to accessor_refused for the reason.
  const detail::Op& op = *t_.op;
  const auto [first, last] = op_reqs(t_, req);
  const ReqInfo& r = op.reqs[first];
  std::size_t i = 0;
  while (i < r.fields.size() && r.fields[i] != fid) ++i;
  if (i == r.fields.size() || (!read_only && r.privilege == Privilege::ReadOnly) ||
      r.privilege == Privilege::Reduce) [[unlikely]]
    accessor_refused(t_, req, fid, elem_size, read_only, dim);
  const int fi = r.field_indices[i];
  const std::size_t slot = std::size_t(t_.point_index) * op.reqs.size() + first;
  const detail::Instance& inst = *op.point_instances[slot];
  if (inst.field_size(fi) != elem_size) [[unlikely]]
    accessor_refused(t_, req, fid, elem_size, read_only, dim);
  detail::RawAccess a = inst.view(fi, op.rect(t_.point_index, first), t_.exec->bounds_checks(),
                                  detail::AccessSite{&t_, req, fid});
  for (std::size_t k = first + 1; k < last; ++k)
    [[unlikely]] detail::grow(a.bounds, op.rect(t_.point_index, k));
  if (a.bounds.dim != dim) [[unlikely]]
    accessor_refused(t_, req, fid, elem_size, read_only, dim);
  return a;
}

detail::RawAccess TaskContext::raw_inline(FieldID fid, std::size_t& elem_size) const {
  const ReqInfo& r = requirement(t_, 0);
  const int fi = field_position(t_, r, 0, fid);
  const detail::Instance* inst = t_.op->point_instances[t_.point_index * t_.op->reqs.size()];
  elem_size = inst->field_size(fi);
  detail::RawAccess a = inst->access(fi);
  a.bounds = bounds_of(t_, 0);
  a.site = detail::AccessSite{nullptr, 0, fid};  // (the mapping outlives this point)
  return a;
}

detail::Instance& TaskContext::instance_field(FieldID fid, int& field_index) const {
  const ReqInfo& r = requirement(t_, 0);
  field_index = field_position(t_, r, 0, fid);
  return *t_.op->point_instances[t_.point_index * t_.op->reqs.size()];
}

detail::RawAccess TaskContext::raw_reduce(int req, FieldID fid, std::size_t elem_size, int dim,
                                          detail::ScalarType type,
                                          std::vector<detail::RawAccess>& runs) const {
  const auto range = op_reqs(t_, req);
  const ReqInfo& r = t_.op->reqs[range.first];
  if (r.privilege != Privilege::Reduce)
    fail(t_, "requirement {} is {}, not REDUCE", req, to_string(r.privilege));
  const int fi = field_position(t_, r, req, fid);
  if (const detail::CustomReduction* custom = detail::custom_reduction(r.redop)) {
    if (custom->size != elem_size)
      fail(t_,
           "requirement {}: reduction operator '{}' folds values of {} bytes; reducer<T> asked "
           "for a type of {}",
           req, custom->name, custom->size, elem_size);
  } else if (type == detail::ScalarType::None) {
    fail(t_,
         "requirement {}: the built-in operator {} folds integers and floating-point values "
         "only (register an operator for other types: reprise/reduction.h)",
         req, to_string(r.redop));
  }
  detail::RawAccess a = field_view(t_, req, range, fi, fid, elem_size, dim, "reducer");
  // Each reduction instance starts at the operator's identity; the runtime folds it into the
  // region afterwards.
  auto begin = [&](std::size_t op_req) -> detail::Instance& {
    detail::Instance* inst = t_.op->point_instances[t_.point_index * t_.op->reqs.size() + op_req];
    if (!inst->is_reduction())
      throw Error(fmt::format("internal: {}, point {}: requirement {} has no reduction instance",
                              t_.op->describe(), t_.point.str(), req));
    if (!inst->begin_reduction(fi, type, r.redop))
      fail(t_, "field {} of requirement {} was asked for with another element type before", fid,
           req);
    return *inst;
  };
  const auto [first, last] = range;
  if (last - first == 1) {
    begin(first);
    return a;
  }
  // A sparse piece: one reduction instance per (non-empty) rectangle.
  for (std::size_t k = first; k < last; ++k) {
    const Domain rect = t_.op->rect(t_.point_index, k);
    if (rect.empty()) continue;
    detail::RawAccess run = begin(k).access(fi);
    run.bounds = rect;
    run.check = a.check;
    run.site = a.site;
    runs.push_back(run);
  }
  if (runs.size() == 1) {  // (checked all the same: a fold outside the piece is an error)
    a = runs.front();
    a.check = true;
    runs.clear();
  } else if (runs.empty()) {
    a.check = true;  // a piece without points: every fold is out of bounds
  }
  return a;
}

ReductionOp TaskContext::redop(int req) const {
  return requirement(t_, req).redop;
}

Domain TaskContext::domain(int req) const {
  return bounds_of(t_, req);
}

std::vector<Domain> TaskContext::rects(int req) const {
  const auto [first, last] = op_reqs(t_, req);
  std::vector<Domain> out;
  out.reserve(last - first);
  for (std::size_t r = first; r < last; ++r)
    if (Domain d = t_.op->rect(t_.point_index, r); !d.empty()) out.push_back(d);
  return out;
}

int TaskContext::num_requirements() const {
  return int(t_.op->num_program_reqs());
}
DomainPoint TaskContext::point() const {
  return t_.point;
}
Domain TaskContext::launch_domain() const {
  return t_.op->domain;
}
const char* TaskContext::task_name() const {
  return t_.op->task_info ? t_.op->task_info->name.c_str() : "?";
}

std::span<const std::byte> TaskContext::arg_bytes() const {
  return t_.op->task_payload().args;
}

void TaskContext::arg_size_mismatch(std::size_t asked) const {
  throw Error(fmt::format("{}, point {}: task arguments have {} bytes, asked for {}",
                          t_.op->describe(), t_.point.str(), t_.op->task_payload().args.size(),
                          asked));
}

std::span<const std::byte> TaskContext::local_arg_bytes() const {
  if (t_.op->kind != detail::OpKind::IndexTask) return {};
  return t_.op->task_payload().point_args.bytes(t_.point);
}

void TaskContext::local_arg_size_mismatch(std::size_t asked) const {
  const auto b = local_arg_bytes();
  if (b.empty())
    throw Error(
        fmt::format("{}, point {}: local_args: the launch's argument map has no value for "
                    "this point (asked for {} bytes)",
                    t_.op->describe(), t_.point.str(), asked));
  throw Error(fmt::format("{}, point {}: local arguments have {} bytes, asked for {}",
                          t_.op->describe(), t_.point.str(), b.size(), asked));
}

const Future& TaskContext::future_handle(int i) const {
  const auto fs = t_.op->futures();
  if (i < 0 || std::size_t(i) >= fs.size())
    throw Error(fmt::format("{}, point {}: future {} does not exist (the task has {})",
                            t_.op->describe(), t_.point.str(), i, fs.size()));
  return fs[std::size_t(i)];
}

bool TaskContext::on_gpu() const {
  return t_.exec->stream_of(t_.proc).valid();
}

bool TaskContext::gpu_is_cuda() const {
  const detail::Runtime* rt = detail::Runtime::current();
  return on_gpu() && rt && rt->device() && std::string_view(rt->device()->backend()) == "cuda";
}

void* TaskContext::stream() const {
  return t_.exec->stream_of(t_.proc).handle;
}

void TaskContext::launch_kernel(std::function<void()> kernel) const {
  const detail::DeviceStream s = t_.exec->stream_of(t_.proc);
  detail::Runtime* rt = detail::Runtime::current();
  if (!s.valid() || !rt || !rt->device()) {
    kernel();  // a CPU variant: the loop runs here
    return;
  }
  if (!rt->device()->host_addressable())
    throw Error(fmt::format(
        "{}: a host loop (kernel::for_each compiled without nvcc, or launch_kernel) cannot "
        "touch the framebuffers of the {} backend; compile the GPU variant's source with nvcc "
        "--extended-lambda",
        t_.op->describe(), rt->device()->backend()));
  rt->count_gpu_kernel();  // first: the point may complete as soon as the kernel is enqueued
  rt->device()->launch_host(s, std::move(kernel));
}

void TaskContext::count_kernel() const {
  if (detail::Runtime* rt = detail::Runtime::current(); rt && on_gpu()) rt->count_gpu_kernel();
}

namespace detail {
void throw_out_of_bounds(const AccessSite& site, const DomainPoint& p, const Domain& bounds) {
  if (!site.task)  // an inline mapping's accessor
    throw Error(
        fmt::format("inline mapping: accessor for field {}: point {} is outside the "
                    "region's bounds {}",
                    site.field, p.str(), bounds.str()));
  throw Error(
      fmt::format("{}, point {}: accessor for requirement {} field {}: point {} is "
                  "outside the requirement's bounds {}",
                  site.task->op->describe(), site.task->point.str(), site.requirement, site.field,
                  p.str(), bounds.str()));
}
}  // namespace detail

}  // namespace reprise
