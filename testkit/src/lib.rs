//! Fakes for hearth's tests.
