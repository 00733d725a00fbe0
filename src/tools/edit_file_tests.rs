use hearth_conversation::ToolStatus;
use serde_json::json;

use super::*;
use crate::tools::test_support::Fixture;
use crate::tools::write_file::WriteFile;

fn edit(old: &str, new: &str) -> Edit {
    Edit {
        old_text: old.into(),
        new_text: new.into(),
        replace_all: false,
    }
}

fn model_err(r: Result<Applied, ToolError>) -> String {
    match r {
        Err(ToolError::Model(m)) => m,
        other => panic!("{other:?}"),
    }
}

#[test]
fn apply_edits_table() {
    let text = "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n";
    let ok = |edits: &[Edit]| apply_edits(text, edits, "f.rs").unwrap();
    let got = ok(&[edit("fn a", "fn alpha")]);
    assert_eq!(got.text, text.replace("fn a", "fn alpha"));
    assert_eq!(got.replacements, 1);
    // In order: the second edit sees the first one's result.
    let got = ok(&[edit("fn a", "fn c"), edit("fn c() {}", "fn c() { 1 }")]);
    assert!(got.text.starts_with("fn c() { 1 }\n"));
    let mut all = edit("let x = 1;", "let y = 2;");
    all.replace_all = true;
    let got = ok(&[all]);
    assert_eq!(got.replacements, 2);
    assert!(!got.text.contains("let x"));
}

#[test]
fn edit_errors_say_how_many_matches() {
    let text = "let x = 1;\nlet x = 1;\n    indented();\n";
    let cases: Vec<(Vec<Edit>, &str)> = vec![
        (
            vec![edit("nope", "x")],
            "the edit: old_text was not found in f.rs; nothing was changed",
        ),
        (
            vec![edit("let x = 1;", "y")],
            "the edit: old_text matches 2 times in f.rs; include more surrounding lines",
        ),
        (
            vec![edit("indented", "ok"), edit("missing", "x")],
            "edit 2 of 2: old_text was not found in f.rs (edits apply in order",
        ),
        (vec![edit("", "x")], "old_text is empty"),
        (
            vec![edit("let", "let")],
            "old_text and new_text are the same",
        ),
        (vec![edit("indented( );", "x")], "not found"),
        (vec![edit("indented();\nlet", "x")], "not found"),
        (vec![edit("     3\t    indented();", "x")], "line numbers"),
        (
            vec![edit("\tindented();", "x")],
            "different indentation or spacing",
        ),
        (vec![], "`edits` is empty"),
    ];
    for (edits, want) in cases {
        let err = model_err(apply_edits(text, &edits, "f.rs"));
        assert!(err.contains(want), "{edits:?}: {err}");
    }
}

#[test]
fn crlf_files_take_lf_edits() {
    let text = "a\r\nb\r\nc\r\n";
    let got = apply_edits(text, &[edit("a\nb", "x\ny")], "f").unwrap();
    assert_eq!(got.text, "x\r\ny\r\nc\r\n");
}

#[tokio::test]
async fn edit_previews_the_diff_then_applies_it_through_the_client() {
    let fx = Fixture::new();
    let path = fx.write("src/main.rs", "fn main() {\n    old();\n}\n");
    let args =
        json!({"path": "src/main.rs", "edits": [{"old_text": "old()", "new_text": "new()"}]});
    let ctx = fx.ctx();
    let prepared = EditFile.prepare(&args, &ctx).await.unwrap();
    let diff = ToolContent::Diff {
        path: path.clone(),
        old_text: Some("fn main() {\n    old();\n}\n".into()),
        new_text: "fn main() {\n    new();\n}\n".into(),
    };
    assert_eq!(prepared.preview, vec![diff.clone()]);
    assert_eq!(prepared.locations[0].line, Some(2));
    assert_eq!(prepared.title, "Edit src/main.rs");
    // Nothing changes before run.
    assert_eq!(fx.read("src/main.rs"), "fn main() {\n    old();\n}\n");
    let card = prepared.card(fx.call_id.clone(), args.clone());
    assert_eq!(card.status, ToolStatus::Pending);
    assert_eq!(
        card.content,
        vec![diff.clone()],
        "the permission prompt shows the diff"
    );
    assert_eq!(card.raw_input, args);
    let out = EditFile.run(&args, &prepared, &ctx).await.unwrap();
    assert_eq!(out.card_update().status, Some(ToolStatus::Completed));
    assert_eq!(fx.read("src/main.rs"), "fn main() {\n    new();\n}\n");
    assert_eq!(out.content, vec![diff]);
    assert_eq!(
        out.for_model,
        format!("Edited {}: 1 replacement from 1 edit.", path.display())
    );
    let write = format!("write {}", path.display());
    assert_eq!(fx.client.calls().last(), Some(&write));
}

