//! The security review's findings (issue 16), each replayed against the real binary: a
//! scripted hostile model on a loopback server, `hearth run` as a user would start it. Every
//! test here failed on the main branch before the fixes; the editor-side ones are in
//! `security_editor.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hearth_testkit::{FakeServer, Reply, Step};
use serde_json::{Value, json};

use crate::common::hearth_bin::{hearth_bin, write_config};
use crate::common::model_requests::{chat_requests, tool_message_by_name};

/// A project, a home beside it (with a `.bashrc`), an outside directory, and a config.
pub struct Ws {
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub config: PathBuf,
}

impl Ws {
    pub fn new(server: &FakeServer) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (cwd, home) = (base.join("work"), base.join("home"));
        for d in [&cwd, &home, &base.join("outside")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join(".bashrc"), "# mine\n").unwrap();
        let config = write_config(&home, &[("fake", &server.base_url(), "m")]);
        Ws {
            _dir: dir,
            base,
            cwd,
            home,
            config,
        }
    }

    /// `hearth run ARGS` here, started but not waited for.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(hearth_bin())
            .arg("--config")
            .arg(&self.config)
            .arg("run")
            .args(args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", self.home.join("data"))
            .env("RUST_LOG", "warn")
            .env_remove("HEARTH_CONFIG")
            .env_remove("HEARTH_BASE_URL")
            .env_remove("HEARTH_DATA_DIR")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `hearth run ARGS` here, to its end (on a blocking thread: the fake server needs the
    /// runtime meanwhile). Returns the exit code, stdout and stderr.
    pub async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let child = self.spawn(args);
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Every file under the data directory, with its contents.
    pub fn stored(&self) -> Vec<(PathBuf, String)> {
        walk(&self.home.join("data"))
            .into_iter()
            .filter(|p| p.is_file())
            .map(|p| {
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
                (p, text)
            })
            .collect()
    }
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.clone());
            if path.is_dir() {
                out.extend(walk(&path));
            }
        }
    }
    out
}

pub fn call(id: &str, tool: &str, args: Value) -> Reply {
    Reply::tool_call(id, tool, &[&args.to_string()])
}

/// Item 1: `--allow-writes` (like accept-edits) covers the project only. Writes to the home
/// directory, a sibling directory and through a link out of the project are refused headless;
/// the write inside goes through.
#[tokio::test]
async fn allow_writes_covers_the_project_only() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    std::os::unix::fs::symlink(ws.base.join("outside"), ws.cwd.join("link")).unwrap();
    let bashrc = ws.home.join(".bashrc").display().to_string();
    let writes = [
        ("w1", "../outside/escape.txt"),
        ("w2", bashrc.as_str()),
        ("w3", "link/through.txt"),
        ("w4", "inside.txt"),
    ];
    for (id, path) in writes {
        server.push(call(
            id,
            "write_file",
            json!({"path": path, "content": "pwned"}),
        ));
    }
    server.push(Reply::text(&["done"]));
    let (code, _, stderr) = ws.run(&["-p", "write", "--allow-writes"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.cwd.join("inside.txt")).unwrap(),
        "pwned"
    );
    assert_eq!(
        std::fs::read_to_string(ws.home.join(".bashrc")).unwrap(),
        "# mine\n"
    );
    assert!(!ws.base.join("outside/escape.txt").exists());
    assert!(!ws.base.join("outside/through.txt").exists());
    assert_eq!(stderr.matches("outside the project").count(), 3, "{stderr}");
    // The refusal names the real target of the write through the link.
    assert!(stderr.contains("through a symlink"), "{stderr}");
}

