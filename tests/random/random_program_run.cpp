// Running a program on the runtime (with a watchdog against hangs) and combining ranks.
#include <map>
#include <sstream>
#include <string>

#include "random_program_core.h"

namespace reprise_random {

// ---- the runtime executor

namespace {

class HarnessFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Aborts the process when a run does not finish in time (a hang).
class Watchdog {
 public:
  Watchdog(double seconds, std::string what)
      : what_(std::move(what)), thread_([this, seconds] {
          std::unique_lock<std::mutex> lock(m_);
          if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                            [this] { return done_; })) {
            std::fprintf(stderr, "\nrandom_programs: TIMEOUT (%.0f s, presumably a hang): %s\n",
                         seconds, what_.c_str());
            std::fflush(stderr);
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

template <class F>
void with_list(const std::vector<FieldID>& v, F&& f) {
  switch (v.size()) {
    case 1:
      f({v[0]});
      break;
    case 2:
      f({v[0], v[1]});
      break;
    case 3:
      f({v[0], v[1], v[2]});
      break;
    case 4:
      f({v[0], v[1], v[2], v[3]});
      break;
    default:
      throw std::logic_error("with_list: 1..4 fields");
  }
}

std::uint64_t future_value(const Future& f, ValueType t) {
  switch (t) {
    case ValueType::U64:
      return f.get<std::uint64_t>();
    case ValueType::I64:
      return std::uint64_t(f.get<std::int64_t>());
    case ValueType::None:
      f.wait();
      return 0;
  }
  return 0;
}

TaskID task_id(ValueType t) {
  switch (t) {
    case ValueType::None:
      return kTaskVoid;
    case ValueType::U64:
      return kTaskU64;
    case ValueType::I64:
      return kTaskI64;
  }
  return kTaskVoid;
}

class RuntimeExec {
 public:
  RuntimeExec(const Program& p, Context& ctx, Outcome& out, bool manual_traces, bool keep_launchers)
      : manual_traces_(manual_traces),
        keep_launchers_(keep_launchers),
        p_(p),
        ctx_(ctx),
        out_(out),
        parts_(p.parts.size()),
        futures_(p.future_types.size()),
        maps_(p.map_types.size()) {}

  void run() {
    for (const auto& r : p_.regions) {
      std::vector<FieldDef> defs;
      for (const auto& f : r.fields) defs.push_back(FieldDef{f.id, sizeof(std::uint64_t)});
      roots_.push_back(
          ctx_.create_region(ctx_.create_index_space(r.bounds), ctx_.create_field_space(defs)));
    }
    std::uint64_t host = initial_host_mix(p_);
    for (std::size_t i = 0; i < p_.ops.size(); ++i) {
      const OpSpec& op = p_.ops[i];
      switch (op.kind) {
        case OpKind::CreatePartition:
          create_partition(op.part);
          break;
        case OpKind::Task:
          futures_[std::size_t(op.result)] =
              execute_launch(kept_tasks_, op, reprise::TaskArgs(body_args(p_, op, host, out_, i)),
                             [&](reprise::TaskArgs args) {
                               reprise::TaskLauncher l(task_id(op.ret), std::move(args));
                               for (const auto& q : op.reqs) {
                                 Region r = region(q.region);
                                 auto fids = field_ids(q.region.tree, q.fields);
                                 if (q.priv == Privilege::Reduce)
                                   with_list(fids, [&](std::initializer_list<FieldID> il) {
                                     l.add_reduction(r, q.redop, il);
                                   });
                                 else
                                   l.add(r, q.priv, fids);
                               }
                               for (int f : op.futures) l.add_future(futures_[std::size_t(f)]);
                               return l;
                             });
          break;
        case OpKind::IndexTask:
          maps_[std::size_t(op.result)] = execute_launch(
              kept_, op, reprise::TaskArgs(body_args(p_, op, host, out_, i)),
              [&](reprise::TaskArgs args) {
                reprise::IndexLauncher l(task_id(op.ret), op.launch, std::move(args));
                for (const auto& q : op.reqs) {
                  auto fids = field_ids(tree_of(p_, q), q.fields);
                  if (q.part >= 0) {
                    const Partition& part = parts_[std::size_t(q.part)];
                    if (q.priv == Privilege::Reduce)
                      with_list(fids, [&](std::initializer_list<FieldID> il) {
                        l.add_reduction(part, q.proj.make(), q.redop, il);
                      });
                    else
                      l.add(part, q.proj.make(), q.priv, fids);
                  } else {
                    Region r = region(q.region);
                    if (q.priv == Privilege::Reduce)
                      with_list(fids, [&](std::initializer_list<FieldID> il) {
                        l.add_reduction(r, q.redop, il);
                      });
                    else
                      with_list(fids,
                                [&](std::initializer_list<FieldID> il) { l.add(r, q.priv, il); });
                  }
                }
                for (int f : op.futures) l.add_future(futures_[std::size_t(f)]);
                return l;
              });
          break;
        case OpKind::Fill: {
          reprise::FillLauncher fl = reprise::FillLauncher::of(region(op.dst), {}, op.value);
          fl.fields = field_ids(op.dst.tree, op.dst_fields);
          ctx_.fill(fl);
          break;
        }
        case OpKind::Copy:
          ctx_.copy(reprise::CopyLauncher{region(op.src), field_ids(op.src.tree, op.src_fields),
                                          region(op.dst), field_ids(op.dst.tree, op.dst_fields)});
          break;
        case OpKind::ReduceFutures:
          futures_[std::size_t(op.result)] = ctx_.reduce(maps_[std::size_t(op.source)], op.redop);
          break;
        case OpKind::PointFuture:
          futures_[std::size_t(op.result)] = maps_[std::size_t(op.source)].get(op.point);
          break;
        case OpKind::GetFuture: {
          const std::uint64_t v = future_value(futures_[std::size_t(op.source)],
                                               p_.future_types[std::size_t(op.source)]);
          out_.gets.push_back(v);
          host = mix(host, v);
          break;
        }
        case OpKind::Fence: {
          Future f = ctx_.fence();
          if (op.wait) f.wait();
          break;
        }
        case OpKind::BeginTrace:
          if (manual_traces_) ctx_.begin_trace(reprise::TraceID(op.trace));
          break;
        case OpKind::EndTrace:
          if (manual_traces_) ctx_.end_trace(reprise::TraceID(op.trace));
          break;
      }
    }
    // Read every region back, then every future.
    std::vector<Future> done;
    for (std::size_t t = 0; t < p_.regions.size(); ++t) {
      const RegionSpec& rs = p_.regions[t];
      ReadbackArgs a;
      a.nfields = int(rs.fields.size());
      a.dim = rs.bounds.dim;
      std::vector<FieldID> fids;
      for (int k = 0; k < a.nfields; ++k) {
        a.dst[k] = out_.data[t][std::size_t(k)].data();
        a.fid[k] = rs.fields[std::size_t(k)].id;
        fids.push_back(a.fid[k]);
      }
      reprise::TaskLauncher l(kTaskReadback, reprise::TaskArgs(a));
      l.add(roots_[t], Privilege::ReadOnly, fids);
      done.push_back(ctx_.execute(l));
    }
    for (auto& f : done) f.wait();
    for (std::size_t i = 0; i < futures_.size(); ++i)
      if (futures_[i].valid()) out_.futures[i] = future_value(futures_[i], p_.future_types[i]);
    const auto st = ctx_.trace_stats();
    out_.templates = st.templates_recorded;
    out_.replays = st.replays;
    out_.copies = st.copies;
    out_.recorded_far = st.points_recorded_far;
    out_.recorded_deferred = st.points_recorded_deferred;
    out_.points_launched = st.points_launched;
    out_.points_inline = st.points_inline;
    out_.points_inline_alone = st.points_inline_alone;
    for (std::size_t i = 0; i < maps_.size(); ++i) {
      if (!maps_[i].valid()) continue;
      const Domain& d = p_.map_domains[i];
      auto& v = out_.maps[i];
      v.assign(std::size_t(d.volume()), 0);
      if (p_.map_types[i] == ValueType::None) {
        maps_[i].wait();
        continue;
      }
      for (coord_t k = 0; k < d.volume(); ++k)
        v[std::size_t(k)] = future_value(maps_[i].get(d.delinearize(k)), p_.map_types[i]);
    }
  }

 private:
  std::vector<FieldID> field_ids(int tree, const std::vector<int>& fields) const {
    std::vector<FieldID> v;
    for (int f : fields) v.push_back(p_.regions[std::size_t(tree)].fields[std::size_t(f)].id);
    return v;
  }

  Region region(const RegionRef& r) {
    if (r.part < 0) return roots_[std::size_t(r.tree)];
    const Partition& part = parts_[std::size_t(r.part)];
    // Both ways of naming a subregion.
    return (r.color.x[0] & 1) ? ctx_.subregion(part, r.color) : part[r.color];
  }

  void create_partition(int i) {
    const PartSpec& ps = p_.parts[std::size_t(i)];
    Region parent = region(ps.parent);
    Partition part;
    switch (ps.kind) {
      case PartKind::Equal:
        part = ctx_.partition_equal(parent, ctx_.create_index_space(ps.colors));
        break;
      case PartKind::Blocks:
        part = ctx_.partition_by_blocks(parent, ps.block);
        break;
      case PartKind::Rects:
        if (ps.use_callback) {
          part = ctx_.partition_by_rects(
              parent, ctx_.create_index_space(ps.colors),
              [&](const DomainPoint& c) { return ps.rects[std::size_t(ps.colors.linearize(c))]; });
        } else {
          part = ctx_.partition_by_rects(parent, ctx_.create_index_space(ps.colors), ps.rects);
        }
        break;
      case PartKind::Translate:
        part = ctx_.partition_by_translation(parts_[std::size_t(ps.base)], ps.offset);
        break;
    }
    parts_[std::size_t(i)] = part;
    // The runtime's view of the partition must be the generator's.
    auto fail = [&](const std::string& what) {
      throw HarnessFailure("partition p" + std::to_string(i) + ": " + what);
    };
    if (!(part.color_space() == ps.colors))
      fail("color space " + part.color_space().str() + ", expected " + ps.colors.str());
    if (!(part.parent() == parent)) fail("parent() is not the region it was made from");
    for (coord_t c = 0; c < ps.colors.volume(); ++c) {
      const DomainPoint col = ps.colors.delinearize(c);
      const Domain got = part.rect(col), want = ps.pieces[std::size_t(c)];
      if (!(got == want))
        fail("piece " + col.str() + " is " + got.str() + ", expected " + want.str());
      if (!(part[col].bounds() == want))
        fail("subregion " + col.str() + " has bounds " + part[col].bounds().str());
    }
    if (part.disjoint() != ps.disjoint)
      fail(std::string("disjoint() is ") + (part.disjoint() ? "true" : "false") + ", expected " +
           (ps.disjoint ? "true" : "false"));
    if (part.complete() && !ps.complete) fail("complete() is true but the pieces leave points out");
  }

  // Executes the launcher `make` builds with `args`. --keep-launchers: launches alike but for
  // their arguments (a loop's iterations) share one launcher, as an application's would, and
  // with it the runtime's kept resolution (not launches with futures: those differ).
  template <class Launcher, class Make>
  auto execute_launch(std::map<std::string, Launcher>& kept, const OpSpec& op,
                      reprise::TaskArgs args, Make&& make)
      -> decltype(std::declval<Context&>().execute(std::declval<const Launcher&>())) {
    if (!keep_launchers_ || !op.futures.empty()) return ctx_.execute(make(std::move(args)));
    std::string key = launch_key(op);
    auto it = kept.find(key);
    if (it == kept.end())
      it = kept.emplace(std::move(key), make(std::move(args))).first;
    else
      it->second.set_args(std::move(args));
    return ctx_.execute(it->second);
  }

  // What makes two launches alike: everything but their arguments.
  static std::string launch_key(const OpSpec& op) {
    std::ostringstream k;
    k << int(op.kind) << '|' << int(op.ret) << '|' << op.launch.str();
    for (const ReqSpec& q : op.reqs) {
      k << '|' << q.part << ',' << q.region.tree << ',' << q.region.part << ','
        << q.region.color.str() << ',' << int(q.proj.kind) << ',' << q.proj.dim_out << ','
        << q.proj.dim_in << ',' << q.proj.offset.str();
      for (const auto& row : q.proj.m)
        for (coord_t v : row) k << ',' << v;
      k << ',' << int(q.priv) << ',' << int(q.redop);
      for (int f : q.fields) k << ',' << f;
    }
    return k.str();
  }

  bool manual_traces_;
  bool keep_launchers_;
  std::map<std::string, reprise::IndexLauncher> kept_;
  std::map<std::string, reprise::TaskLauncher> kept_tasks_;
  const Program& p_;
  Context& ctx_;
  Outcome& out_;
  std::vector<Region> roots_;
  std::vector<Partition> parts_;
  std::vector<Future> futures_;
  std::vector<FutureMap> maps_;
};

}  // namespace

void register_tasks() {
  static std::once_flag once;
  std::call_once(once, [] {
    reprise::TaskRegistry::add(kTaskVoid, "random_void", {reprise::cpu(task_void)});
    reprise::TaskRegistry::add(kTaskU64, "random_u64", {reprise::cpu(task_u64)});
    reprise::TaskRegistry::add(kTaskI64, "random_i64", {reprise::cpu(task_i64)});
    reprise::TaskRegistry::add(kTaskReadback, "random_readback", {reprise::cpu(task_readback)});
  });
}

void combine_across_ranks(Outcome& out);

namespace {
// See MapperKind::Scatter. Deterministic in the op stream, so every shard maps alike. For
// odd seeds the placement also changes with the op's number (every iteration of a loop runs
// elsewhere); for even seeds an op maps alike in every iteration (its trace can replay).
class ScatterMapper final : public reprise::Mapper {
 public:
  explicit ScatterMapper(std::uint64_t seed) : seed_(seed), moving_((seed & 1) != 0) {}
  reprise::Processor select_processor(const reprise::MapperTaskInfo& t,
                                      const reprise::MachineInfo& m) override {
    const std::uint64_t h = mix(op_key(t), t.point_index);
    return reprise::Processor{reprise::ProcessorKind::CPU, std::uint32_t((h >> 24) % m.num_cpus),
                              std::uint32_t(h % m.num_shards)};
  }
  reprise::MemoryID select_memory(const reprise::MapperTaskInfo& t, reprise::Processor proc,
                                  std::size_t req, const reprise::MachineInfo& m) override {
    const std::uint64_t h = mix(mix(op_key(t) ^ 0x5ca7, t.point_index), req);
    return reprise::MemoryID(proc.shard * m.num_sysmems + (h >> 16) % m.num_sysmems);
  }

