#include "reprise_rt/steal_scope.h"

#include <fmt/core.h>

#include <cstdio>

#include "reprise/error.h"
#include "reprise_rt/steal_tree.h"

namespace reprise::detail {

std::shared_ptr<const StealTree> StealMemo::get(std::uint32_t region) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return region < trees_.size() ? trees_[region] : nullptr;
}

void StealMemo::put(std::uint32_t region, std::shared_ptr<const StealTree> tree) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (trees_.size() <= region) trees_.resize(region + 1);
  trees_[region] = std::move(tree);
}

StealMemo& StealMemos::at(std::uint32_t point) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (memos_.size() <= point) memos_.resize(point + 1);
  if (!memos_[point]) memos_[point] = std::make_unique<StealMemo>();
  return *memos_[point];
}

void StealTraceSink::add(const std::string& label, const StealTree& tree) {
  std::string text = tree.text(label);
  std::lock_guard<std::mutex> lock(mutex_);
  text_ += text;
}

void StealTraceSink::write(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error(fmt::format("-lg:steal_trace: cannot write '{}'", path));
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string header = "# reprise steal trace v1 (docs/forkjoin.md)\n";
  const bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
                  std::fwrite(text_.data(), 1, text_.size(), f) == text_.size();
  if (std::fclose(f) != 0 || !ok)
    throw Error(fmt::format("-lg:steal_trace: cannot write '{}'", path));
}

std::string StealTaskScope::label() const {
  return fmt::format("task={} point={}{}", task, launch_point, memos ? " replayed" : "");
}

}  // namespace reprise::detail
