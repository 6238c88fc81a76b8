//! What the agent takes from a reply: instructions (next state, log entries, actions), in
//! document order, whatever dialect the model wrote them in.
//!
//! Text fields borrow from the [`Reader`](super::Reader) that produced them: trimmed, entities
//! decoded, **not normalised** (the memory layer owns key normalisation; docs/design.md §5).

/// One instruction. The names of the variants and kinds (`as_str`) are stable: they appear in
/// `parse-reply` output, the audit log and the feedback to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instruction<'r> {
    /// The state the model asks for (`<next_state>`, `<state>`, kjxlkj `<state_add>`). Not
    /// checked against the configured states here: the agent does that.
    NextState(&'r str),
    /// A reasoning note for the think log (`<think_log>`, era-A `<thinking>`, kjxlkj
    /// `ram_add` of key `think_log`).
    ThinkLog(&'r str),
    /// An evaluation note (`<evaluation_log>`, era-A `<evaluation>`).
    EvaluationLog(&'r str),
    /// kjxlkj `<state_delete>`: the model asks to leave a state.
    StateDelete(&'r str),
    /// A memory action.
    Action(Action<'r>),
}

impl Instruction<'_> {
    /// The stable name: `next_state`, `think_log`, `evaluation_log`, `state_delete`, `action`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Instruction::NextState(_) => "next_state",
            Instruction::ThinkLog(_) => "think_log",
            Instruction::EvaluationLog(_) => "evaluation_log",
            Instruction::StateDelete(_) => "state_delete",
            Instruction::Action(_) => "action",
        }
    }
}

/// The names of the canonical kinds, the first five of [`ActionKind::ALL`] in its order, as the
/// reader's messages and the feedback's example list them: one literal, so that `concat!` can
/// put it into fixed text. Tests hold it to [`ActionKind::ALL`] and to the kinds a grammar
/// offers (`tests/constrained.rs`).
macro_rules! canonical_kinds {
    () => {
        "working_memory_add, working_memory_remove, storage_save, storage_load, storage_search"
    };
}
pub(crate) use canonical_kinds;

/// `canonical_kinds!` as a constant: the kinds a model is told it may write, and that a
/// grammar offers (`grammar::OFFERED_ACTIONS`, in an order of its own).
pub const CANONICAL_KINDS: &str = canonical_kinds!();

/// The canonical action kinds every dialect maps onto.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ActionKind {
    /// Put `value` in working memory under `tags` (overwrites).
    #[default]
    WorkingMemoryAdd,
    /// Remove the working-memory entry `tags`.
    WorkingMemoryRemove,
    /// Save `value` in the store under `tags`.
    StorageSave,
    /// Copy the stored entry `tags` into working memory.
    StorageLoad,
    /// Search the store: `tags` (AND-match on tags) and/or `query` (text).
    StorageSearch,
    /// Paging: move the working-memory entries `tags` to the store (era-A `move_to_disk`).
    PageOut,
    /// Paging: bring stored entries `tags` into working memory (era-A `retrieve_from_disk`).
    PageIn,
    /// Paging: archive entries `tags` (kept on disk, out of default search; era-A `archive_old`).
    Archive,
    /// kjxlkj `record_update`: replace the stored entry `tags` with `value`, if its version is
    /// still `base_version` (when given; a stale one is `VERSION_CONFLICT` in the store).
    RecordUpdate,
    /// kjxlkj `record_issue`: flag an issue on entry `tags` with `value` and `metadata`.
    RecordIssue,
}

