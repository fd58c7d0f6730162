#include "reprise_transport/bootstrap.h"

#include <mpi.h>

#include <cstdlib>
#include <initializer_list>

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
  if (already || !launched_by_mpi()) return;
  int provided = 0;
  // Only the progress thread calls MPI between init and finalize.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  active_ = true;
}

MpiSession::~MpiSession() {
  if (active_) MPI_Finalize();
}

}  // namespace reprise::transport
