#pragma once
// A steal tree (Lifflander et al., PLDI'13 §4–7): the working phases of one fork-join region.
// A working phase is one worker's run of one job — the region's root, or a job it stole or was
// handed — minus what others took from it. A phase names its victim (worker and phase) and
// where in the victim's phase its job sat: the path of steps from that phase's root task down
// to the job (a task's step counts the children it spawned before). Thieves write their own
// phases (no synchronisation); the victims' side is rebuilt from them as one trie per phase,
// which replay and retentive stealing walk while the victim spawns.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reprise/fork_join.h"

namespace reprise::detail {

struct StealPhase {
  std::int32_t victim = -1;         // the worker the job came from (-1: the region's root)
  std::uint32_t victim_phase = 0;   // which of the victim's phases
  bool continuation = false;        // a work-first continuation (else a child task)
  bool delivered = false;           // handed over by a retained schedule (else stolen)
  std::vector<std::uint32_t> path;  // steps from the victim phase's root to the job
  std::string path_text() const;    // "1.0.3", as in the text format
};

// The jobs taken from one phase, as a trie of their paths.
struct StealTrie {
  struct Entry {
    std::uint32_t step = 0;
    std::int32_t thief = -1;  // the job at this step went to (thief, thief_phase)
    std::uint32_t thief_phase = 0;
    std::unique_ptr<StealTrie> below;  // jobs taken further down this child's subtree
  };
  std::vector<Entry> entries;  // by step
  const Entry* find(std::uint32_t step) const;
  Entry& at(std::uint32_t step);
  std::size_t size() const;  // entries, all levels
};

struct StealTree {
  int threads = 0;
  StealPolicy policy = StealPolicy::WorkFirst;
  std::vector<std::vector<StealPhase>> phases;  // per worker, in the order they began
  // Whether the workers finished close together (recorded runs only; a parsed tree is taken
  // as balanced): a retentive run does not start from an unbalanced tree.
  bool balanced = true;
  std::vector<std::vector<StealTrie>> tries;  // per worker and phase, from index()

  // Builds the tries from the phases. Throws Error if a phase names a victim phase that is
  // not there or two jobs at one place (a corrupt file).
  void index();
  // The trie of a worker's phase (null if there is none: the schedule came from more threads).
  const StealTrie* trie(std::int32_t worker, std::uint32_t phase) const;
  std::size_t num_phases() const;
  std::uint64_t steals() const;
  std::uint64_t deliveries() const;
  // Encoded size: per phase its victim and victim phase (8 bytes), per trie entry its step
  // and where the job went or how many entries lie below (8 bytes). index() first.
  std::size_t bytes() const;

  // Text: a header line, then one line per phase, worker by worker (docs/forkjoin.md).
  std::string text(std::string_view label = {}) const;
  // Parses text() output; `label` gets the region's label. Throws Error naming the line.
  static StealTree parse_region(const std::vector<std::string>& lines, std::string& label);
};

// Every region in a -lg:steal_trace file, with its label.
struct StealTraceFile {
  struct Region {
    std::string label;
    StealTree tree;
  };
  std::vector<Region> regions;
  static StealTraceFile read(const std::string& path);
};

}  // namespace reprise::detail
