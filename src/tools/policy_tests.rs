use hearth_conversation::{PermissionAnswer, Reach, UnknownMode};
use serde_json::json;

use super::*;
use crate::tools::test_support::Fixture;
use crate::tools::{CommandShape, Resolved, Roots};
use crate::tools::{Prepared, ToolError, ToolRegistry};

/// What happens to a call, end to end: offered or not, then the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Allowed,
    Asked,
    Refused,
    /// Not offered to the model at all (and refused if called anyway).
    Hidden,
}

fn outcome(decision: &Decision) -> Outcome {
    match decision {
        Decision::Allow => Outcome::Allowed,
        Decision::Ask(_) => Outcome::Asked,
        Decision::Deny(_) => Outcome::Refused,
    }
}

struct Env {
    fx: Fixture,
    plan: Resolved,
    roots: Roots,
}

impl Env {
    fn new() -> Self {
        let fx = Fixture::new();
        let data = fx.root.parent().unwrap().join("data/hearth");
        let plan = Resolved::from_absolute(&plan_dir(&data, &fx.root)).unwrap();
        let cwd = Resolved::from_absolute(&fx.root).unwrap();
        let roots = Roots::new(cwd, plan.clone(), Vec::new());
        fx.write("src/main.rs", "fn main() {}\n");
        Self { fx, plan, roots }
    }

    async fn prepare(&self, tool: &str, args: serde_json::Value) -> Result<Prepared, ToolError> {
        let registry = ToolRegistry::builtin();
        let handler = registry.get(tool).unwrap();
        handler.prepare(&args, &self.fx.ctx()).await
    }

    async fn judge(&self, mode: Mode, tool: &str, args: serde_json::Value) -> Outcome {
        let registry = ToolRegistry::builtin();
        let prepared = self.prepare(tool, args).await.unwrap();
        let decision = decide(
            mode,
            &prepared.subject(tool),
            &self.roots,
            &AlwaysRules::default(),
        );
        // What the model is offered is what production sends: the specs for the mode.
        if !registry.specs_for_mode(mode).iter().any(|s| s.name == tool) {
            assert_eq!(
                outcome(&decision),
                Outcome::Refused,
                "{tool} hidden but not refused"
            );
            return Outcome::Hidden;
        }
        outcome(&decision)
    }
}

#[tokio::test]
async fn every_mode_times_every_tool() {
    use Outcome::{Allowed as A, Asked as Q, Hidden as H, Refused as R};
    let env = Env::new();
    let plan_file = env.plan.path().join("plan.md");
    let calls: Vec<(&str, serde_json::Value, [Outcome; 4])> = vec![
        // tool, args, [ask, accept-edits, plan, bypass]
        ("read_file", json!({"path": "src/main.rs"}), [A, A, A, A]),
        ("list_dir", json!({}), [A, A, A, A]),
        ("glob", json!({"pattern": "*.rs"}), [A, A, A, A]),
        ("grep", json!({"pattern": "main"}), [A, A, A, A]),
        (
            "edit_file",
            json!({"path": "src/main.rs", "edits": [{"old_text": "main", "new_text": "start"}]}),
            [Q, A, R, A],
        ),
        (
            "write_file",
            json!({"path": "new.rs", "content": "x"}),
            [Q, A, R, A],
        ),
        (
            "write_file",
            json!({"path": plan_file, "content": "# Plan"}),
            [Q, A, A, A],
        ),
        ("bash", json!({"command": "cargo test"}), [Q, Q, H, A]),
        (
            "update_plan",
            json!({"entries": [{"content": "a", "status": "pending"}]}),
            [A, A, A, A],
        ),
    ];
    let registry = ToolRegistry::builtin();
    let covered: std::collections::BTreeSet<&str> = calls.iter().map(|c| c.0).collect();
    let all: std::collections::BTreeSet<&str> = registry.iter().map(|t| t.name()).collect();
    assert_eq!(covered, all, "every built-in tool is in the table");
    for (tool, args, expected) in &calls {
        for (mode, want) in Mode::ALL.into_iter().zip(expected) {
            let got = env.judge(mode, tool, args.clone()).await;
            assert_eq!(got, *want, "{mode} × {tool} {args}");
        }
    }
}

