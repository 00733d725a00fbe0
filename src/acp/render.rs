//! `AgentEvent` → ACP `SessionUpdate`. The only place that knows how hearth's events look on
//! the wire.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, ImageContent, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionInfoUpdate, SessionUpdate, Terminal, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use hearth_backend::ContentPart;

use hearth_conversation::{
    AgentEvent, PlanStatus, ToolCard, ToolCardUpdate, ToolContent, ToolKind as Kind, ToolLocation,
    ToolStatus,
};

pub fn session_update(event: AgentEvent) -> Vec<SessionUpdate> {
    match event {
        AgentEvent::UserMessage { content } => content
            .into_iter()
            .map(|part| SessionUpdate::UserMessageChunk(ContentChunk::new(content_block(part))))
            .collect(),
        AgentEvent::AgentText { text } => {
            vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(
                ContentBlock::from(text),
            ))]
        }
        AgentEvent::AgentThought { text } => {
            vec![SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                ContentBlock::from(text),
            ))]
        }
        AgentEvent::Notice { text } => vec![SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            ContentBlock::from(format!("\n[hearth] {text}\n")),
        ))],
        AgentEvent::ToolCallStarted { card } => vec![SessionUpdate::ToolCall(tool_call(card))],
        AgentEvent::ToolCallUpdated { id, update } => vec![SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(id.to_string(), update_fields(update)),
        )],
        AgentEvent::Plan { entries } => vec![SessionUpdate::Plan(Plan::new(
            entries
                .into_iter()
                .map(|e| {
                    PlanEntry::new(e.content, PlanEntryPriority::Medium, plan_status(e.status))
                })
                .collect(),
        ))],
        AgentEvent::Usage { used, size } => {
            vec![SessionUpdate::UsageUpdate(UsageUpdate::new(used, size))]
        }
        AgentEvent::SessionTitle { title } => {
            vec![SessionUpdate::SessionInfoUpdate(
                SessionInfoUpdate::new().title(title),
            )]
        }
    }
}

pub fn content_block(part: ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::from(text),
        ContentPart::Image { mime_type, data } => {
            ContentBlock::Image(ImageContent::new(data, mime_type))
        }
    }
}

pub fn tool_call(card: ToolCard) -> ToolCall {
    ToolCall::new(card.id.to_string(), card.title)
        .kind(kind(card.kind))
        .status(status(card.status))
        .locations(card.locations.into_iter().map(location).collect::<Vec<_>>())
        .content(
            card.content
                .into_iter()
                .map(tool_content)
                .collect::<Vec<_>>(),
        )
        .raw_input(card.raw_input)
}

pub fn update_fields(update: ToolCardUpdate) -> ToolCallUpdateFields {
    let mut fields = ToolCallUpdateFields::new();
    if let Some(s) = update.status {
        fields = fields.status(status(s));
    }
    if let Some(title) = update.title {
        fields = fields.title(title);
    }
    if let Some(content) = update.content {
        fields = fields.content(content.into_iter().map(tool_content).collect::<Vec<_>>());
    }
    if let Some(locations) = update.locations {
        fields = fields.locations(locations.into_iter().map(location).collect::<Vec<_>>());
    }
    if let Some(raw) = update.raw_output {
        fields = fields.raw_output(raw);
    }
    fields
}

fn tool_content(content: ToolContent) -> ToolCallContent {
    match content {
        ToolContent::Text { text } => ToolCallContent::from(text),
        ToolContent::Diff {
            path,
            old_text,
            new_text,
        } => ToolCallContent::from(Diff::new(path, new_text).old_text(old_text)),
        ToolContent::Terminal { terminal_id } => {
            ToolCallContent::Terminal(Terminal::new(terminal_id.to_string()))
        }
    }
}

fn location(l: ToolLocation) -> ToolCallLocation {
    ToolCallLocation::new(l.path).line(l.line)
}

fn kind(k: Kind) -> ToolKind {
    match k {
        Kind::Read => ToolKind::Read,
        Kind::Edit => ToolKind::Edit,
        Kind::Delete => ToolKind::Delete,
        Kind::Move => ToolKind::Move,
        Kind::Search => ToolKind::Search,
        Kind::Execute => ToolKind::Execute,
        Kind::Think => ToolKind::Think,
        Kind::Fetch => ToolKind::Fetch,
        Kind::Other => ToolKind::Other,
    }
}

fn status(s: ToolStatus) -> ToolCallStatus {
    match s {
        ToolStatus::Pending => ToolCallStatus::Pending,
        ToolStatus::InProgress => ToolCallStatus::InProgress,
        ToolStatus::Completed => ToolCallStatus::Completed,
        ToolStatus::Failed => ToolCallStatus::Failed,
    }
}

fn plan_status(s: PlanStatus) -> PlanEntryStatus {
    match s {
        PlanStatus::Pending => PlanEntryStatus::Pending,
        PlanStatus::InProgress => PlanEntryStatus::InProgress,
        PlanStatus::Completed => PlanEntryStatus::Completed,
    }
}

/// ACP's stop reasons for the agent's.
pub fn stop_reason(
    reason: crate::agent::StopReason,
) -> agent_client_protocol::v1::schema::StopReason {
    use crate::agent::StopReason as S;
    use agent_client_protocol::v1::schema::StopReason as AcpStopReason;
    match reason {
        S::EndTurn => AcpStopReason::EndTurn,
        S::MaxTokens => AcpStopReason::MaxTokens,
        S::MaxTurnRequests => AcpStopReason::MaxTurnRequests,
        S::Refusal => AcpStopReason::Refusal,
        S::Cancelled => AcpStopReason::Cancelled,
    }
}
