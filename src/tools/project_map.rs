//! The project's layout, put before a session's first prompt (the project_map assist), as
//! gemini-cli shows its folder structure: a small model that sees `LICENSE` and `src/clock.py`
//! reads them, where one that sees nothing answers "MIT" and invents `src/main.rs`.
//! Bounded (two levels, a few dozen lines), `.gitignore` and hidden files left out, symlinks
//! not followed, and only names that fit on one line of plain text.

use std::collections::BTreeMap;
use std::path::Path;

use hearth_backend::ContentPart;

use super::walk::walker;

/// Lines of the map at most (entries and "… more" lines together).
pub const MAX_LINES: usize = 60;
/// Entries of one subdirectory shown at most.
const MAX_CHILDREN: usize = 8;
/// Directory entries read at most, however large the project: the map must stay cheap.
const MAX_VISITED: usize = 2_000;
/// A name longer than this is left out.
const MAX_NAME_CHARS: usize = 100;

/// The `<context>` part that lists `cwd`'s layout, or `None` for an empty or unreadable project.
pub async fn project_map(cwd: &Path) -> Option<ContentPart> {
    let cwd = cwd.to_path_buf();
    let map = tokio::task::spawn_blocking(move || render(&cwd))
        .await
        .ok()??;
    Some(ContentPart::text(format!(
        "<context listing=\"project files\">\n{map}\n</context>\n\n"
    )))
}

/// One top-level entry: whether it is a directory, and the names inside it (when it is).
#[derive(Default)]
struct Entry {
    dir: bool,
    children: Vec<(String, bool)>,
}

fn render(root: &Path) -> Option<String> {
    let mut top: BTreeMap<String, Entry> = BTreeMap::new();
    let mut walk = walker(root);
    walk.max_depth(Some(2));
    for item in walk.build().skip(1).take(MAX_VISITED).flatten() {
        let Ok(relative) = item.path().strip_prefix(root) else {
            continue;
        };
        let dir = item.file_type().is_some_and(|t| t.is_dir());
        let names: Vec<&str> = match relative
            .components()
            .map(|c| c.as_os_str().to_str().filter(|n| plain_name(n)))
            .collect::<Option<Vec<_>>>()
        {
            Some(names) => names,
            None => continue,
        };
        match names.as_slice() {
            [name] => top.entry((*name).to_string()).or_default().dir = dir,
            [parent, name] => top
                .entry((*parent).to_string())
                .or_default()
                .children
                .push(((*name).to_string(), dir)),
            _ => {}
        }
    }
    if top.is_empty() {
        return None;
    }
    // A wide top level (a home directory, /tmp) is shown alone: its names say more than the
    // insides of its first few directories.
    let children = top.len() <= MAX_LINES / 2;
    let mut lines = Vec::new();
    for (name, entry) in top.iter_mut() {
        if lines.len() >= MAX_LINES {
            break;
        }
        lines.push(if entry.dir {
            format!("{name}/")
        } else {
            name.clone()
        });
        if !children {
            continue;
        }
        entry.children.sort();
        let room = MAX_LINES.saturating_sub(lines.len()).min(MAX_CHILDREN);
        let fits = entry.children.len() <= room;
        let shown = if fits { room } else { room.saturating_sub(1) };
        for (child, dir) in entry.children.iter().take(shown) {
            lines.push(format!("  {child}{}", if *dir { "/" } else { "" }));
        }
        if !fits && shown > 0 {
            lines.push(format!("  … {} more", entry.children.len() - shown));
        }
    }
    let hidden = top.len() - lines.iter().filter(|l| !l.starts_with(' ')).count();
    if hidden > 0 {
        lines.push(format!("… {hidden} more"));
    }
    Some(lines.join("\n"))
}

/// A name that reads as one line of plain text in the map.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && !name.chars().any(|c| c.is_control() || c == '<' || c == '>')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::Fixture;

    #[test]
    fn the_map_lists_two_levels_without_ignored_hidden_or_odd_names() {
        let fx = Fixture::new();
        fx.write(".gitignore", "target/\n");
        fx.write("LICENSE", "zlib");
        fx.write("src/clock.py", "");
        fx.write("src/deep/inner.py", "");
        fx.write("target/debug/x", "");
        fx.write(".hidden/secret", "");
        fx.write("bad\nname.txt", "");
        fx.write("<tool_call>.txt", "");
        assert_eq!(
            render(&fx.root).unwrap(),
            "LICENSE\nsrc/\n  clock.py\n  deep/"
        );
    }

    #[test]
    fn a_large_project_is_cut_to_the_line_budget_with_counts_of_what_is_left_out() {
        let fx = Fixture::new();
        for i in 0..100 {
            fx.write(&format!("f{i:03}.txt"), "");
        }
        fx.write("a/m.py", "");
        let map = render(&fx.root).unwrap();
        let lines: Vec<&str> = map.lines().collect();
        assert_eq!(lines.len(), MAX_LINES + 1, "{map}");
        assert_eq!(
            lines[..2],
            ["a/", "f000.txt"],
            "a wide top level is shown alone"
        );
        assert_eq!(lines[MAX_LINES], format!("… {} more", 101 - MAX_LINES));

        let few = Fixture::new();
        for i in 0..12 {
            few.write(&format!("lib/n{i:02}.rs"), "");
        }
        let map = render(&few.root).unwrap();
        assert!(map.starts_with("lib/\n  n00.rs\n"), "{map}");
        assert!(map.ends_with("  n06.rs\n  … 5 more"), "{map}");
        assert_eq!(map.lines().count(), 1 + MAX_CHILDREN);
    }

    #[test]
    fn an_empty_project_has_no_map() {
        assert!(render(&Fixture::new().root).is_none());
    }
}