 private:
  std::uint64_t op_key(const reprise::MapperTaskInfo& t) const {
    std::uint64_t h = mix(seed_, t.task);
    const Domain& d = t.launch_domain;
    for (int i = 0; i < d.dim; ++i) h = mix(mix(h, std::uint64_t(d.lo[i])), std::uint64_t(d.hi[i]));
    return moving_ ? mix(h, t.op_seq) : h;
  }
  std::uint64_t seed_;
  bool moving_;
};
}  // namespace

Outcome run_runtime(const Program& p, const std::vector<std::string>& flags, double timeout_s) {
  RunOptions o;
  o.timeout_s = timeout_s;
  return run_runtime(p, flags, o);
}

Outcome run_runtime(const Program& p, const std::vector<std::string>& flags,
                    const RunOptions& options) {
  register_tasks();
  Outcome out;
  init_outcome(p, out);
  Watchdog dog(options.timeout_s, "seed " + std::to_string(p.seed) + " with flags '" +
                                      join_flags(flags) + "'\n" + dump(p));
  std::unique_ptr<reprise::Mapper> mapper;
  if (options.mapper == MapperKind::Scatter) mapper = std::make_unique<ScatterMapper>(p.seed);
  try {
    reprise::run(
        flags,
        [&](Context& ctx) {
          RuntimeExec(p, ctx, out, options.manual_traces, options.keep_launchers).run();
        },
        std::move(mapper));
  } catch (const reprise::Error& e) {
    // A deliberate failure is reported as it was thrown (under control replication with the
    // shard that ran it in front): compare() looks for the reference model's text.
    const std::string what = e.what();
    const auto at = what.find("deliberate failure of op #");
    out.error = at != std::string::npos ? what.substr(at) : "reprise::Error: " + what;
  } catch (const std::exception& e) {
    out.error = std::string("exception: ") + e.what();
  }
  combine_across_ranks(out);
  return out;
}

// Under control replication (mpirun) each rank ran only its own points, so what the task
// bodies wrote into host memory (what each point read, the final contents read back) is
// spread over the ranks, each element on exactly one and zero elsewhere: OR them together.
// Future values are replicated by the runtime already.
void combine_across_ranks(Outcome& out) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return;
  auto combine = [](std::vector<std::uint64_t>& v) {
    if (!v.empty())
      MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD);
  };
  for (auto& region : out.data)
    for (auto& field : region) combine(field);
  for (auto& op : out.observed) combine(op);
}

}  // namespace reprise_random
