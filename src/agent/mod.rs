//! The agent: configuration, prompts, the state machine, paging and the loop.
