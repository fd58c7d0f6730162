#include "reprise_rt/link_pipe.h"

namespace reprise::detail {

NetworkLinkPipe::NetworkLinkPipe(Network& net) : net_(net), from_(net.size()) {
  net_.on(Channel::Link, [this](std::uint32_t from, std::vector<std::byte>&& bytes) {
    {
      std::lock_guard<std::mutex> g(mutex_);
      from_[from].push_back(std::move(bytes));
    }
    arrived_.notify_all();
  });
}

void NetworkLinkPipe::send(std::uint32_t to, std::vector<std::byte> bytes) {
  net_.send(to, Channel::Link, std::move(bytes));
}

std::optional<std::vector<std::byte>> NetworkLinkPipe::receive(std::uint32_t from) {
  std::unique_lock<std::mutex> g(mutex_);
  arrived_.wait(g, [&] { return closed_ || !from_[from].empty(); });
  if (closed_) return std::nullopt;
  std::vector<std::byte> m = std::move(from_[from].front());
  from_[from].pop_front();
  return m;
}

void NetworkLinkPipe::close() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    closed_ = true;
  }
  arrived_.notify_all();
}

}  // namespace reprise::detail
