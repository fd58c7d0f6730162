#pragma once
// Reprise: a task-based runtime with logical regions, dynamic dependence analysis and
// memoized (traced) analysis. Applications include this header and nothing else.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reprise/accessor.h"
#include "reprise/context.h"
#include "reprise/error.h"
#include "reprise/future.h"
#include "reprise/geometry.h"
#include "reprise/gpu.h"
#include "reprise/launcher.h"
#include "reprise/mapper.h"
#include "reprise/observer.h"
#include "reprise/reduction.h"
#include "reprise/registry.h"
#include "reprise/task_context.h"
#include "reprise/types.h"

namespace reprise {

using TopLevelTask = std::function<void(Context&)>;

// Parses the -ll:/-lg:/-level flags in argv (and REPRISE_ARGS), runs top_level on the calling
// thread, waits for every op to finish and shuts down. Returns the process exit code: 0, or 1
// after printing the error. Arguments that are not runtime flags are left for the app.
int start(int argc, char** argv, const TopLevelTask& top_level,
          std::unique_ptr<Mapper> mapper = nullptr);
// As above, with extra runtime flags the app decides itself (e.g. -lg:no_auto_tracing for a
// --trace none mode); they come after the command line's, so the command line cannot undo them.
int start(int argc, char** argv, const TopLevelTask& top_level,
          const std::vector<std::string>& extra_flags, std::unique_ptr<Mapper> mapper = nullptr);

// As start(), with the flags given as a vector (REPRISE_ARGS too, the vector winning where both
// set a flag); throws reprise::Error instead of printing it.
void run(const std::vector<std::string>& flags, const TopLevelTask& top_level,
         std::unique_ptr<Mapper> mapper = nullptr);

// The arguments of argv that are not runtime flags (argv[0] first), for the app's own parsing.
std::vector<std::string> app_args(int argc, char** argv);

}  // namespace reprise
