//! The reply protocol: from a parsed model reply to the list of instructions the agent carries
//! out, the problems found, and the feedback for the model.
