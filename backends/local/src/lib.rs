//! The in-process inference engine.
