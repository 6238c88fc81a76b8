//! The run loop: cycles until the configured count, a stop request, or the end of the model
//! source; paces cycles (`agent.iterate.delay_ms`, the back-off an invalid reply asks for),
//! waits longer after each failed cycle (1, 2, 4 ... 60 s), and closes the store cleanly. What
//! it shows is the caller's [`Observer`]: the command line prints status lines, tests collect
//! reports.

use super::engine::{Agent, CycleReport};
use crate::error::{Code, Error, Result};
use std::time::Duration;

/// Why the loop ended.
#[derive(Debug)]
pub enum End {
    /// The configured number of cycles is done.
    Done,
    /// A stop was requested (SIGINT/SIGTERM); the last cycle was persisted.
    Stopped,
    /// The model source has nothing more (the end of a replay script or a recorded run).
    SourceUsedUp,
    /// The task asks for a count of units ("a five-day trip") and the product holds them.
    TaskDone,
    /// The prompt cannot fit even with working memory paged out: waiting will not change
    /// that, so the run stops and says what to change.
    CannotFit(Box<Error>),
}

/// What the loop shows as it runs.
pub trait Observer {
    /// The loop starts; `max` is the number of cycles to run (-1: until stopped).
    fn start(&mut self, agent: &Agent, max: i64);
    /// Pieces of cycle `cycle`'s reply streamed in so far.
    fn progress(&mut self, cycle: u64, pieces: u64);
    /// A cycle ended (not called for the cycle that found the source used up).
    fn cycle(&mut self, report: &CycleReport, agent: &Agent);
    /// The cycle failed; the next one comes after `wait`.
    fn retry(&mut self, wait: Duration);
    /// The loop ended after `done` successful cycles.
    fn end(&mut self, agent: &Agent, done: i64, why: &End);
}

/// Runs cycles (see the module documentation). `Err` only when state could not be persisted.
pub fn run(agent: &mut Agent, should_stop: &dyn Fn() -> bool, obs: &mut dyn Observer) -> Result<End> {
    let max = agent.config.agent.max_iterations;
    let delay = Duration::from_millis(agent.config.agent.delay_ms);
    let mut done: i64 = 0;
    let mut failures: u32 = 0;
    obs.start(agent, max);
    let why = loop {
        if max >= 0 && done >= max {
            break End::Done;
        }
        if should_stop() {
            break End::Stopped;
        }
        let cycle = agent.memory.iteration + 1;
        let report = agent.cycle(&mut |pieces| obs.progress(cycle, pieces), should_stop)?;
        if report.finished {
            break End::SourceUsedUp;
        }
        if report.task_done {
            break End::TaskDone;
        }
        obs.cycle(&report, agent);
        let mut pause = report.pause.max(delay);
        match report.error {
            Some(e) if e.code() == Code::Interrupted => break End::Stopped,
            // A reply over one of the reader's capacities is a failed cycle like any other.
            Some(e) if report.prompt_over_budget => break End::CannotFit(Box::new(e)),
            Some(_) => {
                failures += 1;
                let backoff =
                    Duration::from_secs(1u64 << failures.min(6).saturating_sub(1)).min(Duration::from_secs(60));
                obs.retry(backoff);
                pause = pause.max(backoff);
            }
            None => {
                failures = 0;
                done += 1;
            }
        }
        if (max < 0 || done < max)
            && !pause.is_zero()
            && crate::clock::sleep_unless_stopped(pause, should_stop).is_err()
        {
            break End::Stopped;
        }
    };
    if !matches!(why, End::CannotFit(_)) {
        if let Err(e) = agent.close_store() {
            e.context(format_args!("the store's checkpoint was not written (the next start reads more log)"))
                .print_warning();
        }
    }
    obs.end(agent, done, &why);
    Ok(why)
}
