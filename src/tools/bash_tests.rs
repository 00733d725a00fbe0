use std::time::{Duration, Instant};

use hearth_conversation::TerminalId;
use serde_json::json;

use super::*;
use crate::tools::test_support::{Fixture, process_alive};

/// The pid a command wrote to `pid.txt` (its background `sleep`).
fn pid_from(fx: &Fixture) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(fx.path("pid.txt"))
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid.txt");
        std::thread::sleep(Duration::from_millis(10));
    }
}

async fn assert_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while process_alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} is still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn runs_shows_the_terminal_and_always_releases() {
    let fx = Fixture::new();
    let (prepared, out) = fx
        .call(&Bash, json!({"command": "echo hello; echo err >&2"}))
        .await
        .unwrap();
    assert_eq!(prepared.title, "`echo hello; echo err >&2`");
    assert_eq!(prepared.kind, ToolKind::Execute);
    assert_eq!(prepared.access, Access::Execute);
    let shape = prepared.command.unwrap();
    assert_eq!(shape.programs, ["echo"]);
    assert_eq!(out.for_model, "exit code: 0\noutput:\nhello\nerr\n");
    assert!(!out.failed);
    assert_eq!(out.raw_output["exit_code"], 0);
    assert_eq!(out.raw_output["truncated"], false);
    assert_eq!(
        fx.client.calls(),
        [
            "create_terminal",
            "send tool_call_updated",
            "wait_for_exit",
            "terminal_output",
            "release_terminal"
        ]
    );
    let terminal = TerminalId::new("local-term-1");
    assert_eq!(
        fx.front.events(),
        [AgentEvent::ToolCallUpdated {
            id: fx.call_id.clone(),
            update: ToolCardUpdate {
                status: Some(ToolStatus::InProgress),
                content: Some(vec![ToolContent::Terminal {
                    terminal_id: terminal.clone()
                }]),
                ..ToolCardUpdate::default()
            },
        }]
    );
    assert_eq!(
        out.content,
        [ToolContent::Terminal {
            terminal_id: terminal
        }]
    );
}

#[tokio::test]
async fn failures_and_cwd() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.path("sub")).unwrap();
    let (prepared, out) = fx
        .call(&Bash, json!({"command": "pwd; exit 3", "cwd": "sub"}))
        .await
        .unwrap();
    assert_eq!(prepared.title, "`pwd; exit 3` in sub");
    assert!(out.failed);
    assert_eq!(out.card_update().status, Some(ToolStatus::Failed));
    assert_eq!(out.card_update().content, Some(out.content.clone()));
    assert_eq!(
        out.for_model,
        format!("exit code: 3\noutput:\n{}\n", fx.path("sub").display())
    );
    let (_, out) = fx
        .call(&Bash, json!({"command": "kill -SEGV $$"}))
        .await
        .unwrap();
    assert!(out.failed);
    assert!(
        out.for_model.starts_with("terminated by signal SIGSEGV"),
        "{}",
        out.for_model
    );
    let (_, out) = fx.call(&Bash, json!({"command": "true"})).await.unwrap();
    assert_eq!(out.for_model, "exit code: 0\n(no output)");
}

#[tokio::test]
async fn bad_input_is_told_to_the_model() {
    let fx = Fixture::new();
    let cases = [
        (json!({"command": ""}), "`command` is empty".to_owned()),
        (
            json!({"command": "ls", "cwd": "nope"}),
            format!(
                "cwd {} is not an existing directory",
                fx.path("nope").display()
            ),
        ),
        (
            json!({"command": "ls", "timeout_secs": "5"}),
            "at `timeout_secs`: invalid type: string \"5\", expected u64".into(),
        ),
        (
            json!({"command": ["ls"]}),
            "at `command`: invalid type: sequence".into(),
        ),
        (json!({"cmd": "ls"}), "unknown field `cmd`".into()),
    ];
    for (args, want) in cases {
        let err = fx.model_error(&Bash, args.clone()).await;
        assert!(err.contains(&want), "{args}: {err}");
    }
    assert!(fx.client.calls().is_empty(), "nothing ran");
}

#[tokio::test]
async fn a_hanging_command_is_killed_at_its_timeout() {
    let fx = Fixture::new();
    let started = Instant::now();
    let (_, out) = fx
        .call(
            &Bash,
            json!({"command": "echo started; sleep 30 & echo $! > pid.txt; wait", "timeout_secs": 1}),
        )
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(out.failed);
    assert!(
        out.for_model
            .starts_with("timed out after 1 s; the command was killed\noutput:\nstarted\n"),
        "{}",
        out.for_model
    );
    assert_eq!(out.raw_output["timed_out"], true);
    let calls = fx.client.calls();
    assert_eq!(
        &calls[calls.len() - 3..],
        ["kill_terminal", "terminal_output", "release_terminal"]
    );
    assert_gone(pid_from(&fx)).await;
}

#[tokio::test]
async fn megabytes_of_output_are_capped_with_the_cap_stated() {
    let mut fx = Fixture::new();
    fx.limits.output_bytes = 4096;
    let (_, out) = fx
        .call(
            &Bash,
            json!({"command": "yes 0123456789 | head -c 3000000; echo; echo LAST"}),
        )
        .await
        .unwrap();
    assert!(!out.failed);
    assert!(
        out.for_model.starts_with(
            "exit code: 0\n[output capped: only the last 4096 bytes are shown (cap: 4096 bytes)]\noutput:\n"
        ),
        "{}",
        &out.for_model[..200]
    );
    assert!(out.for_model.ends_with("LAST\n"));
    assert!(out.for_model.len() < 4096 + 200, "{}", out.for_model.len());
    assert_eq!(out.raw_output["truncated"], true);
    assert_eq!(out.raw_output["output_cap_bytes"], 4096);
}

#[tokio::test]
async fn cancel_kills_within_a_second_and_leaves_nothing_running() {
    let fx = Fixture::new();
    let args = json!({"command": "sleep 30 & echo $! > pid.txt; wait"});
    let ctx = fx.ctx();
    let prepared = Bash.prepare(&args, &ctx).await.unwrap();
    let cancel_after_start = async {
        let pid = tokio::task::spawn_blocking({
            let path = fx.path("pid.txt");
            move || {
                let deadline = Instant::now() + Duration::from_secs(5);
                loop {
                    if let Some(pid) = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| t.trim().parse::<u32>().ok())
                    {
                        return pid;
                    }
                    assert!(Instant::now() < deadline);
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        })
        .await
        .unwrap();
        assert!(process_alive(pid));
        fx.cancel.cancel();
        (pid, Instant::now())
    };
    let (result, (pid, cancelled_at)) =
        tokio::join!(Bash.run(&args, &prepared, &ctx), cancel_after_start);
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(1),
        "{:?}",
        cancelled_at.elapsed()
    );
    assert_eq!(result.unwrap_err(), ToolError::Cancelled);
    let calls = fx.client.calls();
    assert_eq!(
        &calls[calls.len() - 2..],
        ["kill_terminal", "release_terminal"]
    );
    assert_gone(pid).await;
}
