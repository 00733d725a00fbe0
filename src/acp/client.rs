//! `ClientOps` over ACP: the editor reads and writes files (its buffers), runs commands (its
//! terminals) and asks the user. Only what the client advertised is asked of it.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, KillTerminalRequest, PermissionOption,
    PermissionOptionKind, ReadTextFileRequest, ReleaseTerminalRequest, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId as AcpSessionId, SessionNotification,
    TerminalOutputRequest, ToolCallUpdate, WaitForTerminalExitRequest, WriteTextFileRequest,
};
use agent_client_protocol::{Client, ErrorCode};
use async_trait::async_trait;
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, TerminalId, ToolCard};
use tokio_util::sync::CancellationToken;

use super::render;
use crate::host::{
    ClientOps, ClientOpsError, ExitStatus, LocalClientOps, LocalFrontEnd, TerminalOutput,
    TerminalRequest,
};

pub struct AcpClientOps {
    front: Arc<AcpFront>,
    caps: ClientCapabilities,
    /// Files and commands on this machine, for what the client did not advertise.
    local: LocalClientOps,
}

/// Asking the user and showing events: always through the client.
struct AcpFront {
    cx: ConnectionTo<Client>,
    session_id: AcpSessionId,
    /// The turn's token: an open permission question resolves as cancelled when it fires.
    cancel: CancellationToken,
}

impl AcpClientOps {
    pub fn new(
        cx: ConnectionTo<Client>,
        session_id: AcpSessionId,
        caps: ClientCapabilities,
        cancel: CancellationToken,
    ) -> Self {
        let front = Arc::new(AcpFront {
            cx,
            session_id,
            cancel,
        });
        let local = LocalClientOps::new(front.clone());
        Self { front, caps, local }
    }

    fn sid(&self) -> AcpSessionId {
        self.front.session_id.clone()
    }

    fn cx(&self) -> &ConnectionTo<Client> {
        &self.front.cx
    }
}

/// Maps a failed client request. A connection that closed or ended while the request was out
/// is [`ClientOpsError::Disconnected`] (the turn aborts: nobody is left to answer); anything
/// else is the client's own answer, told to the model and shown on the card: its message with
/// the text of its `data` (where clients say what actually went wrong: "Internal error" alone
/// tells nobody anything).
fn failed(err: agent_client_protocol::Error) -> ClientOpsError {
    if agent_client_protocol::is_incoming_transport_closed(&err)
        || agent_client_protocol::is_connection_terminated(&err)
    {
        return ClientOpsError::Disconnected;
    }
    let detail = err.data.as_ref().map(data_text).unwrap_or_default();
    let detail = bounded(detail.trim(), MAX_DETAIL_CHARS);
    ClientOpsError::Failed(if detail.is_empty() || err.message.contains(&detail) {
        err.message
    } else {
        format!("{}: {detail}", err.message)
    })
}

/// The most of a client error's `data` kept: enough for any real explanation, bounded against
/// a client that sends megabytes.
const MAX_DETAIL_CHARS: usize = 500;

/// The readable text of an error's `data`: a string as it is; an object's `details`,
/// `message` or `reason` string; anything else as compact JSON.
fn data_text(data: &serde_json::Value) -> String {
    match data {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Object(map) => ["details", "message", "reason"]
            .iter()
            .find_map(|key| map.get(*key).and_then(|v| v.as_str()))
            .map_or_else(|| data.to_string(), str::to_owned),
        other => other.to_string(),
    }
}

/// `text` cut to `max` characters (on a character boundary), marked when cut.
fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[async_trait]
impl ClientOps for AcpClientOps {
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientOpsError> {
        if !self.caps.fs.read_text_file {
            return self.local.read_text_file(path, line, limit).await;
        }
        let request = ReadTextFileRequest::new(self.sid(), path)
            .line(line)
            .limit(limit);
        // The editor's answer stands: a read it refuses (a path outside its project, a file
        // it will not show) is never read here behind its back.
        match self.cx().send_request(request).block_task().await {
            Ok(response) => Ok(response.content),
            Err(err) if err.code == ErrorCode::RESOURCE_NOT_FOUND => {
                Err(ClientOpsError::NotFound(path.to_path_buf()))
            }
            Err(err) => Err(failed(err)),
        }
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), ClientOpsError> {
        if !self.caps.fs.write_text_file {
            return self.local.write_text_file(path, content).await;
        }
        let request = WriteTextFileRequest::new(self.sid(), path, content);
        self.cx()
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(failed)
    }

    async fn create_terminal(
        &self,
        request: TerminalRequest,
    ) -> Result<TerminalId, ClientOpsError> {
        if !self.caps.terminal {
            return self.local.create_terminal(request).await;
        }
        // Run through the shell so pipes, globs and `&&` work as the model expects.
        let acp = CreateTerminalRequest::new(self.sid(), "sh")
            .args(vec!["-c".to_string(), request.command])
            .env(
                request
                    .env
                    .into_iter()
                    .map(|(k, v)| agent_client_protocol::v1::schema::EnvVariable::new(k, v))
                    .collect::<Vec<_>>(),
            )
            .cwd(request.cwd)
            .output_byte_limit(request.output_byte_limit);
        let response = self
            .cx()
            .send_request(acp)
            .block_task()
            .await
            .map_err(failed)?;
        Ok(TerminalId::new(response.terminal_id.to_string()))
    }