/// Item 2: reading outside the project is not free: headless, with no one to ask, it is
/// refused, and the model never sees the file.
#[tokio::test]
async fn reads_outside_the_project_ask_and_are_refused_headless() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    std::fs::create_dir_all(ws.home.join(".ssh")).unwrap();
    std::fs::write(ws.home.join(".ssh/id_rsa"), "PRIVATE-KEY-BYTES\n").unwrap();
    server.push(call("r1", "read_file", json!({"path": "~/.ssh/id_rsa"})));
    server.push(Reply::text(&["done"]));
    let (code, _, stderr) = ws
        .run(&["-p", "read my key", "--allow-writes", "--allow-commands"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let bodies = chat_requests(&server);
    let told = tool_message_by_name(&bodies[1].body, "read_file");
    assert!(told.contains("rejected"), "{told}");
    assert!(!bodies[1].body.to_string().contains("PRIVATE-KEY-BYTES"));
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Item 4: a FIFO, a device and a huge file cost a clear error or a bounded slice, and the
/// turn ends promptly (it used to hang for good on the FIFO).
#[tokio::test]
async fn special_files_and_huge_files_cannot_hang_or_exhaust_a_turn() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    mkfifo(&ws.cwd.join("pipe"));
    let sparse = std::fs::File::create(ws.cwd.join("sparse.bin")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    std::fs::write(ws.cwd.join("huge.log"), "a log line\n".repeat(2 << 20)).unwrap();
    let calls = [
        call("c1", "read_file", json!({"path": "pipe"})),
        call("c2", "write_file", json!({"path": "pipe", "content": "x"})),
        call(
            "c3",
            "edit_file",
            json!({"path": "/dev/zero", "edits": [{"old_text": "a", "new_text": "b"}]}),
        ),
        call("c4", "grep", json!({"pattern": "zzz"})),
        call(
            "c5",
            "read_file",
            json!({"path": "huge.log", "offset": 1, "limit": 3}),
        ),
        call(
            "c6",
            "write_file",
            json!({"path": "huge.log", "content": "x"}),
        ),
        call(
            "c7",
            "read_file",
            json!({"path": "sparse.bin", "offset": 1, "limit": 3}),
        ),
    ];
    for reply in calls {
        server.push(reply);
    }
    server.push(Reply::text(&["done"]));
    let started = Instant::now();
    let (code, _, stderr) = ws
        .run(&["-p", "go", "--mode", "bypass", "--timeout", "60"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let bodies = chat_requests(&server);
    let last = &bodies.last().unwrap().body;
    let ids = crate::common::model_requests::call_ids(last);
    let told = |label: &str| {
        let index: usize = label[1..].parse().unwrap();
        crate::common::model_requests::tool_message(last, &ids[index - 1])
    };
    assert!(told("c1").contains("FIFO"), "{}", told("c1"));
    assert!(told("c2").contains("FIFO"), "{}", told("c2"));
    assert!(told("c3").contains("device"), "{}", told("c3"));
    assert!(told("c5").contains("lines 1-3"), "{}", told("c5"));
    assert!(told("c6").contains("too large"), "{}", told("c6"));
    assert!(told("c7").contains("binary"), "{}", told("c7"));
    assert_eq!(
        std::fs::metadata(ws.cwd.join("huge.log")).unwrap().len(),
        22 << 20
    );
}

/// Item 5: a server that sends one 20 MB event ends the turn with an error naming the limit,
/// quickly, and the session is still on disk.
#[tokio::test]
async fn a_hostile_server_cannot_exhaust_memory() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    let big = format!("data: {}\n\n", "x".repeat(20 << 20));
    server.push(Reply::Sse(Step::every(big.as_bytes(), 1 << 20, None)));
    let started = Instant::now();
    let (code, _, stderr) = ws.run(&["-p", "hi"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("fake"), "names the endpoint: {stderr}");
    assert!(stderr.contains("sent too much"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        ws.stored()
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "jsonl"))
    );
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Item 7: SIGTERM ends hearth and everything its commands started.
#[tokio::test]
async fn sigterm_leaves_no_command_running() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    let command = "sleep 300 & echo $! > bg.pid; sleep 300";
    server.push(call("b1", "bash", json!({"command": command})));
    server.push(Reply::text(&["done"]));
    let child = ws.spawn(&["-p", "run it", "--allow-commands"]);
    let pid_file = ws.cwd.join("bg.pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pid_file.exists()
        || std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .is_empty()
    {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let background: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(background));
    let hearth = i32::try_from(child.id()).unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(hearth, libc::SIGTERM) };
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(143));
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(background) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(background), "the background command survived hearth");
}

/// Item 9: escape sequences in model text are spelled out on the terminal, in `hearth run`
/// and in `hearth sessions show`.
#[tokio::test]
async fn model_text_cannot_drive_the_terminal() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    let hostile = "hi\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rthere";
    server.push(Reply::text(&[hostile]));
    let (code, stdout, stderr) = ws.run(&["-p", "hi"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\r'),
        "{stdout:?}"
    );
    assert!(stdout.contains("\\e]52"), "{stdout:?}");
    let (id, _) = ws
        .stored()
        .into_iter()
        .find(|(p, _)| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let id = id.file_stem().unwrap().to_string_lossy().into_owned();
    let shown = Command::new(hearth_bin())
        .args(["sessions", "show", &id])
        .env_remove("HEARTH_CONFIG")
        .env_remove("HEARTH_DATA_DIR")
        .env("HOME", &ws.home)
        .env("XDG_DATA_HOME", ws.home.join("data"))
        .current_dir(&ws.cwd)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("hi") && !shown.contains('\u{1b}'),
        "{shown:?}"
    );
}

/// Item 10: a server that echoes the key and a custom header in its 401, and a config file
/// with a broken line next to the key: no secret reaches the terminal or the stored session.
#[tokio::test]
async fn secrets_never_reach_errors_logs_or_sessions() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    let (key, token) = ("sk-KEY-0123456789abcdef", "tok-HEADER-0123456789");
    let url = server
        .base_url()
        .replace("http://", "http://ann:pw-URL-0123456789@");
    std::fs::write(
        &ws.config,
        format!(
            "[[endpoints]]\nname = \"fake\"\nbase_url = \"{url}\"\nmodel = \"m\"\n\
             api_key = \"{key}\"\ntool_format = \"native\"\n\
             [endpoints.headers]\nX-Token = \"{token}\"\n"
        ),
    )
    .unwrap();
    server.push(Reply::error(
        401,
        &format!("bad key {key}; header X-Token: {token}; url {url}"),
    ));
    let (code, stdout, stderr) = ws.run(&["-p", "hi", "--output", "json"]).await;
    assert_ne!(code, 0);
    for secret in [key, token, "pw-URL-0123456789"] {
        assert!(
            !stderr.contains(secret) && !stdout.contains(secret),
            "{secret}: {stderr}"
        );
        for (path, text) in ws.stored() {
            assert!(!text.contains(secret), "{secret} in {}", path.display());
        }
    }
    // A broken config line beside the key: the error says where, never the key.
    std::fs::write(
        &ws.config,
        format!("[[endpoints]]\nname = \"x\"\napi_key = \"{key}\" oops\n"),
    )
    .unwrap();
    let (code, _, stderr) = ws.run(&["-p", "hi"]).await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("line 3") && !stderr.contains(key),
        "{stderr}"
    );
}

