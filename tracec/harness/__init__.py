"""Find capability environments, run episodes in them, record the trajectories."""
