use std::time::{Duration, Instant};

use super::*;
use crate::tools::test_support::{RecordingFront, process_alive};

fn ops() -> LocalClientOps {
    LocalClientOps::new(RecordingFront::new())
}

fn request(command: &str, cwd: &Path, limit: u64) -> TerminalRequest {
    TerminalRequest {
        command: command.into(),
        cwd: cwd.to_path_buf(),
        env: vec![("HEARTH_TEST_VAR".into(), "from-env".into())],
        output_byte_limit: limit,
    }
}

#[test]
fn tail_buffer_keeps_the_end_at_a_char_boundary() {
    let mut buf = TailBuffer::new(4);
    buf.push(b"ab");
    assert_eq!((buf.text().as_str(), buf.truncated), ("ab", false));
    buf.push(b"cdef");
    assert_eq!((buf.text().as_str(), buf.truncated), ("cdef", true));
    let mut buf = TailBuffer::new(4);
    buf.push("xxé€".as_bytes()); // é is 2 bytes, € 3: the cut lands inside é
    assert_eq!(buf.text(), "€");
    let mut buf = TailBuffer::new(3);
    buf.push(b"0123456789");
    assert_eq!(buf.text(), "789");
}

#[tokio::test]
async fn files_round_trip_and_errors_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let ops = ops();
    let path = dir.path().join("a.txt");
    ops.write_text_file(&path, "one\ntwo\n").await.unwrap();
    assert_eq!(
        ops.read_text_file(&path, None, None).await.unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(
        ops.read_text_file(&path, Some(2), Some(1)).await.unwrap(),
        "two\n"
    );
    let missing = dir.path().join("missing.txt");
    assert_eq!(
        ops.read_text_file(&missing, None, None).await,
        Err(ClientOpsError::NotFound(missing))
    );
    std::fs::write(dir.path().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
    let err = ops
        .read_text_file(&dir.path().join("bin"), None, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not UTF-8"), "{err}");
}

#[tokio::test]
async fn terminal_runs_with_env_and_cwd_and_reports_exit() {
    let dir = tempfile::tempdir().unwrap();
    let ops = ops();
    let id = ops
        .create_terminal(request(
            "echo $HEARTH_TEST_VAR; pwd; echo oops >&2; exit 3",
            dir.path(),
            1024,
        ))
        .await
        .unwrap();
    let status = ops.wait_for_exit(&id).await.unwrap();
    assert_eq!(status.exit_code, Some(3));
    let out = ops.terminal_output(&id).await.unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert!(out.output.contains("from-env\n"), "{out:?}");
    assert!(
        out.output.contains(&format!("{}\n", cwd.display())),
        "{out:?}"
    );
    assert!(out.output.contains("oops\n"), "{out:?}");
    assert!(!out.truncated);
    assert_eq!(out.exit_status, Some(status));
    ops.release_terminal(&id).await.unwrap();
    assert!(
        ops.terminal_output(&id).await.is_err(),
        "released ids are invalid"
    );
}

#[tokio::test]
async fn terminal_output_is_capped_to_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ops = ops();
    // About 5 MB of output, ending in a marker.
    let id = ops
        .create_terminal(request(
            "yes 0123456789abcdef | head -c 5000000; echo; echo END",
            dir.path(),
            1000,
        ))
        .await
        .unwrap();
    ops.wait_for_exit(&id).await.unwrap();
    let out = ops.terminal_output(&id).await.unwrap();
    assert!(out.truncated);
    assert!(out.output.len() <= 1000, "{}", out.output.len());
    assert!(out.output.ends_with("END\n"));
    ops.release_terminal(&id).await.unwrap();
}

/// Starts a command that leaves a background grandchild and reports its pid.
async fn start_with_grandchild(ops: &LocalClientOps, cwd: &Path) -> (TerminalId, u32) {
    let id = ops
        .create_terminal(request("sleep 30 & echo $!; wait", cwd, 1024))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = ops.terminal_output(&id).await.unwrap();
        if let Ok(pid) = out.output.trim().parse::<u32>() {
            assert!(process_alive(pid));
            return (id, pid);
        }
        assert!(Instant::now() < deadline, "no pid printed: {out:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
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
async fn kill_stops_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ops = ops();
    let (id, grandchild) = start_with_grandchild(&ops, dir.path()).await;
    ops.kill_terminal(&id).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(2), ops.wait_for_exit(&id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.signal.as_deref(), Some("SIGKILL"));
    assert_gone(grandchild).await;
    ops.release_terminal(&id).await.unwrap();
}

#[tokio::test]
async fn release_and_drop_leave_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let ops = ops();
    let (id, released) = start_with_grandchild(&ops, dir.path()).await;
    ops.release_terminal(&id).await.unwrap();
    assert_gone(released).await;
    let (_id, dropped) = start_with_grandchild(&ops, dir.path()).await;
    drop(ops);
    assert_gone(dropped).await;
}

#[tokio::test]
async fn permission_and_events_go_to_the_front_end() {
    let front = RecordingFront::new();
    let ops = LocalClientOps::new(front.clone());
    let card = hearth_conversation::ToolCard {
        id: hearth_conversation::ToolCallId::new("c1"),
        title: "t".into(),
        kind: hearth_conversation::ToolKind::Other,
        status: hearth_conversation::ToolStatus::Pending,
        locations: vec![],
        content: vec![],
        raw_input: serde_json::Value::Null,
    };
    assert_eq!(
        ops.request_permission(&card, hearth_conversation::Reach::WithinRoots)
            .await,
        PermissionAnswer::AllowOnce
    );
    let event = AgentEvent::AgentText { text: "hi".into() };
    ops.send(event.clone());
    assert_eq!(front.events(), vec![event]);
}
