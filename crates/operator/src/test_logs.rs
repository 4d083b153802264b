//! Log capture for tests: one process-wide `tracing` subscriber, installed once, that writes each event to the
//! buffer of the capture active on the thread that emits it.
//!
//! # Why not a scoped subscriber per test
//!
//! `tracing` caches each callsite's [`Interest`] process-wide, the first time any thread reaches that callsite.
//! While at most one `Dispatch` is registered, tracing-core 0.1 computes that interest from the *registering
//! thread's* default subscriber (`Rebuilder::JustOne` → `dispatcher::get_default`), not from the registered one.
//! So with `tracing::subscriber::set_default`/`with_default` in one test and no subscriber in another test running
//! on a second thread, the second thread can be the first to reach a callsite: its default is `NoSubscriber`, the
//! cached interest becomes `never`, and the capturing test then never sees that event (issue 16:
//! `files::tests::neither_the_token_nor_the_tls_key_reaches_debug_output_errors_or_logs` lost its
//! "minted a node-bootstrapper token" line; tokio-rs/tracing#3611 describes the same path). Creating a `Dispatch`
//! re-evaluates only the callsites registered so far, so neither the scoped subscriber's own registration nor a
//! `tracing::callsite::rebuild_interest_cache()` after it covers a callsite registered later; and a subscriber
//! answering `Interest::sometimes()` does not help when only the other thread's `NoSubscriber` is asked.
//!
//! # What this module does instead
//!
//! It follows what tracing's `callsite` docs describe: interest is cached from the subscribers that are active,
//! and a subscriber whose answer depends on state that changes at run time returns `Interest::sometimes()` from
//! `register_callsite`, so that `enabled` is asked for every event. The one subscriber here is the global default
//! (`set_global_default`, installed once through a `OnceLock`), so every thread, with or without a capture, resolves
//! to it when a callsite registers, and its per-layer [`Filter`] answers `sometimes` for every callsite; no callsite
//! can be cached as `never`. Whether an event is written, and where, is decided per event by [`Filter::enabled`]:
//! only on a thread holding a [`CapturedLogs`], into that capture's buffer, in its format and up to its level. A
//! `#[tokio::test]` runs its future on the test's own thread (current-thread runtime), so everything the test
//! drives is captured, as it was with `set_default`.
//!
//! Tests must not call `set_default`/`with_default` or `set_global_default` themselves; they start a
//! [`CapturedLogs`] instead.

use std::cell::RefCell;
use std::io::Write;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::subscriber::Interest;
use tracing::{Level, Metadata};
use tracing_subscriber::layer::{Context, Filter, SubscriberExt as _};
use tracing_subscriber::{Layer as _, fmt};

/// How a capture formats its lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// `tracing_subscriber`'s default human-readable lines, without ANSI colours.
    Text,
    /// One JSON object per line with the event's fields flattened, the current span under `span` and the span
    /// stack under `spans`, as `wmco run` logs.
    Json,
}

/// The capture active on one thread.
#[derive(Clone)]
struct ActiveCapture {
    format: LogFormat,
    max_level: Level,
    lines: Arc<Mutex<Vec<u8>>>,
}

thread_local! {
    /// The capture of the current thread, if a test started one.
    static ACTIVE: RefCell<Option<ActiveCapture>> = const { RefCell::new(None) };
}

/// The capture active on this thread, if it is in `format`.
fn active_capture(format: LogFormat) -> Option<ActiveCapture> {
    ACTIVE.try_with(|active| active.borrow().clone()).ok().flatten().filter(|capture| capture.format == format)
}

/// The per-layer filter of one format: it passes what the current thread's capture takes, and answers
/// `Interest::sometimes()` for every callsite because that depends on the thread and the moment.
struct CaptureFilter(LogFormat);

impl<S> Filter<S> for CaptureFilter {
    fn enabled(&self, metadata: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        active_capture(self.0).is_some_and(|capture| metadata.level() <= &capture.max_level)
    }

    fn callsite_enabled(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
}

/// Where one format's layer writes an event: the buffer of the current thread's capture (the filter has already
/// checked that there is one in this format).
struct CaptureWriter(Option<Arc<Mutex<Vec<u8>>>>);

impl CaptureWriter {
    fn for_current_thread(format: LogFormat) -> Self {
        Self(active_capture(format).map(|capture| capture.lines))
    }
}

impl Write for CaptureWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Some(lines) = &self.0 {
            lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the global capturing subscriber, once per test process.
fn install_global_subscriber() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let text = fmt::layer()
            .with_ansi(false)
            .with_writer(|| CaptureWriter::for_current_thread(LogFormat::Text))
            .with_filter(CaptureFilter(LogFormat::Text));
        let json = fmt::layer()
            .json()
            .flatten_event(true)
            .with_writer(|| CaptureWriter::for_current_thread(LogFormat::Json))
            .with_filter(CaptureFilter(LogFormat::Json));
        let subscriber = tracing_subscriber::registry().with(text).with(json);
        tracing::subscriber::set_global_default(subscriber).expect(
            "no other global tracing subscriber in the test process: tests capture logs with test_logs::CapturedLogs",
        );
    });
    // Installing the global default re-evaluated every callsite registered so far; a callsite whose registration
    // was under way on another thread while it was installed may still have stored `never` afterwards. Asking
    // again at every capture start clears that (cheap: one pass over the registered callsites).
    tracing::callsite::rebuild_interest_cache();
}

/// The log lines emitted on this thread while it lives, up to `max_level`; the previous capture of the thread,
/// if any, resumes when it is dropped. Not `Send`: a capture belongs to the thread that started it.
pub(crate) struct CapturedLogs {
    lines: Arc<Mutex<Vec<u8>>>,
    previous: Option<ActiveCapture>,
    _this_thread: PhantomData<*const ()>,
}

impl CapturedLogs {
    /// Starts capturing this thread's events up to `max_level`, formatted as `format`.
    pub(crate) fn start(format: LogFormat, max_level: Level) -> Self {
        install_global_subscriber();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let capture = ActiveCapture { format, max_level, lines: Arc::clone(&lines) };
        let previous = ACTIVE.with(|active| active.replace(Some(capture)));
        Self { lines, previous, _this_thread: PhantomData }
    }

    /// Everything captured so far.
    pub(crate) fn contents(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&lines).into_owned()
    }
}

impl Drop for CapturedLogs {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // The thread-local is gone only while the thread exits, when nothing is left to restore.
        let _ = ACTIVE.try_with(|active| active.replace(previous));
    }
}

mod tests;
