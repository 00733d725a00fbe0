use crate::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::ClientCapabilities;

use crate::agent::{AgentCore, ModelChoice, Session};

use hearth_conversation::SessionId;

/// Everything the ACP handlers share. Locks here are held only for quick lookups.
pub struct AcpState {
    pub core: Arc<AgentCore>,
    client_caps: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
    /// The picker's models as last listed (refreshed on every session/new).
    choices: Mutex<Vec<ModelChoice>>,
}

impl AcpState {
    pub fn new(core: Arc<AgentCore>) -> Self {
        Self {
            core,
            client_caps: Mutex::new(ClientCapabilities::default()),
            sessions: Mutex::new(HashMap::new()),
            choices: Mutex::new(Vec::new()),
        }
    }

    pub fn set_client_caps(&self, caps: ClientCapabilities) {
        *lock(&self.client_caps) = caps;
    }

    pub fn client_caps(&self) -> ClientCapabilities {
        lock(&self.client_caps).clone()
    }

    pub fn insert_session(&self, session: Arc<Session>) {
        lock(&self.sessions).insert(session.id.clone(), session);
    }

    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(&SessionId::new(id)).cloned()
    }

    pub fn remove_session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).remove(&SessionId::new(id))
    }

    /// Forgets every session after cancelling its turn and stopping its MCP servers.
    pub async fn close_all(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        let stops = sessions.iter().map(|session| async move {
            session.cancel();
            if let Some(tools) = session.tools() {
                tools.shutdown().await;
            }
        });
        futures::future::join_all(stops).await;
    }

    pub fn set_choices(&self, choices: Vec<ModelChoice>) {
        *lock(&self.choices) = choices;
    }

    pub fn choices(&self) -> Vec<ModelChoice> {
        lock(&self.choices).clone()
    }
}
