//! Validation of session ids that come from outside hearth, before any of them becomes part of
//! a path.

use hearth_conversation::SessionId;

use super::error::{IdProblem, StoreError};

/// The longest id accepted. hearth's own ids are UUIDs (36 characters).
pub const MAX_ID_LEN: usize = 64;

/// Checks an id read from a client or the command line: 1 to [`MAX_ID_LEN`] characters of
/// `[A-Za-z0-9_-]`. Everything that could name another file (`..`, `/`, `\`, NUL, `.`) is
/// refused, so a valid id joined to a directory stays inside it.
pub fn validate_session_id(raw: &str) -> Result<SessionId, StoreError> {
    let refuse = |reason| StoreError::InvalidId {
        id: shorten(raw),
        reason,
    };
    if raw.is_empty() {
        return Err(refuse(IdProblem::Empty));
    }
    if let Some(bad) = raw
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(refuse(IdProblem::BadChar(bad)));
    }
    if raw.len() > MAX_ID_LEN {
        return Err(refuse(IdProblem::TooLong { max: MAX_ID_LEN }));
    }
    Ok(SessionId::new(raw))
}

/// Keeps error messages bounded when a client sends a huge id.
fn shorten(raw: &str) -> String {
    const SHOWN: usize = MAX_ID_LEN + 8;
    match raw.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &raw[..cut]),
        None => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_hearth_ids_and_plain_tokens() {
        let generated = SessionId::generate();
        for ok in [generated.as_str(), "a", "A-b_9", &"x".repeat(MAX_ID_LEN)] {
            let id = validate_session_id(ok).unwrap();
            assert_eq!(id.as_str(), ok);
        }
    }

    #[test]
    fn refuses_everything_that_could_leave_the_directory() {
        let long = "x".repeat(MAX_ID_LEN + 1);
        let table: &[(&str, IdProblem)] = &[
            ("", IdProblem::Empty),
            ("../x", IdProblem::BadChar('.')),
            ("..", IdProblem::BadChar('.')),
            ("/etc/passwd", IdProblem::BadChar('/')),
            ("a/b", IdProblem::BadChar('/')),
            ("a\\b", IdProblem::BadChar('\\')),
            ("a\0b", IdProblem::BadChar('\0')),
            ("a b", IdProblem::BadChar(' ')),
            ("x.jsonl", IdProblem::BadChar('.')),
            ("~root", IdProblem::BadChar('~')),
            ("é", IdProblem::BadChar('é')),
            ("a\nb", IdProblem::BadChar('\n')),
            (&long, IdProblem::TooLong { max: MAX_ID_LEN }),
        ];
        for (raw, expected) in table {
            match validate_session_id(raw) {
                Err(StoreError::InvalidId { reason, .. }) => {
                    assert_eq!(reason, *expected, "id {raw:?}")
                }
                other => panic!("id {raw:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn error_message_of_a_huge_id_is_bounded() {
        let huge = "y".repeat(10_000);
        let err = validate_session_id(&huge).unwrap_err();
        assert!(err.to_string().len() < 200, "{err}");
    }
}
