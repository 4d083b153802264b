//! The crate's error: every variant names the object kind, the object and the verb that failed, so a log line
//! reads like a sentence ("patch Node win-1: …").

use std::fmt;
use std::time::Duration;

/// What the operator was doing to an object when a call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Read one object.
    Get,
    /// List objects.
    List,
    /// Create an object.
    Create,
    /// Patch an object (merge or JSON patch).
    Patch,
    /// Server-side apply with field manager `wmco`.
    Apply,
    /// Replace an object or a subresource.
    Replace,
    /// Delete an object.
    Delete,
    /// Evict a pod through the eviction API.
    Evict,
    /// Approve a CertificateSigningRequest.
    Approve,
    /// Deny a CertificateSigningRequest.
    Deny,
    /// Request a ServiceAccount token.
    RequestToken,
    /// Publish an Event.
    Publish,
    /// Ask the API server for its version.
    Discover,
    /// Read a container's log.
    ReadLog,
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Create => "create",
            Verb::Patch => "patch",
            Verb::Apply => "apply",
            Verb::Replace => "replace",
            Verb::Delete => "delete",
            Verb::Evict => "evict",
            Verb::Approve => "approve",
            Verb::Deny => "deny",
            Verb::RequestToken => "request a token for",
            Verb::Publish => "publish an event about",
            Verb::Discover => "discover",
            Verb::ReadLog => "read the log of",
        })
    }
}

/// A pod that kept a drain from finishing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedPod {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Why the pod is still on the node.
    pub reason: BlockReason,
}

/// Why a pod kept a drain from finishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockReason {
    /// The eviction API answered 429: a PodDisruptionBudget forbids the disruption; holds the server's message.
    DisruptionBudget(String),
    /// The pod uses emptyDir volumes and the drain was not allowed to delete their data.
    EmptyDirData,
    /// The pod was evicted but has not gone away yet.
    StillTerminating,
    /// The eviction call got no answer within the retry interval (a client retrying 429 answers itself looks so).
    EvictionUnanswered,
}

impl fmt::Display for BlockedPod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            BlockReason::DisruptionBudget(message) => {
                write!(f, "{} (PodDisruptionBudget: {message})", self.pod)
            }
            BlockReason::EmptyDirData => write!(f, "{} (uses emptyDir data; deletion not allowed)", self.pod),
            BlockReason::StillTerminating => write!(f, "{} (evicted, still terminating)", self.pod),
            BlockReason::EvictionUnanswered => write!(f, "{} (eviction unanswered)", self.pod),
        }
    }
}

/// Formats blocked pods as a comma-separated list for error messages.
struct BlockedList<'a>(&'a [BlockedPod]);

impl fmt::Display for BlockedList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, blocked) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{blocked}")?;
        }
        Ok(())
    }
}

/// Errors of every cluster call; each names the verb, the object kind and the object.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused the call or could not be reached.
    #[error("{verb} {kind} {name} failed")]
    Api {
        /// What was being done.
        verb: Verb,
        /// The object kind, e.g. `Node`.
        kind: &'static str,
        /// The object, `namespace/name` for namespaced objects.
        name: String,
        /// What kube reported.
        #[source]
        source: Box<kube::Error>,
    },
    /// An object lacks a field the call needs (in the answer, or in the object handed in).
    #[error("{verb} {kind} {name}: {field} is missing")]
    MissingField {
        /// What was being done.
        verb: Verb,
        /// The object kind.
        kind: &'static str,
        /// The object.
        name: String,
        /// The JSON path of the missing field.
        field: &'static str,
    },
    /// A field holds a value the operator cannot use.
    #[error("{kind} {name}: {field} is {value:?}, expected {expected}")]
    InvalidField {
        /// The object kind.
        kind: &'static str,
        /// The object.
        name: String,
        /// The JSON path of the field.
        field: &'static str,
        /// The value found.
        value: String,
        /// What a usable value looks like.
        expected: &'static str,
    },
    /// A drain did not finish within its timeout.
    #[error("drain of Node {node} did not finish within {timeout:?}; blocked by {}", BlockedList(.blocked))]
    DrainTimedOut {
        /// The node being drained.
        node: String,
        /// The drain's time bound.
        timeout: Duration,
        /// The pods still on the node and why.
        blocked: Vec<BlockedPod>,
    },
    /// A drain could not start because some pods may not be removed at all.
    #[error("drain of Node {node} refused; blocked by {}", BlockedList(.blocked))]
    DrainRefused {
        /// The node being drained.
        node: String,
        /// The pods that may not be removed.
        blocked: Vec<BlockedPod>,
    },
    /// The drain's own client (one that does not retry 429 answers) could not be built.
    #[error("build the Kubernetes client for draining")]
    DrainClient(#[source] kube::Error),
    /// The `WindowsInstance` CRD could not be rendered as YAML.
    #[error("render the WindowsInstance CustomResourceDefinition as YAML")]
    RenderCrd(#[source] serde_saphyr::SerializeError),
}

impl Error {
    /// Wraps a kube error with the verb, kind and name of the call that failed.
    pub fn api(verb: Verb, kind: &'static str, name: impl Into<String>, source: kube::Error) -> Self {
        Error::Api { verb, kind, name: name.into(), source: Box::new(source) }
    }

    /// The HTTP status code the API server answered with, if the call reached it and failed.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Error::Api { source, .. } => match source.as_ref() {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the object does not exist (404).
    pub fn is_not_found(&self) -> bool {
        self.status_code() == Some(404)
    }

    /// Whether the call lost an optimistic-concurrency race or a field-ownership conflict (409).
    pub fn is_conflict(&self) -> bool {
        self.status_code() == Some(409)
    }
}

/// Formats `namespace/name`, or `name` for cluster-scoped objects.
pub(crate) fn object_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> Error {
        let status = kube::core::Status { code, message: "nope".into(), ..kube::core::Status::default() };
        Error::api(Verb::Patch, "Node", "win-1", kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn api_errors_name_the_verb_kind_and_object() {
        assert_eq!(api_error(500).to_string(), "patch Node win-1 failed");
        assert_eq!(api_error(404).status_code(), Some(404));
        assert!(api_error(404).is_not_found());
        assert!(api_error(409).is_conflict());
        assert!(!api_error(409).is_not_found());
    }

    #[test]
    fn drain_errors_list_every_blocked_pod() {
        let error = Error::DrainTimedOut {
            node: "win-1".into(),
            timeout: Duration::from_secs(60),
            blocked: vec![
                BlockedPod { pod: "web/a".into(), reason: BlockReason::DisruptionBudget("budget".into()) },
                BlockedPod { pod: "web/b".into(), reason: BlockReason::StillTerminating },
            ],
        };
        assert_eq!(
            error.to_string(),
            "drain of Node win-1 did not finish within 60s; blocked by web/a (PodDisruptionBudget: budget), \
             web/b (evicted, still terminating)"
        );
    }

    #[test]
    fn object_names_include_the_namespace_when_there_is_one() {
        assert_eq!(object_name(Some("ns"), "x"), "ns/x");
        assert_eq!(object_name(None, "x"), "x");
    }
}
