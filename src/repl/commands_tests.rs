use super::*;

fn command(line: &str) -> ReplCommand {
    match parse_line(line) {
        Ok(Entry::Command(c)) => c,
        other => panic!("{line:?} parsed as {other:?}"),
    }
}

#[test]
fn slash_commands_parse_with_and_without_arguments() {
    use ReplCommand::Shared;
    let table: &[(&str, ReplCommand)] = &[
        ("/mode", Shared(SlashCommand::Mode(None))),
        (
            "/mode plan",
            Shared(SlashCommand::Mode(Some("plan".into()))),
        ),
        (
            "  /mode   accept-edits  ",
            Shared(SlashCommand::Mode(Some("accept-edits".into()))),
        ),
        ("/model", Shared(SlashCommand::Model(None))),
        (
            "/model lan:qwen3:8b",
            Shared(SlashCommand::Model(Some("lan:qwen3:8b".into()))),
        ),
        ("/new", ReplCommand::New),
        ("/thoughts", ReplCommand::Thoughts),
        ("/diff", ReplCommand::Diff),
        ("/compact", Shared(SlashCommand::Compact { focus: None })),
        (
            "/compact  the parser  work",
            Shared(SlashCommand::Compact {
                focus: Some("the parser work".into()),
            }),
        ),
        ("/clear", Shared(SlashCommand::Clear)),
        ("/context", Shared(SlashCommand::Context)),
        ("/sessions", ReplCommand::Sessions),
        ("/resume", ReplCommand::Resume(None)),
        (
            "/resume abc-123",
            ReplCommand::Resume(Some("abc-123".into())),
        ),
        ("/help", Shared(SlashCommand::Help)),
        ("/?", Shared(SlashCommand::Help)),
        ("/quit", ReplCommand::Quit),
        ("/exit", ReplCommand::Quit),
    ];
    for (line, expected) in table {
        assert_eq!(&command(line), expected, "{line:?}");
    }
}

#[test]
fn prompts_blanks_and_escaped_slashes() {
    let table: &[(&str, Entry)] = &[
        ("", Entry::Blank),
        ("   \t", Entry::Blank),
        ("hello there\n", Entry::Prompt("hello there".into())),
        ("  fix the bug  ", Entry::Prompt("fix the bug".into())),
        (
            "//mode is a comment",
            Entry::Prompt("/mode is a comment".into()),
        ),
        (
            "/etc/hosts: what is it?",
            Entry::Prompt("/etc/hosts: what is it?".into()),
        ),
        ("/", Entry::Prompt("/".into())),
    ];
    for (line, expected) in table {
        assert_eq!(&parse_line(line).unwrap(), expected, "{line:?}");
    }
}

#[test]
fn bad_commands_are_errors_with_a_reason() {
    let table: &[(&str, CommandError)] = &[
        ("/frobnicate", CommandError::Unknown("frobnicate".into())),
        ("/mode yolo", CommandError::Mode(UnknownMode("yolo".into()))),
        (
            "/mode plan ask",
            SlashError::OneArgument("mode".into()).into(),
        ),
        ("/model a b", SlashError::OneArgument("model".into()).into()),
        ("/new now", SlashError::NoArgument("new".into()).into()),
        ("/diff all", SlashError::NoArgument("diff".into()).into()),
        ("/clear all", SlashError::NoArgument("clear".into()).into()),
    ];
    for (line, expected) in table {
        assert_eq!(&parse_line(line).unwrap_err(), expected, "{line:?}");
    }
    assert!(
        CommandError::Unknown("x".into())
            .to_string()
            .contains("/help")
    );
}

#[test]
fn help_lists_every_command_the_parser_knows() {
    for command in slash::COMMANDS.iter().chain(REPL_COMMANDS) {
        let name = format!("/{}", command.name);
        assert!(
            matches!(parse_line(&name), Ok(Entry::Command(_))),
            "{name} is in /help but does not parse"
        );
    }
}

#[test]
fn permission_answers_distinguish_n_from_capital_n() {
    let table: &[(&str, Option<PermissionAnswer>)] = &[
        ("y", Some(PermissionAnswer::AllowOnce)),
        ("yes\n", Some(PermissionAnswer::AllowOnce)),
        (" a ", Some(PermissionAnswer::AllowAlways)),
        ("always", Some(PermissionAnswer::AllowAlways)),
        ("n", Some(PermissionAnswer::RejectOnce)),
        ("no", Some(PermissionAnswer::RejectOnce)),
        ("N", Some(PermissionAnswer::RejectAlways)),
        ("never", Some(PermissionAnswer::RejectAlways)),
        ("", None),
        ("maybe", None),
        ("yn", None),
    ];
    for (line, expected) in table {
        assert_eq!(parse_answer(line), *expected, "{line:?}");
    }
}
