//! Fakes and helpers shared by the suites.

#![allow(dead_code)]

pub mod acp_client;
pub mod acp_requests;
pub mod editor_client;
pub mod fake_backend;
pub mod golden;
pub mod hearth_bin;
pub mod mcp_http;
pub mod model_requests;
pub mod scripted_turn;
pub mod timeline;
