//! What the agent knows: the working set shown in the prompt and the persistent tagged store.