#[tokio::test]
async fn multi_edit_is_atomic() {
    let fx = Fixture::new();
    let original = "one\ntwo\nthree\n";
    fx.write("f.txt", original);
    let args = json!({"path": "f.txt", "edits": [
        {"old_text": "one", "new_text": "1"},
        {"old_text": "two", "new_text": "2"},
        {"old_text": "four", "new_text": "4"}
    ]});
    let err = fx.model_error(&EditFile, args).await;
    assert!(
        err.starts_with("edit 3 of 3: old_text was not found"),
        "{err}"
    );
    assert_eq!(fx.read("f.txt"), original);
    assert!(!fx.client.calls().iter().any(|c| c.starts_with("write")));
    let args = json!({"path": "f.txt", "edits": [
        {"old_text": "one", "new_text": "1"},
        {"old_text": "three", "new_text": "3"}
    ]});
    fx.call(&EditFile, args).await.unwrap();
    assert_eq!(fx.read("f.txt"), "1\ntwo\n3\n");
}

#[tokio::test]
async fn edit_bad_input() {
    let fx = Fixture::new();
    fx.write("f.txt", "x\n");
    let missing = fx.path("nope.txt");
    let cases = [
        (
            json!({"path": "nope.txt", "edits": [{"old_text": "a", "new_text": "b"}]}),
            format!("file not found: {}; use write_file", missing.display()),
        ),
        (
            json!({"path": "f.txt", "edits": "x->y"}),
            "at `edits`: invalid type: string".into(),
        ),
        (
            json!({"path": "f.txt", "edits": [{"old": "x", "new_text": "y"}]}),
            "at `edits[0].old`: unknown field `old`, expected one of `old_text`".into(),
        ),
        (
            json!({"path": "f.txt", "edits": [{"old_text": "x", "new_text": "y", "replace_all": "yes"}]}),
            "at `edits[0].replace_all`: invalid type: string".into(),
        ),
    ];
    for (args, want) in cases {
        let err = fx.model_error(&EditFile, args.clone()).await;
        assert!(err.contains(&want), "{args}: {err}");
    }
}

#[tokio::test]
async fn write_creates_parents_and_shows_old_and_new() {
    let fx = Fixture::new();
    let args = json!({"path": "a/b/new.txt", "content": "hello\n"});
    let (prepared, out) = fx.call(&WriteFile, args).await.unwrap();
    let path = fx.path("a/b/new.txt");
    assert_eq!(fx.read("a/b/new.txt"), "hello\n");
    let created = ToolContent::Diff {
        path: path.clone(),
        old_text: None,
        new_text: "hello\n".into(),
    };
    assert_eq!(prepared.preview, vec![created.clone()]);
    assert_eq!(out.content, vec![created]);
    assert_eq!(
        out.for_model,
        format!("Created {} (1 line).", path.display())
    );
    let (_, out) = fx
        .call(
            &WriteFile,
            json!({"path": "a/b/new.txt", "content": "bye\nnow\n"}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        vec![ToolContent::Diff {
            path: path.clone(),
            old_text: Some("hello\n".into()),
            new_text: "bye\nnow\n".into()
        }]
    );
    assert_eq!(
        out.for_model,
        format!("Wrote {} (2 lines; it had 1 line).", path.display())
    );
    std::fs::create_dir(fx.path("d")).unwrap();
    let err = fx
        .model_error(&WriteFile, json!({"path": "d", "content": "x"}))
        .await;
    assert!(err.contains("is a directory"), "{err}");
    let err = fx.model_error(&WriteFile, json!({"path": "x"})).await;
    assert!(err.contains("missing field `content`"), "{err}");
}