#[test]
fn plan_mode_hides_only_commands() {
    let registry = ToolRegistry::builtin();
    for mode in Mode::ALL {
        let names: Vec<String> = registry
            .specs_for_mode(mode)
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(
            names.contains(&"bash".to_owned()),
            mode != Mode::Plan,
            "{mode}"
        );
        assert_eq!(
            names.len(),
            if mode == Mode::Plan { 7 } else { 8 },
            "{mode}"
        );
    }
}

/// Plan-mode escape attempts: each is refused (with a reason, or a resolution error) and
/// nothing is written; the legitimate writes go through.
#[tokio::test]
async fn plan_mode_escape_attempts() {
    let env = Env::new();
    let plan = env.plan.path().to_path_buf();
    let base = env.fx.root.parent().unwrap().to_path_buf();
    let outside = base.join("outside");
    std::fs::create_dir_all(&plan).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim.txt"), "keep").unwrap();
    std::os::unix::fs::symlink(&outside, plan.join("link_out")).unwrap();
    std::os::unix::fs::symlink(outside.join("victim.txt"), plan.join("file_link.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("created.md"), plan.join("dangling.md")).unwrap();
    std::os::unix::fs::symlink("../../../../outside", plan.join("rel_link")).unwrap();
    let p = |s: &str| format!("{}/{s}", plan.display());
    let cases: Vec<(String, bool)> = vec![
        (p("plan.md"), true),
        (p("sub/new/deep.md"), true),
        (p("./a/../b.md"), true),
        (p("../escape.md"), false),
        (p("../../../../../../etc/hosts_copy"), false),
        (format!("{}/abs.md", outside.display()), false),
        ("src/main.rs".into(), false),
        ("notes.md".into(), false),
        (p("link_out/x.md"), false),
        (p("file_link.md"), false),
        (p("dangling.md"), false),
        (p("rel_link/y.md"), false),
        (format!("{}-evil/x.md", plan.display()), false),
        ("~/x.md".into(), false),
        ("~/../outside/t.md".into(), false),
        ("$HOME/.bashrc".into(), false),
        ("${HOME}/x.md".into(), false),
        ("~root/x.md".into(), false),
    ];
    for (path, allowed) in &cases {
        let args = json!({"path": path, "content": "pwned"});
        let decision = match env.prepare("write_file", args.clone()).await {
            Ok(prepared) => decide(
                Mode::Plan,
                &prepared.subject("write_file"),
                &env.roots,
                &AlwaysRules::default(),
            ),
            Err(ToolError::Model(reason)) => Decision::Deny(reason),
            Err(other) => panic!("{path}: {other:?}"),
        };
        match (&decision, allowed) {
            (Decision::Allow, true) => {
                let handler = ToolRegistry::builtin();
                let handler = handler.get("write_file").unwrap();
                let ctx = env.fx.ctx();
                let prepared = handler.prepare(&args, &ctx).await.unwrap();
                handler.run(&args, &prepared, &ctx).await.unwrap();
                let written = prepared.paths[0].real().to_path_buf();
                assert!(written.starts_with(env.plan.real()), "{path} → {written:?}");
            }
            (Decision::Deny(reason), false) => assert!(!reason.is_empty(), "{path}"),
            other => panic!("{path}: unexpected {other:?}"),
        }
    }
    // Nothing landed outside the plan directory.
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "keep"
    );
    let mut outside_entries: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    outside_entries.sort();
    assert_eq!(outside_entries, ["victim.txt"]);
    assert!(!base.join("escape.md").exists());
    assert!(!env.fx.home.join("x.md").exists());
    assert_eq!(env.fx.read("src/main.rs"), "fn main() {}\n");
    assert!(!env.fx.path("notes.md").exists());
}

#[tokio::test]
async fn plan_mode_allows_home_when_home_is_the_plan_dir() {
    let env = Env::new();
    std::fs::create_dir_all(env.plan.path()).unwrap();
    let mut ctx = env.fx.ctx();
    ctx.home = Some(env.plan.path());
    let handler = ToolRegistry::builtin();
    let handler = handler.get("write_file").unwrap();
    let args = json!({"path": "~/notes.md", "content": "x"});
    let prepared = handler.prepare(&args, &ctx).await.unwrap();
    let decision = decide(
        Mode::Plan,
        &prepared.subject("write_file"),
        &env.roots,
        &AlwaysRules::default(),
    );
    assert_eq!(decision, Decision::Allow);
}

#[tokio::test]
async fn plan_mode_refuses_commands_and_external_writes_without_paths() {
    let env = Env::new();
    let prepared = env.prepare("bash", json!({"command": "ls"})).await.unwrap();
    let rules = AlwaysRules {
        allow_programs: ["ls".to_owned()].into(),
        ..AlwaysRules::default()
    };
    // "Always allow" does not lift plan mode.
    let d = decide(Mode::Plan, &prepared.subject("bash"), &env.roots, &rules);
    assert!(
        matches!(d, Decision::Deny(ref r) if r.contains("Plan mode")),
        "{d:?}"
    );
    let mcp = Subject {
        tool: "server__deploy",
        access: Access::Write,
        paths: &[],
        command: None,
    };
    assert!(matches!(
        decide(Mode::Plan, &mcp, &env.roots, &rules),
        Decision::Deny(_)
    ));
    assert_eq!(
        decide(Mode::Ask, &mcp, &env.roots, &rules),
        Decision::Ask(Reach::WithinRoots)
    );
}

fn nowhere_roots() -> Roots {
    let resolved = |p: &str| Resolved::from_absolute(Path::new(p)).unwrap();
    Roots::new(
        resolved("/nonexistent/proj"),
        resolved("/nonexistent/plan"),
        Vec::new(),
    )
}

fn command(line: &str) -> CommandShape {
    CommandShape::of(line)
}

fn bash(shape: &CommandShape) -> Subject<'_> {
    Subject {
        tool: "bash",
        access: Access::Execute,
        paths: &[],
        command: Some(shape),
    }
}

