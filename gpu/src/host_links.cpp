// Host links: each send and receive runs on the links' own host stream and blocks it until
// its peer's matching operation is there, as NCCL's do (a receive announces itself with a
// token, the send waits for that token, then sends the data). So an order in which NCCL would
// deadlock hangs here too, and a receive that meets another message than it names is reported
// as the runtime's bug it is, where NCCL would silently deliver the wrong bytes.
#include "host_links.h"

#include <fmt/core.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "reprise_rt/assert.h"
#include "reprise_rt/wire.h"

namespace reprise::devices {

namespace {

using detail::DeviceStream;

enum class Kind : std::uint8_t { Ready = 1, Data = 2 };

// A message: its kind, the name it carries, the size of its data, then the data.
struct Header {
  Kind kind{};
  std::uint64_t tag = 0, size = 0;
};
constexpr std::size_t kHeaderBytes = 1 + 2 * sizeof(std::uint64_t);

std::vector<std::byte> message(Kind kind, std::uint64_t tag, const void* data, std::size_t bytes) {
  // (Sized at once and written in place: GCC 12 warns wrongly about inserts into a new vector.)
  std::vector<std::byte> m(kHeaderBytes + bytes);
  const std::uint64_t size = bytes;
  m[0] = std::byte(kind);
  std::memcpy(m.data() + 1, &tag, sizeof tag);
  std::memcpy(m.data() + 1 + sizeof tag, &size, sizeof size);
  // (A Ready token has no data. The span's size is the vector's: GCC's profile-guided build
  // otherwise took `bytes` for anything up to 2^64 and warned.)
  const std::span<std::byte> body = std::span<std::byte>(m).subspan(kHeaderBytes);
  if (!body.empty()) std::memcpy(body.data(), data, body.size());
  return m;
}
// (All zero for a message too short to hold one.)
Header header_of(const std::vector<std::byte>& m) {
  Header h;
  if (m.size() < kHeaderBytes) return h;
  std::size_t at = 0;
  h.kind = detail::wire::get<Kind>(m, at);
  h.tag = detail::wire::get<std::uint64_t>(m, at);
  h.size = detail::wire::get<std::uint64_t>(m, at);
  return h;
}

[[noreturn]] void out_of_order(const char* what, std::uint64_t want, const Header& got,
                               std::uint32_t peer) {
  const std::string s = fmt::format(
      "device links: {} with rank {} met another message (kind {}, tag {:#x}, {} bytes) than "
      "the one it names (tag {:#x}): the ranks enqueued their links' operations in different "
      "orders",
      what, peer, int(got.kind), got.tag, got.size, want);
  detail::assertion_failed("same order on both ranks", s.c_str(), __FILE__, __LINE__);
}

class HostLinks final : public detail::DeviceLinks {
 public:
  HostLinks(detail::Device& device, int device_index, detail::LinkPipe& pipe)
      : device_(device), pipe_(pipe), stream_(device.create_stream(device_index)) {}
  ~HostLinks() override {
    abort();  // (a normal end has nothing in flight: its receives all completed)
    device_.destroy_stream(stream_);
  }
  DeviceStream stream() const override { return stream_; }

  void send(const void* data, std::size_t bytes, std::uint32_t peer, std::uint64_t tag) override {
    device_.launch_host(stream_, [this, data, bytes, peer, tag] {
      std::optional<std::vector<std::byte>> token = pipe_.receive(peer);
      if (!token || aborted_.load()) return;
      const Header h = header_of(*token);
      if (h.kind != Kind::Ready || h.tag != tag) out_of_order("a send", tag, h, peer);
      pipe_.send(peer, message(Kind::Data, tag, data, bytes));
    });
  }
  void receive(void* data, std::size_t bytes, std::uint32_t peer, std::uint64_t tag) override {
    device_.launch_host(stream_, [this, data, bytes, peer, tag] {
      if (aborted_.load()) return;
      pipe_.send(peer, message(Kind::Ready, tag, nullptr, 0));
      std::optional<std::vector<std::byte>> m = pipe_.receive(peer);
      if (!m || aborted_.load()) return;
      const Header h = header_of(*m);
      if (h.kind != Kind::Data || h.tag != tag || h.size != bytes ||
          m->size() != kHeaderBytes + bytes)
        out_of_order("a receive", tag, h, peer);
      std::memcpy(data, m->data() + kHeaderBytes, bytes);
    });
  }
  void* buffer(DeviceStream, std::size_t bytes) override {
    return device_.allocate(stream_.device, bytes);
  }
  // In the order of stream `on` (a send's buffer is released right after the send is enqueued).
  void release_buffer(DeviceStream on, void* p) override {
    device_.launch_host(on, [this, p] { device_.release(stream_.device, p); });
  }
  void abort() override { aborted_.store(true); }

 private:
  detail::Device& device_;
  detail::LinkPipe& pipe_;
  DeviceStream stream_;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<detail::DeviceLinks> make_host_links(detail::Device& device, int device_index,
                                                     detail::LinkPipe& pipe) {
  return std::make_unique<HostLinks>(device, device_index, pipe);
}

}  // namespace reprise::devices
