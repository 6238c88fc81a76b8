//! The optional `agent-prompt.json`: prompt segments in the kjxlkj-agent format (the contract
//! is this page; `docs/data-directory.md` has it for users).
//!
//! ```json
//! {"agent_name": "kjxlkj-agent", "version": "2026-01-01",
//!  "segments": [{"condition": "default", "prompt": "..."}, {"condition": "thinking", "prompt": "..."}]}
//! ```
//!
//! Segments whose condition is `default` go into every prompt, right after the base prompt;
//! the others go with the prompt of the state they name. Validation follows the contract's
//! table: invalid JSON is `PROMPT_JSON_INVALID`; a missing or wrong `agent_name`, missing or
//! empty `segments`, or a condition that names no state is `PROMPT_SCHEMA_INVALID`; an empty
//! prompt is `PROMPT_SEGMENT_EMPTY`; unknown keys are one warning, then ignored. All of these
//! stop the start-up (exit 2) with the key path.

use super::checker::{describe, Checker};
use crate::error::{Code, Error, Result};
use crate::json::{Document, Kind};
use crate::limits::{SEGMENTS_FILE_MAX_BYTES, SEGMENTS_MAX};

/// The file's name inside the data directory.
pub const FILE_NAME: &str = "agent-prompt.json";

/// Segments grouped by where they go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segments {
    /// Text of every `default` segment, in file order, separated by blank lines.
    pub default: String,
    /// `(state, text)` for every state that has segments, texts joined the same way.
    pub by_state: Vec<(String, String)>,
}

impl Segments {
    /// The segment text for `state`; a state without segments has none to add, so empty.
    pub fn for_state(&self, state: &str) -> &str {
        self.by_state.iter().find(|(s, _)| s == state).map_or("", |(_, t)| t.as_str())
    }
}

const KEYS: &[&str] = &["$schema", "agent_name", "version", "default_mode", "protocol", "allowed_tags", "segments"];

/// Loads `agent-prompt.json` from `dir`; `Ok(None)` when the file does not exist.
/// `states` are the configured state names a condition may use.
pub fn load(dir: &std::path::Path, states: &[String]) -> Result<Option<Segments>> {
    let path = dir.join(FILE_NAME);
    let bytes = match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!(Io, "cannot read {}: {}", path.display(), e),
        Ok(m) if m.len() > SEGMENTS_FILE_MAX_BYTES as u64 => bail!(
            PromptSchemaInvalid,
            "{} is {} bytes; at most {} are read (limits::SEGMENTS_FILE_MAX_BYTES)",
            path.display(),
            m.len(),
            SEGMENTS_FILE_MAX_BYTES
        ),
        Ok(_) => std::fs::read(&path).map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?,
    };
    parse(&bytes, states).map(Some).map_err(|e| e.context(format_args!("{}", path.display())))
}

