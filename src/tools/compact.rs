//! The tool list for a small window: each description cut to its first sentence and the plan
//! tool left out, so a model with little room spends it on the task rather than on ~1,000
//! tokens of advice it cannot weigh. The argument schemas stay whole: they are what a call is
//! checked against.

use hearth_backend::ToolSpec;

/// Windows up to this size get the compact tool list.
pub const COMPACT_WINDOW: u32 = 32 * 1024;

/// Tools a small window is better off without.
const LEFT_OUT: [&str; 1] = ["update_plan"];

/// The compact form of `specs`.
pub fn compact_specs(specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
    specs
        .into_iter()
        .filter(|s| !LEFT_OUT.contains(&s.name.as_str()))
        .map(|mut s| {
            s.description = first_sentence(&s.description).to_string();
            s
        })
        .collect()
}

/// Up to the first full stop that ends a sentence (followed by a space and a capital, or the
/// end), not one inside a path or a code span.
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let bytes = text.as_bytes();
    let mut in_code = false;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'`' => in_code = !in_code,
            b'.' if !in_code => {
                let next = bytes.get(i + 1).copied();
                let after = bytes.get(i + 2).copied();
                if next.is_none()
                    || (next == Some(b' ') && after.is_some_and(|c| c.is_ascii_uppercase()))
                {
                    return &text[..=i];
                }
            }
            _ => {}
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolRegistry;
    use hearth_conversation::Mode;

    #[test]
    fn descriptions_keep_their_first_sentence_and_schemas_stay_whole() {
        assert_eq!(
            first_sentence("Read a text file. Returns its lines (`a. B`), numbered."),
            "Read a text file."
        );
        assert_eq!(first_sentence("Use `x. Y` here. Next"), "Use `x. Y` here.");
        assert_eq!(first_sentence("No full stop"), "No full stop");
        let full = ToolRegistry::builtin().specs_for_mode(Mode::Ask);
        let compact = compact_specs(full.clone());
        assert!(compact.iter().all(|s| s.name != "update_plan"));
        assert_eq!(compact.len(), full.len() - 1);
        for s in &compact {
            let whole = full.iter().find(|f| f.name == s.name).unwrap();
            assert_eq!(s.parameters, whole.parameters);
            assert!(s.description.len() < whole.description.len(), "{}", s.name);
            assert!(s.description.ends_with('.'), "{}", s.description);
        }
    }
}
