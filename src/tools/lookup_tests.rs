use super::*;

fn words(terms: &[Term]) -> Vec<(&str, bool)> {
    terms.iter().map(|t| (t.text.as_str(), t.exact)).collect()
}

#[test]
fn identifiers_and_rarer_words_are_the_terms_and_named_files_are_not() {
    let text = "Which function in the src directory calls connect_db?";
    assert_eq!(
        words(&terms(text, &named_paths(text))),
        [("connect_db", true)]
    );
    let text = "Which file has a TODO comment, and what does it say?";
    assert_eq!(
        words(&terms(text, &named_paths(text))),
        [("TODO", true), ("comment", false)]
    );
    let text = "Which license does this project use?";
    assert_eq!(
        words(&terms(text, &named_paths(text))),
        [("license", false)]
    );
    // The words of a named file's path are not looked up (the file rides along whole).
    let text = "How many functions are defined in utils.py? Use parseConfig too.";
    assert_eq!(
        words(&terms(text, &named_paths(text))),
        [("parseConfig", true)]
    );
    // At most a few terms, identifiers first.
    let text = "alpha_one beta_two gamma_three delta_four epsilon_five zeta_six kangaroo";
    let found = terms(text, &[]);
    assert_eq!(found.len(), MAX_TERMS);
    assert!(found.iter().all(|t| t.exact));
    for word in ["ab_", "X1", "OK", "hello", "9_lives"] {
        assert!(!is_identifier(word) || word == "ab_", "{word}");
    }
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    dir
}

async fn looked_up(dir: &tempfile::TempDir, words: &str) -> Option<String> {
    let part = lookup_terms(&[ContentPart::text(words)], dir.path()).await?;
    match part {
        ContentPart::Text { text } => Some(text),
        ContentPart::Image { .. } => None,
    }
}

#[tokio::test]
async fn each_hit_comes_with_its_path_its_line_and_the_lines_above() {
    let dir = project(&[
        (
            "src/db.py",
            "def connect_db(url):\n    return {\"url\": url}\n",
        ),
        (
            "src/orders.py",
            "from db import connect_db\n\n\ndef load_orders():\n    conn = connect_db(\"sqlite://orders\")\n    return conn\n",
        ),
        (
            "src/invoices.py",
            "def save_invoice(invoice):\n    return invoice\n",
        ),
    ]);
    let text = looked_up(
        &dir,
        "Which function in the src directory calls connect_db?",
    )
    .await
    .unwrap();
    assert!(text.starts_with("<context search="), "{text}");
    assert!(
        text.contains("src/db.py, line 1:\ndef connect_db(url):\n"),
        "{text}"
    );
    assert!(
        text.contains("src/orders.py, line 5, in `def load_orders():`:\n\ndef load_orders():\n    conn = connect_db(\"sqlite://orders\")\n"),
        "{text}"
    );
    assert!(!text.contains("save_invoice"));
    assert_eq!(looked_up(&dir, "Write fizzbuzz in Rust").await, None);
}

#[tokio::test]
async fn named_secret_binary_ignored_and_common_hits_stay_out() {
    let many: String = (0..40).map(|i| format!("value_{i} = TOKEN\n")).collect();
    let dir = project(&[
        ("app.py", "TOKEN = 1\n"),
        (".env", "TOKEN=hunter2\n"),
        ("keys/server.pem", "TOKEN\n"),
        ("blob.bin", "TOKEN\u{0}\n"),
        ("build/out.txt", "TOKEN\n"),
        (".gitignore", "build/\n"),
        ("notes.md", "the zebra_crossing TOKEN\n"),
    ]);
    let text = looked_up(
        &dir,
        "Where is TOKEN set, apart from app.py? And zebra_crossing?",
    )
    .await
    .unwrap();
    assert!(text.contains("notes.md, line 1:"), "{text}");
    for absent in [
        "app.py",
        ".env",
        "hunter2",
        "server.pem",
        "blob.bin",
        "build/out.txt",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
    // A term found everywhere is noise: only the rare one is shown.
    std::fs::write(dir.path().join("many.py"), many).unwrap();
    let text = looked_up(&dir, "Where is TOKEN used near zebra_crossing?")
        .await
        .unwrap();
    assert!(!text.contains("many.py"), "{text}");
    assert!(text.contains("zebra_crossing"));
    // Each line is cut, and the hits are bounded.
    let long = format!("needle_term {}\n", "x".repeat(1000));
    let dir = project(&[("a.txt", &long)]);
    let text = looked_up(&dir, "needle_term").await.unwrap();
    assert!(text.contains("needle_term xxx"));
    assert!(
        text.lines()
            .all(|l| l.chars().count() <= MAX_LINE_CHARS + 1),
        "{text}"
    );
    let files: Vec<(String, String)> = (0..20)
        .map(|i| (format!("f{i}.txt"), "needle_term\n".to_string()))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let text = looked_up(&project(&files), "needle_term").await.unwrap();
    assert_eq!(text.matches(", line 1:").count(), MAX_HITS);
}

/// A link out of the project (to a file or a directory) and a special file are never read: the
/// lookup sees only the project's own regular files.
#[cfg(unix)]
#[tokio::test]
async fn links_out_of_the_project_and_special_files_are_not_read() {
    let outside = project(&[("secret_notes.txt", "needle_term from outside\n")]);
    let dir = project(&[("inside.txt", "needle_term inside\n")]);
    let out_file = outside.path().join("secret_notes.txt");
    std::os::unix::fs::symlink(out_file, dir.path().join("linked.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked_dir")).unwrap();
    let fifo = dir.path().join("pipe.txt");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let text = looked_up(&dir, "needle_term").await.unwrap();
    assert!(text.contains("inside.txt, line 1:"), "{text}");
    for absent in ["from outside", "linked", "secret_notes", "pipe.txt"] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
    // The fifo, where one could be made, did not hang the lookup (it is never opened).
    if made.is_ok_and(|s| s.success()) {
        assert!(fifo.exists());
    }
}

#[test]
fn a_hit_is_placed_in_the_definition_around_it() {
    let lines = [
        "class Store:",
        "    # the class of all stores",
        "    pub(crate) async fn load(self):",
        "        if ready:",
        "            connect_db()",
        "top = connect_db()",
    ];
    assert_eq!(
        enclosing_definition(&lines, 4),
        Some("pub(crate) async fn load(self):")
    );
    assert_eq!(enclosing_definition(&lines, 1), Some("class Store:"));
    assert_eq!(enclosing_definition(&lines, 5), None);
}
