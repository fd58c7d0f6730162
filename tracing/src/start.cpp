// reprise::start / reprise::run: parse flags, assemble the pipeline of stages on the utility
// thread (tracing -> memoizer -> analysis -> executor) and run the top-level task. This lives
// in tracing/, the top of the stack, so that runtime/ depends on no layer above it.
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>

#include "auto_stage.h"
#include "reprise/reprise.h"
#include "reprise_analysis/analysis.h"
#include "reprise_gpu/devices.h"
#include "reprise_memoizer/memoizer.h"
#include "reprise_rt/config.h"
#include "reprise_rt/runtime.h"
#include "reprise_transport/bootstrap.h"
#include "reprise_transport/mpi_network.h"

namespace reprise {

namespace {

void run_parsed(const detail::Config& parsed, const TopLevelTask& top_level,
                std::unique_ptr<Mapper> mapper, detail::Network* network = nullptr) {
  detail::Config config = parsed;
  if (config.at_mine_inline == 1 && config.at_analysis_delay_us > 0)
    throw Error(
        "-lg:auto_trace:analysis_delay_us delays mining off the utility thread; "
        "-lg:auto_trace:mine_inline 1 mines on it (use mine_inline 0 or auto with a delay)");
  // -ll:gpu: CUDA when a device is visible (or asked for), else the host device backend.
  std::unique_ptr<detail::Device> device;
  if (config.gpus > 0) {
    // -ll:nccl under mpirun: NCCL's kernels wait on the GPU for their peers, and CUDA's lazy
    // loading of a kernel launched for the first time may wait for every kernel running (CUDA
    // Programming Guide, "Lazy Loading": potential hazards) while a peer waits for that one
    // (seen on an H200: jacobi2d hung at its first sweep). So kernels load at start-up (before
    // the first CUDA call; a user's own CUDA_MODULE_LOADING is left as it is).
    if (network && network->size() > 1 && config.nccl != 0)
      setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
    std::string notice;
    device = devices::make_device(config.gpu_backend, notice);
    if (!notice.empty()) config.notices.push_back(std::move(notice));
  }
  detail::Runtime rt(config, std::move(mapper), network, device.get());
  auto memoizer_stage =
      std::make_unique<detail::Memoizer>(rt, std::make_unique<detail::Analysis>(rt));
  detail::OpSink* const memoizer = memoizer_stage.get();
  std::unique_ptr<detail::OpSink> stages;
  detail::OpSink* follower = nullptr;
  bool mines_on_threads = false;
  if (config.automatic_stage()) {
    tracing::AutoTraceOptions opt;
    opt.min_trace_length = std::size_t(config.at_min_length);
    opt.max_trace_length = std::size_t(config.at_max_length);
    opt.batchsize = std::size_t(config.at_batchsize);
    opt.multi_scale_factor = std::size_t(config.at_multi_scale_factor);
    opt.algorithm = config.at_algorithm == "batched" ? tracing::IdentifierAlgorithm::Batched
                                                     : tracing::IdentifierAlgorithm::MultiScale;
    opt.visit_threshold = std::size_t(config.at_visit_threshold);
    opt.analysis_delay_us = std::size_t(config.at_analysis_delay_us);
    // Where the runtime's threads already outnumber the cores, mining on oneTBB's threads
    // competes for them, and an analysis not done at its op makes the utility thread wait for
    // one that may not be running: the pipeline stalls (2 cores, a chain of 1,000 1-µs tasks:
    // 42-76 context switches per run against 18-39 inline). Inline, an analysis costs the
    // utility thread a few tens of µs, taken in at the same op as before.
    // (With -ll:app_cpu the threads match the cores: none is spare for oneTBB's either.)
    const bool no_spare_core = rt.spin_policy().crowded || rt.config().app_cpu == 1;
    opt.synchronous = config.at_mine_inline >= 0
                          ? config.at_mine_inline == 1
                          : no_spare_core && config.at_analysis_delay_us == 0;
    mines_on_threads = !opt.synchronous;
    auto stage =
        std::make_unique<detail::AutoTraceStage>(rt, std::move(memoizer_stage), opt, config.at_log);
    follower = stage.get();
    stages = std::move(stage);
  } else {
    stages = std::move(memoizer_stage);
  }
  rt.set_pipeline(std::move(stages), nullptr, memoizer, mines_on_threads, follower);
  rt.run(top_level);
}

std::vector<std::string> to_vector(int argc, char** argv) {
  std::vector<std::string> v;
  for (int i = 1; i < argc; ++i) v.emplace_back(argv[i]);
  return v;
}

}  // namespace

void run(const std::vector<std::string>& flags, const TopLevelTask& top_level,
         std::unique_ptr<Mapper> mapper) {
  detail::ParsedArgs parsed = detail::parse_args(flags, /*use_env=*/true);
  transport::ensure_mpi();
  std::unique_ptr<detail::Network> network = transport::make_mpi_network();
  run_parsed(parsed.config, top_level, std::move(mapper), network.get());
}

int start(int argc, char** argv, const TopLevelTask& top_level, std::unique_ptr<Mapper> mapper) {
  return start(argc, argv, top_level, {}, std::move(mapper));
}

int start(int argc, char** argv, const TopLevelTask& top_level,
          const std::vector<std::string>& extra_flags, std::unique_ptr<Mapper> mapper) {
  try {
    std::vector<std::string> args = to_vector(argc, argv);
    detail::ParsedArgs parsed = detail::parse_args(args, /*use_env=*/true);
    if (!extra_flags.empty()) {
      args.insert(args.end(), extra_flags.begin(), extra_flags.end());
      parsed = detail::parse_args(args, /*use_env=*/true);
    }
    if (parsed.config.help) {
      std::fputs(detail::flags_help().c_str(), stdout);
      return 0;
    }
    transport::ensure_mpi();
    std::unique_ptr<detail::Network> network = transport::make_mpi_network();
    run_parsed(parsed.config, top_level, std::move(mapper), network.get());
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "reprise: error: {}\n", e.what());
    return 1;
  } catch (...) {
    fmt::print(stderr, "reprise: error: an exception not derived from std::exception\n");
    return 1;
  }
}

std::vector<std::string> app_args(int argc, char** argv) {
  std::vector<std::string> out;
  if (argc > 0) out.emplace_back(argv[0]);
  try {
    auto parsed = detail::parse_args(to_vector(argc, argv), /*use_env=*/false);
    out.insert(out.end(), parsed.app_args.begin(), parsed.app_args.end());
  } catch (const Error&) {
    // start() reports bad runtime flags; here, pass through what is not one or its value (a
    // word after it that is not a flag), so that the app's parser does not report it first.
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (!detail::is_runtime_flag(a)) {
        out.push_back(a);
        continue;
      }
      if (i + 1 < argc && argv[i + 1][0] != '-') ++i;
    }
  }
  return out;
}

}  // namespace reprise
