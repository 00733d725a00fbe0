//! Compute kernels for the local engine.
