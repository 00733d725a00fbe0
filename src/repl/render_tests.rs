use hearth_conversation::ToolKind;

use super::*;

fn renderer(style: Style) -> Renderer {
    Renderer::new(style, PathBuf::from("/work"))
}

fn text(t: &str) -> AgentEvent {
    AgentEvent::AgentText { text: t.into() }
}

fn thought(t: &str) -> AgentEvent {
    AgentEvent::AgentThought { text: t.into() }
}

fn write_card(status: ToolStatus) -> ToolCard {
    ToolCard {
        id: ToolCallId::new("c1"),
        title: "Write notes.txt".into(),
        kind: ToolKind::Edit,
        status,
        locations: Vec::new(),
        content: vec![ToolContent::Diff {
            path: PathBuf::from("/work/notes.txt"),
            old_text: Some("one\ntwo\n".into()),
            new_text: "one\nthree\nfour\n".into(),
        }],
        raw_input: serde_json::Value::Null,
    }
}

fn status(s: ToolStatus) -> AgentEvent {
    AgentEvent::ToolCallUpdated {
        id: ToolCallId::new("c1"),
        update: ToolCardUpdate {
            status: Some(s),
            ..Default::default()
        },
    }
}

/// Every event kind, as one turn would send them.
fn whole_turn() -> Vec<AgentEvent> {
    vec![
        thought("Let me think.\nA second"),
        thought(" line.\n"),
        text("Writing "),
        text("the file."),
        AgentEvent::ToolCallStarted {
            card: write_card(ToolStatus::Pending),
        },
        status(ToolStatus::InProgress),
        status(ToolStatus::Completed),
        AgentEvent::Plan {
            entries: vec![
                PlanEntry {
                    content: "read".into(),
                    status: PlanStatus::Completed,
                },
                PlanEntry {
                    content: "write".into(),
                    status: PlanStatus::InProgress,
                },
            ],
        },
        AgentEvent::Notice {
            text: "retrying".into(),
        },
        AgentEvent::Usage {
            used: 100,
            size: 1000,
        },
        text("Done."),
    ]
}

fn render_all(r: &mut Renderer, events: &[AgentEvent]) -> String {
    let mut out: String = events.iter().map(|e| r.event(e)).collect();
    out.push_str(&r.finish());
    out
}

#[test]
fn a_whole_turn_renders_as_plain_lines_without_a_terminal() {
    let mut r = renderer(Style::plain());
    let out = render_all(&mut r, &whole_turn());
    assert_eq!(
        out,
        concat!(
            "┊ Let me think.\n",
            "┊ A second line.\n",
            "Writing the file.\n",
            "• Write notes.txt  +2 -1\n",
            "✓ Write notes.txt  +2 -1\n",
            "Plan:\n",
            "  [x] read\n",
            "  [~] write\n",
            "· retrying\n",
            "Done.\n",
        )
    );
    assert!(!out.contains('\x1b'));
    assert_eq!(r.usage(), Some((100, 1000)));
}

#[test]
fn styled_output_dims_thoughts_and_keeps_answer_text_unstyled() {
    let mut r = renderer(Style::ansi());
    let out = render_all(&mut r, &whole_turn());
    assert!(out.contains("\x1b[2mLet me think.\x1b[0m\n"), "{out:?}");
    assert!(out.contains("Writing the file.\n"), "{out:?}");
    // Stripping the escape codes gives back the plain rendering.
    let mut plain = renderer(Style::plain());
    assert_eq!(strip_ansi(&out), render_all(&mut plain, &whole_turn()));
}

#[test]
fn hidden_thoughts_leave_no_trace_and_the_toggle_brings_them_back() {
    let mut r = renderer(Style::plain());
    assert!(!r.toggle_thoughts());
    let out = render_all(&mut r, &[thought("secret"), text("answer")]);
    assert_eq!(out, "answer\n");
    assert!(r.toggle_thoughts());
    assert_eq!(r.event(&thought("visible")), "┊ visible");
}

#[test]
fn a_failed_card_shows_its_reason_and_the_diff_is_kept_for_slash_diff() {
    let mut r = renderer(Style::plain());
    assert_eq!(r.last_diff(), None);
    r.event(&AgentEvent::ToolCallStarted {
        card: write_card(ToolStatus::Pending),
    });
    let out = r.event(&AgentEvent::ToolCallUpdated {
        id: ToolCallId::new("c1"),
        update: ToolCardUpdate {
            status: Some(ToolStatus::Failed),
            content: Some(vec![ToolContent::Text {
                text: "\nThe user refused this tool call.\nmore".into(),
            }]),
            ..Default::default()
        },
    });
    assert_eq!(
        out,
        "✗ Write notes.txt  +2 -1 — The user refused this tool call.\n"
    );
    let diff = r.last_diff().unwrap();
    assert!(
        diff.starts_with("--- a/notes.txt\n+++ b/notes.txt\n"),
        "{diff}"
    );
    assert!(diff.contains("\n-two\n+three\n+four"), "{diff}");
}

#[test]
fn the_permission_question_breaks_the_stream_and_the_answer_ends_its_line() {
    let mut r = renderer(Style::plain());
    let mut out = r.event(&text("I will write."));
    out.push_str(&r.permission_question(&write_card(ToolStatus::Pending), Reach::WithinRoots));
    assert_eq!(
        out,
        "I will write.\n? allow Write notes.txt (+2 -1)? [y]es / [a]lways / [n]o / always [N]o "
    );
    assert_eq!(r.answered(Some("y")), "y\n");
    assert_eq!(r.finish(), "");
    r.permission_question(&write_card(ToolStatus::Pending), Reach::WithinRoots);
    assert_eq!(r.answered(None), "");
    assert_eq!(r.line("next"), "next\n");
}

#[test]
fn replayed_user_messages_and_updates_for_unknown_cards_render() {
    let mut r = renderer(Style::plain());
    let user = AgentEvent::UserMessage {
        content: vec![ContentPart::text("fix it")],
    };
    assert_eq!(r.event(&user), "> fix it\n");
    assert_eq!(r.event(&status(ToolStatus::Completed)), "✓ c1\n");
    assert_eq!(r.event(&status(ToolStatus::Completed)), "");
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
