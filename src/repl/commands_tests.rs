use super::*;

fn command(line: &str) -> SlashCommand {
    match parse_line(line) {
        Ok(Entry::Command(c)) => c,
        other => panic!("{line:?} parsed as {other:?}"),
    }
}

#[test]
fn slash_commands_parse_with_and_without_arguments() {
    let table: &[(&str, SlashCommand)] = &[
        ("/mode", SlashCommand::Mode(None)),
        ("/mode plan", SlashCommand::Mode(Some(Mode::Plan))),
        (
            "  /mode   accept-edits  ",
            SlashCommand::Mode(Some(Mode::AcceptEdits)),
        ),
        ("/model", SlashCommand::Model(None)),
        (
            "/model lan:qwen3:8b",
            SlashCommand::Model(Some("lan:qwen3:8b".into())),
        ),
        ("/new", SlashCommand::New),
        ("/thoughts", SlashCommand::Thoughts),
        ("/diff", SlashCommand::Diff),
        ("/compact", SlashCommand::Compact(None)),
        (
            "/compact  the parser  work",
            SlashCommand::Compact(Some("the parser work".into())),
        ),
        ("/clear", SlashCommand::Clear),
        ("/context", SlashCommand::Context),
        ("/sessions", SlashCommand::Sessions),
        ("/resume", SlashCommand::Resume(None)),
        (
            "/resume abc-123",
            SlashCommand::Resume(Some("abc-123".into())),
        ),
        ("/help", SlashCommand::Help),
        ("/?", SlashCommand::Help),
        ("/quit", SlashCommand::Quit),
        ("/exit", SlashCommand::Quit),
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
        ("/mode plan ask", CommandError::OneArgument("mode")),
        ("/model a b", CommandError::OneArgument("model")),
        ("/new now", CommandError::NoArgument("new")),
        ("/diff all", CommandError::NoArgument("diff")),
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
    for (usage, _) in COMMANDS {
        let name = usage.split_whitespace().next().unwrap();
        assert!(
            parse_line(name).is_ok(),
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
