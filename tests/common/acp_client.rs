//! The client side of ACP for tests: the SDK's own client, recording every notification.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::Builder;
use agent_client_protocol::v1::schema::{
    ContentBlock, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate,
};
use agent_client_protocol::{
    Agent, Channel, Client, HandleDispatchFrom, on_receive_notification, on_receive_request,
};
use hearth::acp::{AcpState, agent};

/// Every `session/update` the client received, in order.
#[derive(Clone, Default)]
pub struct Recorder {
    updates: Arc<Mutex<Vec<SessionNotification>>>,
}

impl Recorder {
    pub fn all(&self) -> Vec<SessionNotification> {
        self.updates.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.updates.lock().unwrap().clear();
    }

    /// The concatenated text of the agent's message chunks.
    pub fn agent_text(&self) -> String {
        self.collect(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => Some(c.content.clone()),
            _ => None,
        })
    }

    /// The concatenated text of the agent's thought chunks.
    pub fn thought_text(&self) -> String {
        self.collect(|u| match u {
            SessionUpdate::AgentThoughtChunk(c) => Some(c.content.clone()),
            _ => None,
        })
    }

    fn collect(&self, pick: impl Fn(&SessionUpdate) -> Option<ContentBlock>) -> String {
        self.all()
            .iter()
            .filter_map(|n| pick(&n.update))
            .map(|b| match b {
                ContentBlock::Text(t) => t.text,
                other => format!("{other:?}"),
            })
            .collect()
    }

    /// Waits until `pred` holds over the recorded updates (up to 5 s).
    pub async fn wait_for(&self, pred: impl Fn(&Recorder) -> bool) -> bool {
        for _ in 0..500 {
            if pred(self) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// A client that records updates and rejects permission requests (none are expected yet).
pub fn recording_client(
    recorder: Recorder,
) -> Builder<Client, impl HandleDispatchFrom<Agent> + 'static> {
    let sink = recorder.updates.clone();
    Client
        .v1()
        .name("hearth-test-client")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                sink.lock().unwrap().push(n);
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |_req: RequestPermissionRequest, r, _cx| {
                r.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ))
            },
            on_receive_request!(),
        )
}

/// Starts the agent in-process and returns the client's end of the channel.
pub fn in_process(state: Arc<AcpState>) -> Channel {
    let (client_end, agent_end) = Channel::duplex();
    tokio::spawn(async move {
        let _ = agent(state).connect_to(agent_end).await;
    });
    client_end
}
