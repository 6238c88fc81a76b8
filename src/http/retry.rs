//! Bounded retries with capped exponential backoff (the kjxlkj contract: 3 retries, 100 ms
//! base, 5 s cap), and a sleep that a stop request (SIGTERM) cuts short.
//!
//! What is retried is decided here too, in one place: connection failures
//! (`LLM_UNAVAILABLE`), timeouts (`LLM_TIMEOUT`), `429` and every `5xx` (a `503` is how
//! llama.cpp says "Loading model" and how Ollama says its queue is full), except a `500` its
//! caller resends changed itself ([`super::Request::resend_500`]: a seeded generation goes again
//! with another seed, `crate::llm::Client`). Other `4xx` are the
//! request's fault and would fail again; protocol errors (`HTTP_PROTOCOL`,
//! `RESPONSE_TOO_LARGE`) mean the server speaks something this client will not accept, and
//! retrying only delays the message the user needs. The delay is deterministic (no jitter):
//! one agent talks to one local server, so there is no herd to spread, and runs stay
//! reproducible.

use crate::error::{Code, Error};
use crate::limits::HTTP_RETRY_AFTER_MAX_SECS;
use std::time::Duration;

/// How many times, and how patiently, a failed request is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` attempts). Default 3.
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each next one. Default 100 ms.
    pub base_delay: Duration,
    /// Longest delay computed by doubling. Default 5 s.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 3, base_delay: Duration::from_millis(100), max_delay: Duration::from_secs(5) }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (0 for the first retry): `base * 2^retry`, capped.
    pub fn delay(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }

    /// The delay before retry `retry` after a response that said `Retry-After: secs`: the
    /// server's wish, cut to [`HTTP_RETRY_AFTER_MAX_SECS`], but never less than the backoff.
    pub fn delay_after(&self, retry: u32, retry_after_secs: Option<u64>) -> Duration {
        let backoff = self.delay(retry);
        match retry_after_secs {
            Some(s) => Duration::from_secs(s.min(HTTP_RETRY_AFTER_MAX_SECS)).max(backoff),
            None => backoff,
        }
    }
}

/// Whether a response status is worth another attempt: 429 and 5xx.
pub fn status_is_retryable(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// Whether an error is worth another attempt: connection failures and timeouts.
pub fn error_is_retryable(e: &Error) -> bool {
    matches!(e.code(), Code::LlmUnavailable | Code::LlmTimeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::sleep_unless_stopped;
    use std::time::Instant;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::default();
        let ms: Vec<u128> = (0..8).map(|i| p.delay(i).as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(p.delay(u32::MAX), Duration::from_secs(5));
        assert_eq!(p.delay_after(0, Some(2)), Duration::from_secs(2));
        assert_eq!(p.delay_after(0, Some(0)), Duration::from_millis(100));
        assert_eq!(p.delay_after(0, Some(1 << 40)), Duration::from_secs(HTTP_RETRY_AFTER_MAX_SECS));
    }

    #[test]
    fn classification() {
        assert!(status_is_retryable(429) && status_is_retryable(503) && status_is_retryable(500));
        assert!(!status_is_retryable(400) && !status_is_retryable(404) && !status_is_retryable(200));
        assert!(error_is_retryable(&err!(LlmTimeout, "t")));
        assert!(!error_is_retryable(&err!(HttpProtocol, "p")));
    }

    #[test]
    fn sleep_stops_early() {
        let t = Instant::now();
        let e = sleep_unless_stopped(Duration::from_secs(30), &|| true).unwrap_err();
        assert_eq!(e.code(), Code::Interrupted);
        assert!(t.elapsed() < Duration::from_secs(1));
        sleep_unless_stopped(Duration::from_millis(5), &|| false).unwrap();
    }
}
