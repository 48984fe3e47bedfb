//! Clocks. `SystemClock` is the only place in the project that reads wall
//! time; everything deterministic (replay, tests) uses `ManualClock`
//! (the core's `StepClock`).

use std::time::{SystemTime, UNIX_EPOCH};

use sink_coordinator::Clock;

/// Milliseconds since the Unix epoch from the system clock (0 before 1970).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&mut self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// The trace clock of TRACE-FORMAT: the first reading returns `start`, each
/// later reading adds `step`; `set_next` fixes the next reading. It is the
/// core's [`StepClock`](sink_coordinator::StepClock), named for hosts.
pub use sink_coordinator::StepClock as ManualClock;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_steps_and_can_be_set() {
        let mut c = ManualClock::new(1000, 2);
        assert_eq!(c.now_ms(), 1000);
        assert_eq!(c.now_ms(), 1002);
        c.set_next(50);
        assert_eq!(c.now_ms(), 50);
        assert_eq!(c.now_ms(), 52);
        let mut c = ManualClock::new(u64::MAX - 1, 5);
        assert_eq!(c.now_ms(), u64::MAX - 1);
        assert_eq!(c.now_ms(), u64::MAX);
        assert_eq!(c.now_ms(), u64::MAX);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
