#pragma once
// The runtime's Network over MPI: one progress thread per process owns every MPI call after
// initialisation (MPI_THREAD_SERIALIZED is enough). It posts queued sends (MPI_Isend), probes
// for messages and hands them to the channel's handler, and runs collectives as non-blocking
// MPI operations so that messages keep flowing while a collective is pending. When idle it
// sleeps with a bounded back-off (20 to 100 µs) instead of spinning on a core the tasks
// need, and wakes at once when something is queued.
#include <memory>

#include "reprise_rt/network.h"

namespace reprise::transport {

// nullptr when the process does not run under MPI with more than one rank.
std::unique_ptr<detail::Network> make_mpi_network();

}  // namespace reprise::transport
