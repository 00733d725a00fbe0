//! Streaming client for OpenAI-compatible `/v1/chat/completions` and `/v1/models`.
