#pragma once
// The analysis stage of the pipeline: logical dependence analysis, mapping, the physical
// instance choice (one system memory for now) and emission of the graph calculus.
#include <memory>
#include <vector>

#include "reprise_analysis/logical.h"
#include "reprise_rt/graph.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

class Analysis final : public OpSink {
 public:
  explicit Analysis(Runtime& rt);
  void submit(const OpRef& op) override;
  void idle() override;

  // Routes emission through g (the memoizer's recorder) until reset with nullptr.
  void set_graph(GraphSink* g) {
    graph_ = g;
    logical_.set_prune_completed(g == nullptr);
  }
  const LogicalAnalysis& logical() const { return logical_; }
  const RegionForest& forest() const { return rt_.forest(); }

  // For the memoizer, which replays ops without analysing them:
  // an event that triggers once every op analysed or replayed so far has completed;
  Event full_fence();
  // that a replayed op's completion is part of what the next fence waits for;
  void remember_done(Event e);
  // the summary of replayed ops: a user of each tree and field they touched;
  void record_summary(const OpRef& summary);
  // the instance an op of `tree` gets (what a template recorded must still be it).
  Instance* instance_for(std::uint32_t tree);

 private:
  void analyse_points(const OpRef& op);
  void reduce_futures(const OpRef& op);
  void fence(const OpRef& op);
  void destroy_region(const OpRef& op);
  // The memoizer's recorder when set, else the runtime's executor.
  GraphSink& graph() { return graph_ ? *graph_ : rt_.graph(); }

  Runtime& rt_;
  GraphSink* graph_ = nullptr;
  LogicalAnalysis logical_;
  PointPreconditions pre_;
  std::vector<Processor> procs_;
  std::vector<Instance*> instance_cache_;  // by tree
  std::vector<Event> since_fence_;         // completion of every op since the last fence
  std::size_t compact_at_ = 64;
  Event fence_event_;  // the last fence's completion
};

}  // namespace reprise::detail
