#pragma once
// Watching the runtime work (Taskflow's ObserverInterface is the model): an Observer is told
// of every interval the runtime does something — a task point, a fill or copy (or the send or
// receive half of a copy between shards) on a worker, the analysis of an op, a replay or the
// recording of a trace on the utility thread, a wait of the application thread, a message
// between shards — once it has ended, on the thread that did it. -lg:prof writes the same
// intervals to a file; an observer gets them as they happen.
//
//   struct Count : reprise::Observer {
//     std::atomic<int> tasks{0};
//     void on_activity(const reprise::Activity& a) override {
//       if (a.kind == reprise::ActivityKind::Task) ++tasks;
//     }
//   };
//   auto count = std::make_shared<Count>();
//   reprise::Observers::add(count);  // for the runtimes started from now on
//
// on_activity runs on the runtime's threads (workers, the utility thread, the MPI progress
// thread, the application thread): keep it short and thread-safe. The text `task` and
// `channel` point to is valid during the call only (a task's name lives with the runtime that
// ran it): copy what you keep. With no observer and no
// -lg:prof, each place that would record costs one branch.
#include <cstdint>
#include <memory>

#include "reprise/geometry.h"

namespace reprise {

enum class ActivityKind : std::uint8_t {
  Task,       // a point of a task launch
  Fill,       // a fill (one point)
  Copy,       // a copy (a program copy or one the analysis generated)
  Send,       // the source half of a copy between shards (packing the data)
  Receive,    // the destination half (unpacking it)
  Analysis,   // the utility thread's analysis of one op
  Replay,     // the utility thread's replay of a trace (bytes: its ops)
  Wait,       // the application thread waiting (a future, a fence, the end of the program)
  Recording,  // the analysis of a trace's ops while its template is recorded (bytes: ops)
  Message,    // a message between shards: sent (an instant) or handled on arrival
  Range,      // a range the program named (Context::stop_profiling_range; task: its name)
};
const char* to_string(ActivityKind k);

struct Activity {
  ActivityKind kind = ActivityKind::Task;
  std::uint32_t shard = 0;
  std::uint64_t begin_ns = 0, end_ns = 0;  // the runtime's monotonic clock, in nanoseconds
  std::uint64_t op = 0;                    // the op's number (work and analysis)
  const char* task = "";                   // the task's registered name, else ""
  DomainPoint point;                       // tasks: the point
  std::uint32_t trace = 0;                 // the trace the op was recorded or replayed in (0: none)
  bool replayed = false;                   // the op was replayed (no analysis)
  std::uint64_t bytes = 0;  // copies, halves and messages: bytes; replays, recordings: ops
  // Messages:
  bool incoming = false;     // handled on arrival (else: sent)
  std::uint32_t peer = 0;    // the other shard
  const char* channel = "";  // what the message carried ("done", "data", "request", ...)
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_activity(const Activity& a) = 0;
};

// The observers of every runtime started from now on (each runtime takes the list when it
// starts, as it takes the task registry).
class Observers {
 public:
  static void add(std::shared_ptr<Observer> observer);
  static void clear();
};

}  // namespace reprise