/// Validates and groups the segments of an `agent-prompt.json` document.
pub fn parse(bytes: &[u8], states: &[String]) -> Result<Segments> {
    let mut doc = Document::with_capacity(bytes.len() / 2 + 16, bytes.len() + 16);
    doc.parse(bytes).map_err(|e| e.with_code(Code::PromptJsonInvalid))?;
    let root = doc.root();
    if root.kind() != Kind::Object {
        bail!(PromptSchemaInvalid, "the document must be an object, found {}", describe(root));
    }
    let mut c = Checker::new();
    c.note_unknown(Some(root), "", KEYS);
    for k in c.unknown_keys() {
        err!(PromptSchemaInvalid, "unknown key '{}' ignored", k).print_warning();
    }
    match root.get("agent_name").map(|v| v.as_str()) {
        None => bail!(PromptSchemaInvalid, "agent_name: missing; it must be \"kjxlkj-agent\""),
        Some(Some("kjxlkj-agent")) => {}
        Some(_) => bail!(PromptSchemaInvalid, "agent_name: must be \"kjxlkj-agent\""),
    }
    let Some(segments) = root.get("segments") else {
        bail!(PromptSchemaInvalid, "segments: missing; it must be a non-empty array");
    };
    if segments.kind() != Kind::Array || segments.is_empty() {
        bail!(PromptSchemaInvalid, "segments: must be a non-empty array, found {}", describe(segments));
    }
    if segments.len() > SEGMENTS_MAX {
        bail!(PromptSchemaInvalid, "segments: {} segments; at most {} are read", segments.len(), SEGMENTS_MAX);
    }
    let mut out = Segments::default();
    for (i, seg) in segments.items().enumerate() {
        let condition = match seg.get("condition").and_then(|v| v.as_str()) {
            Some(c) => c.trim(),
            None => bail!(PromptSchemaInvalid, "segments.[{}].condition: missing; 'default' or a state name", i),
        };
        let prompt = match seg.get("prompt").and_then(|v| v.as_str()) {
            Some(p) => p.trim(),
            None => bail!(PromptSchemaInvalid, "segments.[{}].prompt: missing; it must be a string", i),
        };
        if prompt.is_empty() {
            return Err(Error::new(
                Code::PromptSegmentEmpty,
                crate::site!(),
                format_args!("segments.[{}].prompt: empty; write the segment's text or remove it", i),
            ));
        }
        let state = crate::states::canonical(condition);
        let target = if condition == "default" {
            &mut out.default
        } else if states.iter().any(|s| s == state) {
            match out.by_state.iter().position(|(s, _)| s == state) {
                Some(at) => match out.by_state.get_mut(at) {
                    Some((_, text)) => text,
                    None => continue,
                },
                None => {
                    out.by_state.push((state.to_string(), String::new()));
                    match out.by_state.last_mut() {
                        Some((_, text)) => text,
                        None => continue,
                    }
                }
            }
        } else {
            bail!(
                PromptSchemaInvalid,
                "segments.[{}].condition: '{}' is neither 'default' nor one of the states {:?}",
                i,
                condition,
                states
            );
        };
        if !target.is_empty() {
            target.push_str("\n\n");
        }
        target.push_str(prompt);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states() -> Vec<String> {
        ["thinking", "commanding", "evaluating", "paging"].iter().map(|s| s.to_string()).collect()
    }

    fn code(text: &str) -> Code {
        parse(text.as_bytes(), &states()).unwrap_err().code()
    }

    #[test]
    fn groups_default_and_state_segments_in_order() {
        let s = parse(
            br#"{"agent_name":"kjxlkj-agent","version":"1","segments":[
                {"condition":"default","prompt":"A"},{"condition":"thinking","prompt":" T1 "},
                {"condition":"default","prompt":"B"},{"condition":"executing","prompt":"C"},
                {"condition":"thinking","prompt":"T2"}]}"#,
            &states(),
        )
        .unwrap();
        assert_eq!(s.default, "A\n\nB");
        assert_eq!(s.for_state("thinking"), "T1\n\nT2");
        assert_eq!(s.for_state("commanding"), "C");
        assert_eq!(s.for_state("paging"), "");
    }

    #[test]
    fn contract_error_codes() {
        assert_eq!(code("{"), Code::PromptJsonInvalid);
        assert_eq!(code(r#"{"segments":[{"condition":"default","prompt":"x"}]}"#), Code::PromptSchemaInvalid);
        assert_eq!(code(r#"{"agent_name":"other","segments":[]}"#), Code::PromptSchemaInvalid);
        assert_eq!(code(r#"{"agent_name":"kjxlkj-agent"}"#), Code::PromptSchemaInvalid);
        assert_eq!(code(r#"{"agent_name":"kjxlkj-agent","segments":[]}"#), Code::PromptSchemaInvalid);
        assert_eq!(
            code(r#"{"agent_name":"kjxlkj-agent","segments":[{"condition":"default","prompt":"  "}]}"#),
            Code::PromptSegmentEmpty
        );
        assert_eq!(
            code(r#"{"agent_name":"kjxlkj-agent","segments":[{"condition":"dreaming","prompt":"x"}]}"#),
            Code::PromptSchemaInvalid
        );
        assert_eq!(code("[1]"), Code::PromptSchemaInvalid);
    }

    #[test]
    fn missing_file_is_none() {
        let dir = crate::testing::temp_dir("seg");
        assert_eq!(load(&dir, &states()).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