#[test]
fn always_rules_for_commands() {
    let plan = nowhere_roots();
    let mut rules = AlwaysRules::default();
    let subject = bash;
    let (cargo, cargo_tail) = (command("cargo test"), command("cargo test | tail"));
    let (rm, unkeyable) = (command("rm -rf target"), command("echo $(id)"));
    let (cargo, cargo_tail, rm, unkeyable) = (&cargo, &cargo_tail, &rm, &unkeyable);
    assert_eq!(
        decide(Mode::Ask, &subject(cargo), &plan, &rules),
        Decision::Ask(Reach::WithinRoots)
    );
    rules.remember(subject(cargo).rule_key(), PermissionAnswer::AllowAlways);
    assert_eq!(
        decide(Mode::Ask, &subject(cargo), &plan, &rules),
        Decision::Allow
    );
    assert_eq!(
        decide(Mode::AcceptEdits, &subject(cargo), &plan, &rules),
        Decision::Allow
    );
    // A pipeline is not a plain invocation: it asks, whatever was allowed.
    assert_eq!(
        decide(Mode::Ask, &subject(cargo_tail), &plan, &rules),
        Decision::Ask(Reach::WithinRoots)
    );
    // Unkeyable lines are never remembered, so they always ask.
    rules.remember(subject(unkeyable).rule_key(), PermissionAnswer::AllowAlways);
    assert_eq!(
        decide(Mode::Ask, &subject(unkeyable), &plan, &rules),
        Decision::Ask(Reach::WithinRoots)
    );
    // Reject always wins, in every mode, bypass included.
    rules.remember(subject(rm).rule_key(), PermissionAnswer::RejectAlways);
    for mode in Mode::ALL {
        assert_eq!(
            decide(mode, &subject(rm), &plan, &rules),
            Decision::Deny(USER_REJECTED_ALWAYS.into()),
            "{mode}"
        );
    }
    // Once answers change nothing.
    let before = rules.clone();
    rules.remember(subject(cargo_tail).rule_key(), PermissionAnswer::AllowOnce);
    rules.remember(subject(cargo_tail).rule_key(), PermissionAnswer::RejectOnce);
    assert_eq!(rules, before);
    // Persisted and restored unchanged.
    let json = serde_json::to_string(&rules).unwrap();
    assert_eq!(serde_json::from_str::<AlwaysRules>(&json).unwrap(), rules);
}

