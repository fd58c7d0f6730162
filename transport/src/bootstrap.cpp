#include "reprise_transport/bootstrap.h"

#include <fmt/core.h>
#include <mpi.h>

#include <cstdlib>
#include <initializer_list>

#include "reprise/error.h"

namespace reprise::transport {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

void ensure_mpi() {
  static MpiSession session;  // finalised when the process exits
}

MpiSession::MpiSession() {
  int already = 0;
  MPI_Initialized(&already);
  if (already) {
    // The application initialised MPI itself: it must have asked for enough.
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED)
      throw Error(fmt::format(
          "MPI was initialised with thread level {}; the runtime needs MPI_THREAD_SERIALIZED "
          "({}): call MPI_Init_thread with it, or let reprise::start initialise MPI",
          provided, int(MPI_THREAD_SERIALIZED)));
    return;
  }
  if (!launched_by_mpi()) return;
  int provided = 0;
  // Only the progress thread calls MPI between init and finalize.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  active_ = true;
  if (provided < MPI_THREAD_SERIALIZED)
    throw Error(fmt::format(
        "MPI provides thread level {} but the runtime needs MPI_THREAD_SERIALIZED ({}): its "
        "progress thread calls MPI beside the application thread",
        provided, int(MPI_THREAD_SERIALIZED)));
}

MpiSession::~MpiSession() {
  if (active_) MPI_Finalize();
}

}  // namespace reprise::transport