/// Item 11: what hearth stores is private to the user.
#[tokio::test]
async fn sessions_are_private_files_in_private_directories() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    server.push(Reply::text(&["hello"]));
    let (code, _, stderr) = ws.run(&["-p", "hi"]).await;
    assert_eq!(code, 0, "{stderr}");
    let data = ws.home.join("data/hearth");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    let all = walk(&data);
    assert!(all.iter().any(|p| p.is_file()), "nothing stored");
    for path in all {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&path), want, "{}", path.display());
    }
}

/// Item 12: a session being written by one process cannot be opened by another.
#[tokio::test]
async fn one_session_has_one_writer() {
    let server = FakeServer::start().await.unwrap();
    let ws = Ws::new(&server);
    server.push(Reply::text(&["a session exists"]));
    let (code, _, stderr) = ws.run(&["-p", "zero"]).await;
    assert_eq!(code, 0, "{stderr}");
    server.push(call(
        "b1",
        "bash",
        json!({"command": "touch started; sleep 5"}),
    ));
    server.push(Reply::text(&["first done"]));
    let first = ws.spawn(&["-p", "one", "--continue", "--allow-commands"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ws.cwd.join("started").exists() {
        assert!(
            Instant::now() < deadline,
            "the first run never started its command"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (code, _, stderr) = ws.run(&["-p", "two", "--continue"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("another hearth process"), "{stderr}");
    let out = tokio::task::spawn_blocking(move || first.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
