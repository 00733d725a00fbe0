//! Golden files: compare a normalised output with a file under `tests/golden/`; with
//! `HEARTH_BLESS=1` in the environment, write the file instead (then read it by eye).

use std::path::PathBuf;

/// The golden file `tests/golden/<rel>`.
pub fn golden_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(rel)
}

/// Asserts that `actual` equals the golden file `rel` (or writes it when blessing).
pub fn assert_golden(rel: &str, actual: &str) {
    let path = golden_path(rel);
    if std::env::var_os("HEARTH_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "golden file {} unreadable ({e}); run with HEARTH_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "output differs from {}\n--- expected\n{expected}\n--- actual\n{actual}\n\
         (run with HEARTH_BLESS=1 to accept the new output after reading it)",
        path.display()
    );
}
