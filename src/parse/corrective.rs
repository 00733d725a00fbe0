//! The short message that answers a malformed call: the exact problem, then the expected format.

use super::config::ResolvedFormat;
use super::event::{Malformed, MalformedReason};

const HERMES_FORMAT: &str = "<tool_call>\n{\"name\": \"<tool name>\", \"arguments\": {<arguments as one JSON object>}}\n</tool_call>";
const XML_FORMAT: &str = "<tool_call>\n<function=TOOL_NAME>\n<parameter=ARGUMENT_NAME>\nvalue\n</parameter>\n</function>\n</tool_call>";

/// How many rounds in a row may end in malformed calls only before the turn loop stops answering
/// them and ends the turn with [`give_up_message`].
pub const MAX_MALFORMED_ROUNDS: u32 = 3;

/// The message that ends a turn after [`MAX_MALFORMED_ROUNDS`] failed rounds, for the user.
pub fn give_up_message(last: &Malformed) -> String {
    format!(
        "Stopped: the model wrote {MAX_MALFORMED_ROUNDS} malformed tool calls in a row (last: {last}). \
         Try again, or check the endpoint's tool_format setting."
    )
}

/// The text to send back to the model (as a tool result; the renderer wraps it in
/// `<tool_response>`). Names the problem precisely, since vague errors send models chasing the
/// wrong cause.
pub fn corrective_message(m: &Malformed, format: ResolvedFormat) -> String {
    let hint = match &m.reason {
        MalformedReason::Truncated => {
            " Write a shorter call: split large contents over several calls."
        }
        MalformedReason::UnknownTool { .. } => {
            " Use only the tools listed. If none of them fits, answer the user in plain text, without any call."
        }
        _ => "",
    };
    match format {
        ResolvedFormat::Native => format!(
            "Error: {m}. The call was not executed.{hint} Call the tool again with its arguments as one JSON object that matches its schema."
        ),
        ResolvedFormat::Hermes => format!(
            "Error: {m}. The call was not executed.{hint} Write each call exactly like this:\n{HERMES_FORMAT}"
        ),
        ResolvedFormat::Xml => format!(
            "Error: {m}. The call was not executed.{hint} Write each call exactly like this:\n{XML_FORMAT}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_problem_and_format() {
        let m = Malformed {
            raw: "<tool_call>{\"name\": \"todorantum\"}</tool_call>".into(),
            reason: MalformedReason::UnknownTool {
                name: "todorantum".into(),
                available: vec!["read_file".into(), "run".into()],
            },
        };
        let hermes = corrective_message(&m, ResolvedFormat::Hermes);
        assert!(hermes.starts_with("Error: unknown tool `todorantum`; available: read_file, run. The call was not executed."));
        assert!(hermes.ends_with(HERMES_FORMAT));
        assert!(corrective_message(&m, ResolvedFormat::Xml).contains("<function=TOOL_NAME>"));
        assert!(!corrective_message(&m, ResolvedFormat::Native).contains("<tool_call>"));
        let cut = Malformed {
            raw: String::new(),
            reason: MalformedReason::Truncated,
        };
        assert!(corrective_message(&cut, ResolvedFormat::Xml).contains("shorter call"));
        assert!(
            give_up_message(&cut)
                .contains("3 malformed tool calls in a row (last: the tool call was cut off")
        );
    }
}
