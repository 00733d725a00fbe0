//! The ACP dispatch table. Each handler answers at once or hands its work to a task: the
//! dispatch loop must stay free to deliver `session/cancel` and the client's replies.

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    DeleteSessionRequest, DeleteSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{Builder, ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Client, Error, HandleDispatchFrom, on_receive_notification, on_receive_request,
};

use super::announce::respond_then_announce;
use super::error::AcpError;
use super::mcp_servers::respond_then_report;
use super::state::AcpState;
use super::{history_ops, session_ops, turn_task};

/// The ACP agent, ready to connect to stdio or to an in-process channel.
pub fn agent(state: Arc<AcpState>) -> Builder<Agent, impl HandleDispatchFrom<Client> + 'static> {
    let s_hist = state.clone();
    let (s_init, s_new, s_prompt, s_cancel, s_option, s_mode, s_close) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state,
    );
    Agent
        .v1()
        .name("hearth")
        .on_receive_request(
            async move |req: InitializeRequest, r: Responder<InitializeResponse>, _cx| {
                s_init.set_client_caps(req.client_capabilities);
                r.respond(initialize_response(s_init.core.store.is_some()))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        r: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let state = s_new.clone();
                let task_cx = cx.clone();
                cx.spawn(async move {
                    let outcome = session_ops::new_session(&state, req).await;
                    respond_then_report(r, outcome, &task_cx)
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest,
                        r: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                turn_task::start(s_prompt.clone(), req, r, cx)
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                match s_cancel.session(&n.session_id.0) {
                    Some(session) => {
                        session.cancel();
                    }
                    None => {
                        tracing::debug!(session = %n.session_id.0, "cancel for an unknown session")
                    }
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest,
                        r: Responder<SetSessionConfigOptionResponse>,
                        cx: ConnectionTo<Client>| {
                let outcome = session_ops::set_config_option(&s_option, req);
                respond_then_announce(r, outcome, &s_option, &cx)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        r: Responder<SetSessionModeResponse>,
                        cx: ConnectionTo<Client>| {
                let outcome = session_ops::set_mode(&s_mode, req);
                respond_then_announce(r, outcome, &s_mode, &cx)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = s_hist.clone();
                async move |req: ListSessionsRequest,
                            r: Responder<ListSessionsResponse>,
                            cx: ConnectionTo<Client>| {
                    let state = state.clone();
                    cx.spawn(async move {
                        r.respond_with_result(
                            history_ops::list(&state, req).await.map_err(Error::from),
                        )
                    })
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = s_hist.clone();
                async move |req: LoadSessionRequest,
                            r: Responder<LoadSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let state = state.clone();
                    let task_cx = cx.clone();
                    cx.spawn(async move {
                        let outcome = history_ops::load(&state, req, &task_cx).await;
                        respond_then_report(r, outcome, &task_cx)
                    })
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = s_hist.clone();
                async move |req: ResumeSessionRequest,
                            r: Responder<ResumeSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let state = state.clone();
                    let task_cx = cx.clone();
                    cx.spawn(async move {
                        let outcome = history_ops::resume(&state, req).await;
                        respond_then_report(r, outcome, &task_cx)
                    })
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let state = s_hist.clone();
                async move |req: DeleteSessionRequest,
                            r: Responder<DeleteSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let state = state.clone();
                    cx.spawn(async move {
                        r.respond_with_result(
                            history_ops::delete(&state, req).await.map_err(Error::from),
                        )
                    })
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CloseSessionRequest,
                        r: Responder<CloseSessionResponse>,
                        cx: ConnectionTo<Client>| {
                match s_close.remove_session(&req.session_id.0) {
                    Some(session) => cx.spawn(async move {
                        history_ops::release(session).await;
                        r.respond(CloseSessionResponse::new())
                    }),
                    None => r.respond_with_error(
                        AcpError::UnknownSession(req.session_id.0.to_string()).into(),
                    ),
                }
            },
            on_receive_request!(),
        )
}

/// Advertises only what works: the stored-session methods need the store.
fn initialize_response(has_store: bool) -> InitializeResponse {
    // Extra directories (other worktrees) become roots of the session: tools work there as
    // in the cwd.
    let mut sessions = SessionCapabilities::new()
        .close(SessionCloseCapabilities::new())
        .additional_directories(SessionAdditionalDirectoriesCapabilities::new());
    if has_store {
        sessions = sessions
            .list(SessionListCapabilities::new())
            .resume(SessionResumeCapabilities::new())
            .delete(SessionDeleteCapabilities::new());
    }
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_info(
            Implementation::new("hearth", env!("CARGO_PKG_VERSION")).title("hearth".to_string()),
        )
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(has_store)
                .mcp_capabilities(McpCapabilities::new().http(true))
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .session_capabilities(sessions),
        )
}
