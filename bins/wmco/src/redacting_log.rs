//! The process's log writer: every formatted log line passes through [`wmco_redact::redact`] before it reaches
//! standard error, so no field, error or message the product logs (a proxy URL with a password, a host's output
//! quoting a token) leaves the process with a credential in it.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// A [`MakeWriter`] whose writers redact what the wrapped one's writers would write.
#[derive(Debug, Clone, Copy)]
pub struct Redacting<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Redacting<M> {
    type Writer = RedactingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter { inner: self.0.make_writer(), pending: Vec::new() }
    }
}

/// Collects one event's formatted text (`tracing_subscriber` makes a writer per event) and writes it redacted when
/// flushed or dropped: a credential split across two `write` calls is still seen whole.
pub struct RedactingWriter<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> RedactingWriter<W> {
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let redacted = wmco_redact::redact(&String::from_utf8_lossy(&self.pending));
        self.pending.clear();
        self.inner.write_all(redacted.as_bytes())
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_pending()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        // A log line that cannot be written has nowhere to be reported.
        let _ = self.write_pending();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, PoisonError};

    use super::*;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn log_lines_reach_the_writer_redacted_in_text_and_json() {
        let captured = Captured::default();
        let writer = captured.clone();
        let text = tracing_subscriber::fmt().with_ansi(false).with_writer(Redacting(move || writer.clone())).finish();
        tracing::subscriber::with_default(text, || {
            tracing::info!(proxy = "http://wmco:pr0xy-s3cret@proxy.example:3129", "cluster settings changed");
        });
        let writer = captured.clone();
        let json = tracing_subscriber::fmt().json().with_writer(Redacting(move || writer.clone())).finish();
        tracing::subscriber::with_default(json, || {
            tracing::warn!("step failed: password = hunter2-s3cret");
        });
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(log.contains("proxy=\"http://[REDACTED]@proxy.example:3129\""), "{log}");
        assert!(log.contains("step failed: password = [REDACTED]"), "{log}");
        assert!(!log.contains("s3cret"), "{log}");
        assert_eq!(log.lines().count(), 2, "{log}");
    }

    #[test]
    fn a_credential_split_across_writes_is_redacted_whole() {
        let captured = Captured::default();
        let mut writer = Redacting(|| captured.clone()).make_writer();
        writer.write_all(b"HTTPS_PROXY=http://wmco:pr0x").unwrap();
        writer.write_all(b"y-s3cret@proxy:3129\n").unwrap();
        drop(writer);
        assert_eq!(
            String::from_utf8(captured.0.lock().unwrap().clone()).unwrap(),
            "HTTPS_PROXY=http://[REDACTED]@proxy:3129\n"
        );
    }
}
