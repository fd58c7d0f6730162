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

  void set_graph(GraphSink* g) { graph_ = g; }
  const LogicalAnalysis& logical() const { return logical_; }

 private:
  void analyse_points(const OpRef& op);
  void reduce_futures(const OpRef& op);
  void fence(const OpRef& op);
  void destroy_region(const OpRef& op);
  void remember_done(Event e);
  Instance* instance_for(std::uint32_t tree);
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
  Event fence_event_;                      // the last fence's completion
};

}  // namespace reprise::detail