    async fn terminal_output(&self, id: &TerminalId) -> Result<TerminalOutput, ClientOpsError> {
        if !self.caps.terminal {
            return self.local.terminal_output(id).await;
        }
        let request = TerminalOutputRequest::new(self.sid(), id.to_string());
        let response = self
            .cx()
            .send_request(request)
            .block_task()
            .await
            .map_err(failed)?;
        Ok(TerminalOutput {
            output: response.output,
            truncated: response.truncated,
            exit_status: response.exit_status.map(|s| ExitStatus {
                exit_code: s.exit_code,
                signal: s.signal,
            }),
        })
    }

    async fn wait_for_exit(&self, id: &TerminalId) -> Result<ExitStatus, ClientOpsError> {
        if !self.caps.terminal {
            return self.local.wait_for_exit(id).await;
        }
        let request = WaitForTerminalExitRequest::new(self.sid(), id.to_string());
        let response = self
            .cx()
            .send_request(request)
            .block_task()
            .await
            .map_err(failed)?;
        Ok(ExitStatus {
            exit_code: response.exit_status.exit_code,
            signal: response.exit_status.signal,
        })
    }

    async fn kill_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        if !self.caps.terminal {
            return self.local.kill_terminal(id).await;
        }
        let request = KillTerminalRequest::new(self.sid(), id.to_string());
        self.cx()
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(failed)
    }

    async fn release_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        if !self.caps.terminal {
            return self.local.release_terminal(id).await;
        }
        let request = ReleaseTerminalRequest::new(self.sid(), id.to_string());
        self.cx()
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(failed)
    }

    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        self.front.request_permission(card, reach).await
    }

    fn send(&self, event: AgentEvent) {
        if self.caps.terminal {
            self.front.send(event);
        } else {
            self.front.send(event.with_terminals_as_text());
        }
    }
}

#[async_trait]
impl LocalFrontEnd for AcpFront {
    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        let mut options = vec![
            PermissionOption::new("allow_once", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "allow_always",
                "Always allow",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                "reject_always",
                "Always reject",
                PermissionOptionKind::RejectAlways,
            ),
        ];
        // Outside the project every call is asked about on its own: no "always allow".
        if reach == Reach::OutsideRoots {
            options.retain(|o| o.kind != PermissionOptionKind::AllowAlways);
        }
        let update = ToolCallUpdate::from(render::tool_call(card.clone()));
        let request =
            RequestPermissionRequest::new(self.session_id.clone(), update, options.clone());
        let outcome = tokio::select! {
            // Dropping the pending request sends $/cancel_request to the client.
            () = self.cancel.cancelled() => return PermissionAnswer::Cancelled,
            response = self.cx.send_request(request).block_task() => match response {
                Ok(r) => r.outcome,
                Err(err) => {
                    tracing::warn!("permission request failed: {}", err.message);
                    return PermissionAnswer::Cancelled;
                }
            },
        };
        match outcome {
            RequestPermissionOutcome::Selected(selected) => {
                // Judge by the chosen option's kind, never by its position.
                let kind = options
                    .iter()
                    .find(|o| o.option_id == selected.option_id)
                    .map(|o| o.kind);
                match kind {
                    Some(PermissionOptionKind::AllowOnce) => PermissionAnswer::AllowOnce,
                    Some(PermissionOptionKind::AllowAlways) => PermissionAnswer::AllowAlways,
                    Some(PermissionOptionKind::RejectAlways) => PermissionAnswer::RejectAlways,
                    _ => PermissionAnswer::RejectOnce,
                }
            }
            _ => PermissionAnswer::Cancelled,
        }
    }

    fn send(&self, event: AgentEvent) {
        for update in render::session_update(event) {
            if let Err(err) = self
                .cx
                .send_notification(SessionNotification::new(self.session_id.clone(), update))
            {
                tracing::debug!("dropping an update for a closed client: {}", err.message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn failure(err: agent_client_protocol::Error) -> String {
        match failed(err) {
            ClientOpsError::Failed(message) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_client_errors_data_reaches_the_message() {
        let denied = agent_client_protocol::Error::internal_error()
            .data(json!({"details": "Permission denied for fs/write_text_file"}));
        assert_eq!(
            failure(denied),
            "Internal error: Permission denied for fs/write_text_file"
        );
        let text = agent_client_protocol::Error::invalid_params().data(json!("no such buffer"));
        assert!(failure(text).ends_with(": no such buffer"));
        let shape = agent_client_protocol::Error::internal_error().data(json!({"code": 7}));
        assert!(failure(shape).ends_with(r#": {"code":7}"#));
        let bare = agent_client_protocol::Error::internal_error();
        assert_eq!(failure(bare), "Internal error");
    }

    #[test]
    fn a_huge_detail_is_bounded() {
        let huge = agent_client_protocol::Error::internal_error().data(json!("é".repeat(100_000)));
        let message = failure(huge);
        assert!(
            message.chars().count() < MAX_DETAIL_CHARS + 40,
            "{}",
            message.len()
        );
        assert!(message.ends_with('…'));
    }
}
