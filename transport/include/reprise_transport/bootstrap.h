#pragma once
// MPI bootstrap: initialises MPI only when the process was started by an MPI launcher, so a
// plain single process needs no mpirun. Control replication builds on this.
namespace reprise::transport {

class MpiSession {
 public:
  MpiSession();   // MPI_Init_thread when launched under mpirun
  ~MpiSession();  // MPI_Finalize if we initialised it
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool active() const { return active_; }

 private:
  int rank_ = 0, size_ = 1;
  bool active_ = false;
};

// Whether the environment shows an MPI launcher (Open MPI, PMIx, Hydra).
bool launched_by_mpi();

// Initialises MPI once per process when launched by an MPI launcher (finalised at exit), so
// that a process may run several Reprise programs one after the other (tests do).
void ensure_mpi();

}  // namespace reprise::transport
