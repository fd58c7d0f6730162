#include "reprise/observer.h"

#include <mutex>
#include <vector>

#include "reprise_rt/profiler.h"

namespace reprise {

namespace detail {
namespace {
std::mutex& observers_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::shared_ptr<Observer>>& observer_list() {
  static std::vector<std::shared_ptr<Observer>> list;
  return list;
}
}  // namespace

std::vector<std::shared_ptr<Observer>> observers_snapshot() {
  std::lock_guard<std::mutex> g(observers_mutex());
  return observer_list();
}
}  // namespace detail

void Observers::add(std::shared_ptr<Observer> observer) {
  if (!observer) return;
  std::lock_guard<std::mutex> g(detail::observers_mutex());
  detail::observer_list().push_back(std::move(observer));
}

void Observers::clear() {
  std::lock_guard<std::mutex> g(detail::observers_mutex());
  detail::observer_list().clear();
}

const char* to_string(ActivityKind k) {
  switch (k) {
    case ActivityKind::Task:
      return "task";
    case ActivityKind::Fill:
      return "fill";
    case ActivityKind::Copy:
      return "copy";
    case ActivityKind::Send:
      return "send";
    case ActivityKind::Receive:
      return "receive";
    case ActivityKind::Analysis:
      return "analysis";
    case ActivityKind::Replay:
      return "replay";
    case ActivityKind::Wait:
      return "wait";
    case ActivityKind::Recording:
      return "recording";
    case ActivityKind::Message:
      return "message";
    case ActivityKind::Range:
      return "range";
  }
  return "?";
}

// The profiler's kinds convert to these by number.
using PK = detail::Profiler::Kind;
static_assert(
    int(ActivityKind::Task) == int(PK::Task) && int(ActivityKind::Fill) == int(PK::Fill) &&
    int(ActivityKind::Copy) == int(PK::Copy) && int(ActivityKind::Send) == int(PK::Send) &&
    int(ActivityKind::Receive) == int(PK::Receive) &&
    int(ActivityKind::Analysis) == int(PK::Analysis) &&
    int(ActivityKind::Replay) == int(PK::Replay) && int(ActivityKind::Wait) == int(PK::Wait) &&
    int(ActivityKind::Recording) == int(PK::Record) &&
    int(ActivityKind::Message) == int(PK::Message) && int(ActivityKind::Range) == int(PK::Range));

}  // namespace reprise
