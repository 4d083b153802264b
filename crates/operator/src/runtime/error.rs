//! The one trait every controller's error enum implements, so logging, metrics and retries treat them alike
//! (stackable-operator's `ReconcilerError`, controller-rs's `Error::metric_label`).

/// An error that ends one reconcile.
///
/// ```
/// use wmco_operator::runtime::ReconcilerError;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("the thing is gone")]
/// struct Gone;
///
/// impl ReconcilerError for Gone {
///     fn metric_label(&self) -> &'static str {
///         "gone"
///     }
/// }
///
/// assert_eq!(Gone.metric_label(), "gone");
/// assert!(Gone.is_retryable());
/// ```
pub trait ReconcilerError: std::error::Error {
    /// A short, stable label: the `kind` of `wmco_reconcile_errors_total` and of the log line.
    fn metric_label(&self) -> &'static str;

    /// Whether trying again can succeed without an admin changing something (a requeue with backoff); `false`
    /// waits for the object to change. Retryable unless the error says otherwise.
    fn is_retryable(&self) -> bool {
        true
    }
}

/// A two-kind error for the runtime's tests: `Unreachable` (retryable) and `Unreadable` (waits for a change).
#[cfg(test)]
#[derive(Debug, thiserror::Error)]
pub(crate) enum TestFailure {
    #[error("the API server did not answer")]
    Unreachable,
    #[error("the manifest is unreadable")]
    Unreadable,
}

#[cfg(test)]
impl ReconcilerError for TestFailure {
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Unreachable => "unreachable",
            Self::Unreadable => "unreadable",
        }
    }

    fn is_retryable(&self) -> bool {
        matches!(self, Self::Unreachable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_its_kind_and_whether_a_retry_can_help() {
        let errors: [&dyn ReconcilerError; 2] = [&TestFailure::Unreachable, &TestFailure::Unreadable];
        let kinds: Vec<_> = errors.iter().map(|error| (error.metric_label(), error.is_retryable())).collect();
        assert_eq!(kinds, [("unreachable", true), ("unreadable", false)]);
    }
}
