//! The agent's states, named once. A configuration chooses which states exist (`agent.state`
//! in `config.json`), but these names mean something to the program itself: the state a fresh
//! memory starts in, where the cycle goes after an action, the state the budget forces, and
//! the era-A name of `commanding`.

/// Deciding what to do next; where a fresh memory starts and where every refusal leads.
pub const THINKING: &str = "thinking";
/// Carrying out one memory action.
pub const COMMANDING: &str = "commanding";
/// Judging the result of the last action; where a successful action leads.
pub const EVALUATING: &str = "evaluating";
/// Moving entries out of working memory; the state the prompt budget forces.
pub const PAGING: &str = "paging";
/// The era-A name of [`COMMANDING`].
pub const EXECUTING: &str = "executing";

/// The states used when a configuration names none (era-A configurations).
pub const DEFAULT: [&str; 4] = [THINKING, COMMANDING, EVALUATING, PAGING];

/// The canonical name of a state: [`EXECUTING`] is [`COMMANDING`], every other name is itself.
pub fn canonical(name: &str) -> &str {
    if name == EXECUTING {
        COMMANDING
    } else {
        name
    }
}
