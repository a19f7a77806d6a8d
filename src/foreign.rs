//! Calls into libraries that panic on input they cannot handle: Qdrant's embedded engine on
//! damaged files (and its log on a failed flush), the Parquet reader on damaged pages and
//! footers. Such a panic is no bug of
//! the caller's to report with a backtrace; [`catch`] turns it into the library's message, for
//! an error that says what to do, and the binary's panic hook keeps quiet while a call runs
//! ([`catching`]).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many guarded calls are running, on any thread.
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Whether a guarded call is running (for the binary's panic hook). Libraries panic on threads
/// of their own too, so this is not per thread.
pub fn catching() -> bool {
    CALLS.load(Ordering::SeqCst) > 0
}

/// Runs `call`; a panic inside it becomes `Err` with the panic's message, without the
/// `unwrap` wording that is no news to a user.
pub fn catch<T>(call: impl FnOnce() -> T) -> Result<T, String> {
    CALLS.fetch_add(1, Ordering::SeqCst);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(call));
    CALLS.fetch_sub(1, Ordering::SeqCst);
    outcome.map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        tracing::debug!(message, "a library panicked");
        let cause = [
            "called `Result::unwrap()` on an `Err` value: ",
            "called `Option::unwrap()` on a `None` value",
        ]
        .iter()
        .fold(message.as_str(), |m, prefix| {
            m.strip_prefix(prefix).unwrap_or(m)
        })
        .trim();
        // The engine's errors print the backtrace they carry: the error is what helps.
        let cause = match cause.split_once(", backtrace: ") {
            Some((error, _)) => format!("{error} }}"),
            None => cause.to_owned(),
        };
        match cause.is_empty() {
            true => "a value it needs is missing".to_owned(),
            false => cause,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_the_count_goes_back() {
        assert_eq!(catch(|| 7), Ok(7));
        let caught = catch(|| -> u8 { Err::<u8, &str>("bad page").unwrap() });
        assert_eq!(caught, Err("\"bad page\"".to_owned()));
        assert_eq!(
            catch(|| -> u8 { None.unwrap() }),
            Err("a value it needs is missing".into())
        );
        assert!(!catching());
        let engine = catch(|| -> u8 {
            panic!("flushed: E {{ description: \"gone\", backtrace: Some(\"0: f\\n1: g\") }}")
        });
        assert_eq!(engine, Err("flushed: E { description: \"gone\" }".into()));
    }
}