#[test]
fn always_rules_for_tools() {
    let plan = nowhere_roots();
    let mut rules = AlwaysRules::default();
    let write = Subject {
        tool: "write_file",
        access: Access::Write,
        paths: &[],
        command: None,
    };
    rules.remember(write.rule_key(), PermissionAnswer::AllowAlways);
    assert_eq!(decide(Mode::Ask, &write, &plan, &rules), Decision::Allow);
    rules.remember(write.rule_key(), PermissionAnswer::RejectAlways);
    assert!(rules.allow_tools.is_empty());
    assert!(matches!(
        decide(Mode::AcceptEdits, &write, &plan, &rules),
        Decision::Deny(_)
    ));
}

#[test]
fn mode_ids_round_trip() {
    let ids = ["ask", "accept-edits", "plan", "bypass"];
    for (mode, id) in Mode::ALL.into_iter().zip(ids) {
        assert_eq!(mode.id(), id);
        assert_eq!(id.parse::<Mode>().unwrap(), mode);
        assert_eq!(mode.to_string(), id);
        assert_eq!(serde_json::to_value(mode).unwrap(), json!(id));
        assert_eq!(serde_json::from_value::<Mode>(json!(id)).unwrap(), mode);
        assert!(!mode.name().is_empty() && !mode.description().is_empty());
    }
    assert_eq!("Plan".parse::<Mode>(), Err(UnknownMode("Plan".into())));
    assert_eq!(Mode::default(), Mode::Ask);
}

#[test]
fn plan_dir_is_stable_and_per_project() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("work/my proj")).unwrap();
    std::fs::create_dir_all(root.join("other/my proj")).unwrap();
    std::os::unix::fs::symlink(root.join("work"), root.join("alias")).unwrap();
    let data = Path::new("/data/hearth");
    let a = plan_dir(data, &root.join("work/my proj"));
    assert_eq!(a, plan_dir(data, &root.join("work/my proj")));
    assert_eq!(
        a,
        plan_dir(data, &root.join("alias/my proj")),
        "symlinked cwd, same project"
    );
    assert_ne!(a, plan_dir(data, &root.join("other/my proj")));
    let hash = fnv1a64(root.join("work/my proj").as_os_str().as_encoded_bytes());
    assert_eq!(a, data.join(format!("plans/my_proj-{hash:016x}")));
}

#[test]
fn plan_mode_prompt_names_the_dir_and_ends_with_a_menu() {
    let text = plan_mode_prompt(Path::new("/d/plans/p-1"));
    assert!(text.contains("/d/plans/p-1"));
    assert!(!text.contains("{plan_dir}"));
    let tail: Vec<&str> = text.trim_end().lines().rev().take(3).collect();
    assert!(
        tail.iter().all(|l| l.starts_with(['1', '2', '3'])),
        "{tail:?}"
    );
    assert!(text.contains("accept-edits") && text.contains("Keep planning"));
}

