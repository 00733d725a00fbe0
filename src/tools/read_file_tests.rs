use serde_json::json;

use super::*;
use crate::tools::test_support::Fixture;

fn numbered(from: usize, lines: &[&str]) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", from + i))
        .collect()
}

#[tokio::test]
async fn reads_numbered_lines_with_a_header() {
    let fx = Fixture::new();
    let path = fx.write("src/lib.rs", "a\nb\r\nc\n");
    let (prepared, out) = fx
        .call(&ReadFile, json!({"path": "src/lib.rs"}))
        .await
        .unwrap();
    assert_eq!(prepared.title, "Read src/lib.rs");
    assert_eq!(prepared.kind, ToolKind::Read);
    assert_eq!(prepared.access, Access::Read);
    assert_eq!(prepared.locations[0].path, path);
    let header = format!("{}: lines 1-3 of 3", path.display());
    assert_eq!(
        out.for_model,
        format!("{header}\n{}", numbered(1, &["a", "b", "c"]))
    );
    assert_eq!(out.content, vec![ToolContent::Text { text: header }]);
    assert_eq!(out.raw_output["total_lines"], 3);
}

#[tokio::test]
async fn offset_and_limit_page_through_the_file() {
    let fx = Fixture::new();
    let text: String = (1..=10).map(|i| format!("line{i}\n")).collect();
    let path = fx.write("f.txt", text);
    let (_, out) = fx
        .call(&ReadFile, json!({"path": "f.txt", "offset": 4, "limit": 2}))
        .await
        .unwrap();
    let want = format!(
        "{}: lines 4-5 of 10; to read on, call read_file with offset=6\n{}",
        path.display(),
        numbered(4, &["line4", "line5"])
    );
    assert_eq!(out.for_model, want);
    // `line` is accepted as another name for `offset`.
    let (_, out) = fx
        .call(&ReadFile, json!({"path": "f.txt", "line": 10}))
        .await
        .unwrap();
    assert!(
        out.for_model.ends_with(&numbered(10, &["line10"])),
        "{}",
        out.for_model
    );
    let err = fx
        .model_error(&ReadFile, json!({"path": "f.txt", "offset": 11}))
        .await;
    assert!(
        err.contains("offset 11 is past the end of the file (10 lines)"),
        "{err}"
    );
}

#[tokio::test]
async fn default_limits_cap_long_files_and_lines() {
    let mut fx = Fixture::new();
    fx.limits.read_lines = 3;
    fx.limits.line_chars = 5;
    fx.write("long.txt", "0123456789\nb\nc\nd\ne\n");
    let (_, out) = fx
        .call(&ReadFile, json!({"path": "long.txt"}))
        .await
        .unwrap();
    assert!(
        out.for_model
            .contains("lines 1-3 of 5; to read on, call read_file with offset=4")
    );
    assert!(
        out.for_model.contains("01234… [line cut at 5 characters]"),
        "{}",
        out.for_model
    );
    fx.limits.read_lines = 100;
    fx.limits.read_bytes = 20;
    let (_, out) = fx
        .call(&ReadFile, json!({"path": "long.txt"}))
        .await
        .unwrap();
    assert!(
        out.for_model.contains("[output capped at 20 bytes"),
        "{}",
        out.for_model
    );
    assert_eq!(out.raw_output["capped"], true);
}

#[tokio::test]
async fn reads_go_through_the_client_buffer() {
    let fx = Fixture::new();
    let path = fx.write("a.rs", "on disk\n");
    fx.client
        .buffers
        .lock()
        .unwrap()
        .insert(path.clone(), "unsaved buffer\n".into());
    let (_, out) = fx.call(&ReadFile, json!({"path": "a.rs"})).await.unwrap();
    assert!(
        out.for_model.contains("unsaved buffer"),
        "{}",
        out.for_model
    );
    assert_eq!(fx.client.calls(), [format!("read {}", path.display())]);
}

#[tokio::test]
async fn home_paths_are_expanded_and_named_absolutely() {
    let fx = Fixture::new();
    std::fs::write(fx.home.join("notes.txt"), "hi\n").unwrap();
    for raw in ["~/notes.txt", "$HOME/notes.txt"] {
        let (_, out) = fx.call(&ReadFile, json!({"path": raw})).await.unwrap();
        let abs = fx.home.join("notes.txt");
        assert!(
            out.for_model
                .starts_with(&format!("{}: lines 1-1 of 1", abs.display()))
        );
    }
}

#[tokio::test]
async fn bad_input_gets_precise_errors() {
    let fx = Fixture::new();
    std::fs::write(fx.path("img.png"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    std::fs::create_dir(fx.path("dir")).unwrap();
    fx.write("empty.txt", "");
    let missing = fx.path("missing.rs");
    let cases = [
        (
            json!({"path": "missing.rs"}),
            format!("file not found: {}", missing.display()),
        ),
        (
            json!({"path": "img.png"}),
            "is a binary file; read_file reads text files only".into(),
        ),
        (
            json!({"path": "dir"}),
            "is a directory; use list_dir".into(),
        ),
        (
            json!({"path": 5}),
            "read_file: invalid arguments: at `path`: invalid type: integer `5`, expected a string"
                .into(),
        ),
        (
            json!({"path": "a", "limit": "ten"}),
            "at `limit`: invalid type: string \"ten\"".into(),
        ),
        (json!({"file": "a"}), "unknown field `file`".into()),
        (json!({}), "missing field `path`".into()),
        (json!({"path": ""}), "the path is empty".into()),
    ];
    for (args, want) in cases {
        let err = fx.model_error(&ReadFile, args.clone()).await;
        assert!(err.contains(&want), "{args}: {err}");
    }
    let (_, out) = fx
        .call(&ReadFile, json!({"path": "empty.txt"}))
        .await
        .unwrap();
    assert!(out.for_model.contains("empty file"));
}
