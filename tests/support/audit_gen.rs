//! A generated audit log of any length, for the report's tests and benchmarks: lines in the
//! shape the agent writes, in runs of 20,000 cycles ten seconds apart; every fourth cycle pages,
//! every third commanding cycle's action fails, every fiftieth reply is invalid (`NO_TAGS`),
//! and cycle 77,777 is slow (999,999 ms). Prompt digests are the cycle number in 64 digits.
//!
//! Include with `#[path = "support/audit_gen.rs"] mod audit_gen;`.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

/// Time of cycle 0 (cycle `c` is at `START + 10 c`).
pub const START: u64 = 1_790_000_000;

/// The audit log of cycles `1..=n`.
pub fn audit_log(n: u64) -> String {
    let mut bytes = Vec::with_capacity(n as usize * 320);
    write_audit_log(&mut bytes, n).unwrap();
    String::from_utf8(bytes).unwrap()
}

/// Writes the audit log of cycles `1..=n` to `out`, a line at a time.
pub fn write_audit_log(out: &mut impl std::io::Write, n: u64) -> std::io::Result<()> {
    for c in 1..=n {
        let state = ["thinking", "commanding", "evaluating", "paging"][(c % 4) as usize];
        let latency = if c == 77_777 { 999_999 } else { 500 + c % 700 };
        let (valid, problems) = if c % 50 == 0 { ("false", "\"NO_TAGS\"") } else { ("true", "") };
        let action = if state == "commanding" {
            format!("{{\"type\":\"storage_save\",\"key\":\"k{c}\",\"ok\":{},\"result\":\"r\"}}", c % 3 != 0)
        } else {
            String::new()
        };
        let est = 1000 + c % 2000;
        out.write_all(
            format!(
                "{{\"time\":{},\"run\":\"run{}\",\"cycle\":{c},\"state\":\"{state}\",\"next_state\":\"thinking\",\
\"prompt_sha256\":\"{c:064}\",\"prompt_bytes\":{},\"prompt_tokens_est\":{est},\"reply_bytes\":120,\
\"latency_ms\":{latency},\"usage\":{{\"prompt_tokens\":{est},\"completion_tokens\":50}},\"cached_tokens\":100,\
\"valid\":{valid},\"finish\":\"stop\",\"constrain\":\"grammar\",\"seed\":{c},\"actions\":[{action}],\
\"problems\":[{problems}],\"error\":null}}\n",
                START + c * 10,
                c / 20_000,
                est * 3,
            )
            .as_bytes(),
        )?;
    }
    Ok(())
}