/// The confinement rule, mode by mode: inside the roots reads are free and writes follow the
/// mode; outside them (a sibling directory, the home directory, a link out of the project)
/// everything asks but in bypass, plan mode refuses the writes, and no "always" reaches there.
#[tokio::test]
async fn reads_and_writes_outside_the_roots_ask_in_every_mode_but_bypass() {
    use Outcome::{Allowed as A, Asked as Q, Refused as R};
    let env = Env::new();
    let base = env.fx.root.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(base.join("outside"), env.fx.path("link_out")).unwrap();
    env.fx.write("notes.txt", "n");
    let outside_file = base.join("outside/secret.txt").display().to_string();
    let calls: Vec<(&str, serde_json::Value, [Outcome; 4])> = vec![
        // tool, args, [ask, accept-edits, plan, bypass]
        ("read_file", json!({"path": "notes.txt"}), [A, A, A, A]),
        ("read_file", json!({"path": outside_file}), [Q, Q, Q, A]),
        (
            "read_file",
            json!({"path": "../outside/secret.txt"}),
            [Q, Q, Q, A],
        ),
        (
            "read_file",
            json!({"path": "link_out/secret.txt"}),
            [Q, Q, Q, A],
        ),
        ("read_file", json!({"path": "~/.bashrc"}), [Q, Q, Q, A]),
        ("list_dir", json!({"path": "/"}), [Q, Q, Q, A]),
        (
            "grep",
            json!({"pattern": "x", "path": "/etc"}),
            [Q, Q, Q, A],
        ),
        ("glob", json!({"pattern": "*", "path": "~"}), [Q, Q, Q, A]),
        (
            "write_file",
            json!({"path": "new.txt", "content": "x"}),
            [Q, A, R, A],
        ),
        (
            "write_file",
            json!({"path": "~/.bashrc", "content": "x"}),
            [Q, Q, R, A],
        ),
        (
            "write_file",
            json!({"path": "../outside/x", "content": "x"}),
            [Q, Q, R, A],
        ),
        (
            "write_file",
            json!({"path": "link_out/x", "content": "x"}),
            [Q, Q, R, A],
        ),
        (
            "edit_file",
            json!({"path": "link_out/secret.txt", "edits": [{"old_text": "s", "new_text": "t"}]}),
            [Q, Q, R, A],
        ),
        ("bash", json!({"command": "ls", "cwd": "/"}), [Q, Q, R, A]),
    ];
    for (tool, args, expected) in &calls {
        let prepared = env.prepare(tool, args.clone()).await.unwrap();
        for (mode, want) in Mode::ALL.into_iter().zip(expected) {
            let decision = decide(
                mode,
                &prepared.subject(tool),
                &env.roots,
                &AlwaysRules::default(),
            );
            assert_eq!(outcome(&decision), *want, "{mode} × {tool} {args}");
            if *want == Outcome::Asked {
                let inside = env.roots.contain_all(&prepared.paths);
                let reach = if inside {
                    Reach::WithinRoots
                } else {
                    Reach::OutsideRoots
                };
                assert_eq!(decision, Decision::Ask(reach), "{mode} × {tool} {args}");
            }
        }
    }
    // An "always allow" given for writes inside never reaches outside.
    let inside = env
        .prepare("write_file", json!({"path": "a.txt", "content": "x"}))
        .await
        .unwrap();
    let mut rules = AlwaysRules::default();
    rules.remember(
        inside.subject("write_file").rule_key(),
        PermissionAnswer::AllowAlways,
    );
    let decide_ask = |prepared: &Prepared| {
        decide(
            Mode::Ask,
            &prepared.subject("write_file"),
            &env.roots,
            &rules,
        )
    };
    assert_eq!(decide_ask(&inside), Decision::Allow);
    for path in ["~/.profile", "../outside/y", "link_out/y"] {
        let outside = env
            .prepare("write_file", json!({"path": path, "content": "x"}))
            .await
            .unwrap();
        assert_eq!(
            decide_ask(&outside),
            Decision::Ask(Reach::OutsideRoots),
            "{path}"
        );
    }
}

/// The card of a write through a link names the file that really changes.
#[tokio::test]
async fn a_write_through_a_link_shows_the_real_target() {
    let env = Env::new();
    let base = env.fx.root.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::os::unix::fs::symlink(base.join("outside/rc"), env.fx.path("rc")).unwrap();
    let prepared = env
        .prepare("write_file", json!({"path": "rc", "content": "x"}))
        .await
        .unwrap();
    let real = base.join("outside/rc").display().to_string();
    assert!(
        prepared.title.contains(&real) && prepared.title.contains("link"),
        "{}",
        prepared.title
    );
}

/// "Always allow" for `ls` covers `ls` only, not the bypasses the security review found.
#[test]
fn an_always_allowed_command_cannot_be_widened() {
    let roots = nowhere_roots();
    let mut rules = AlwaysRules::default();
    let ls = command("ls");
    rules.remember(bash(&ls).rule_key(), PermissionAnswer::AllowAlways);
    let git = command("git status");
    rules.remember(bash(&git).rule_key(), PermissionAnswer::AllowAlways);
    let find = command("find . -name x");
    rules.remember(bash(&find).rule_key(), PermissionAnswer::AllowAlways);
    assert_eq!(
        decide(Mode::Ask, &bash(&ls), &roots, &rules),
        Decision::Allow
    );
    for line in [
        "PATH=/tmp/evil:$PATH ls",
        "echo x > ../file",
        "ls > ../file",
        "git -c alias.x='!touch f' x",
        "git push",
        "find . -exec touch f {} +",
        "ls\ntouch f",
        "ls; touch f",
        "ls $(touch f)",
    ] {
        let shape = command(line);
        assert_eq!(
            decide(Mode::Ask, &bash(&shape), &roots, &rules),
            Decision::Ask(Reach::WithinRoots),
            "{line:?}"
        );
    }
}
