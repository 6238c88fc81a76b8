//! Feedback for the model.
use super::read::Interpretation;
use core::fmt;
/// x
pub fn write_feedback(out: &mut dyn fmt::Write, it: &Interpretation<'_>, state: &str) -> fmt::Result {
    let _ = (out, it, state);
    Ok(())
}
/// x
pub fn write_example(out: &mut dyn fmt::Write, state: &str) -> fmt::Result {
    let _ = (out, state);
    Ok(())
}