impl ActionKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ActionKind; 10] = [
        ActionKind::WorkingMemoryAdd,
        ActionKind::WorkingMemoryRemove,
        ActionKind::StorageSave,
        ActionKind::StorageLoad,
        ActionKind::StorageSearch,
        ActionKind::PageOut,
        ActionKind::PageIn,
        ActionKind::Archive,
        ActionKind::RecordUpdate,
        ActionKind::RecordIssue,
    ];

    /// The stable name, as the model writes it in `<type>`.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::WorkingMemoryAdd => "working_memory_add",
            ActionKind::WorkingMemoryRemove => "working_memory_remove",
            ActionKind::StorageSave => "storage_save",
            ActionKind::StorageLoad => "storage_load",
            ActionKind::StorageSearch => "storage_search",
            ActionKind::PageOut => "move_to_disk",
            ActionKind::PageIn => "retrieve_from_disk",
            ActionKind::Archive => "archive_old",
            ActionKind::RecordUpdate => "record_update",
            ActionKind::RecordIssue => "record_issue",
        }
    }

    /// The kind a `<type>` names: the canonical names, plus the aliases older prompts and
    /// other eras used (ASCII case-insensitive; `-` and spaces count as `_`).
    pub fn from_name(name: &str) -> Option<ActionKind> {
        const ALIASES: &[(&str, ActionKind)] = &[
            ("working_memory_add", ActionKind::WorkingMemoryAdd),
            ("memory_add", ActionKind::WorkingMemoryAdd),
            ("wm_add", ActionKind::WorkingMemoryAdd),
            ("ram_add", ActionKind::WorkingMemoryAdd),
            ("working_memory_remove", ActionKind::WorkingMemoryRemove),
            ("working_memory_delete", ActionKind::WorkingMemoryRemove),
            ("memory_remove", ActionKind::WorkingMemoryRemove),
            ("memory_delete", ActionKind::WorkingMemoryRemove),
            ("wm_remove", ActionKind::WorkingMemoryRemove),
            ("ram_delete", ActionKind::WorkingMemoryRemove),
            ("storage_save", ActionKind::StorageSave),
            ("storage_store", ActionKind::StorageSave),
            ("record_add", ActionKind::StorageSave),
            ("storage_load", ActionKind::StorageLoad),
            ("storage_get", ActionKind::StorageLoad),
            ("storage_search", ActionKind::StorageSearch),
            ("record_search", ActionKind::StorageSearch),
            ("move_to_disk", ActionKind::PageOut),
            ("page_out", ActionKind::PageOut),
            ("retrieve_from_disk", ActionKind::PageIn),
            ("page_in", ActionKind::PageIn),
            ("archive_old", ActionKind::Archive),
            ("archive", ActionKind::Archive),
            ("record_update", ActionKind::RecordUpdate),
            ("record_issue", ActionKind::RecordIssue),
        ];
        let name = name.trim();
        ALIASES.iter().find(|(a, _)| same_name(a, name)).map(|&(_, k)| k)
    }

    /// Whether this kind needs `tags`.
    pub fn needs_tags(self) -> bool {
        self != ActionKind::StorageSearch
    }

    /// Whether this kind needs a `value`.
    pub fn needs_value(self) -> bool {
        matches!(
            self,
            ActionKind::WorkingMemoryAdd | ActionKind::StorageSave | ActionKind::RecordUpdate | ActionKind::RecordIssue
        )
    }
}

/// `canonical` (lowercase, `_`) equals `written` ignoring ASCII case, with `-` and ` ` in
/// `written` read as `_`.
pub(crate) fn same_name(canonical: &str, written: &str) -> bool {
    canonical.len() == written.len()
        && canonical.bytes().zip(written.bytes()).all(|(c, w)| {
            let w = match w {
                b'-' | b' ' => b'_',
                other => other.to_ascii_lowercase(),
            };
            c == w
        })
}

/// The dialect an instruction was written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Form {
    /// Era B/C/TS: `<next_state>`/`<state>`, `<think_log>`, `<evaluation_log>`,
    /// `<action><type>..</type>..</action>` (alone, several, or in `<actions>`).
    #[default]
    Canonical,
    /// Era A: `<thinking>`, `<action>` with `<operation>`, `<evaluation>`, `<paging>`.
    EraA,
    /// kjxlkj: `ram_add`, `ram_delete`, `state_add`, `state_delete`, `record_*`.
    Kjxlkj,
}

impl Form {
    /// The stable name: `canonical`, `era_a`, `kjxlkj`.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Canonical => "canonical",
            Form::EraA => "era_a",
            Form::Kjxlkj => "kjxlkj",
        }
    }
}

/// A memory action with its parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action<'r> {
    /// What to do.
    pub kind: ActionKind,
    /// The key or tag list as written (`<tags>`, `<key>`, `<keywords>`, `<context_key>`, a
    /// paging directive's list), trimmed; "" when absent (only `storage_search` may omit it).
    pub tags: &'r str,
    /// The text to store (`<value>`, `<data>`, `<content>`).
    pub value: Option<&'r str>,
    /// A text query (`<query>`; for `storage_search` also `<value>`).
    pub query: Option<&'r str>,
    /// kjxlkj `record_update`'s `<version>`/`<base_version>`.
    pub base_version: Option<&'r str>,
    /// kjxlkj `record_issue`'s `<metadata>`.
    pub metadata: Option<&'r str>,
    /// The dialect it was written in.
    pub form: Form,
    /// The element it came from (`action`, `ram_add`, `move_to_disk`...).
    pub element: &'r str,
    /// Byte offset of that element in the original reply.
    pub offset: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases() {
        for k in ActionKind::ALL {
            assert_eq!(ActionKind::from_name(k.as_str()), Some(k));
        }
        assert_eq!(ActionKind::from_name(" Storage-Save "), Some(ActionKind::StorageSave));
        assert_eq!(ActionKind::from_name("WORKING MEMORY ADD"), Some(ActionKind::WorkingMemoryAdd));
        assert_eq!(ActionKind::from_name("memory_add"), Some(ActionKind::WorkingMemoryAdd));
        assert_eq!(ActionKind::from_name("storage_delete"), None);
        assert_eq!(ActionKind::from_name(""), None);
    }

    #[test]
    fn the_canonical_list_is_the_first_kinds_in_order() {
        let listed = CANONICAL_KINDS.split(", ").count();
        let names: Vec<&str> = ActionKind::ALL.iter().take(listed).map(|k| k.as_str()).collect();
        assert_eq!(CANONICAL_KINDS, names.join(", "));
        assert_eq!(listed, 5);
    }
}
