"""The controllable student simulator (paper §3.1) and baseline simulators; no verl imports."""
