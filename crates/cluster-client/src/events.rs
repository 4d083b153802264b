//! Events: kube-runtime `Recorder`s per controller, behind the [`EventPublisher`] seam.
//!
//! The `Recorder` folds every Event with the same object, type, reason and action into one series and keeps the
//! first note, so two different problems (two bad ConfigMap entries, a client and a serving CSR) would show as one
//! Event naming only the first. [`KubeEvents`] therefore starts a new Event whenever the note differs from the last
//! one published for that object, reason and action; only exact repeats become a series. Every note is published
//! redacted ([`wmco_redact::redact`]): an error that quotes a proxy URL or a host's output never puts a credential in
//! an Event.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::error::{Error, Result, Verb};

/// How serious an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Something happened as expected.
    Normal,
    /// Something needs attention.
    Warning,
}

/// An event about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// Normal or Warning.
    pub severity: Severity,
    /// Short `PascalCase` reason, e.g. `InstanceSetup`.
    pub reason: String,
    /// Short `PascalCase` action taken, e.g. `Configure`.
    pub action: String,
    /// A sentence for people.
    pub note: Option<String>,
}

/// Publishes Events about objects.
#[async_trait]
pub trait EventPublisher: Send + Sync {
    /// Publishes `event` about the object `regarding`; repeats of one event become a series.
    async fn publish(&self, regarding: &ObjectReference, event: &NewEvent) -> Result<()>;
}

/// [`EventPublisher`] over kube-runtime [`Recorder`]s (events.k8s.io/v1): exact repeats of an Event become a
/// series, a different note starts a new Event.
pub struct KubeEvents {
    client: Client,
    reporter: Reporter,
    series: Mutex<HashMap<SeriesKey, (Option<String>, Recorder)>>,
}

/// What the `Recorder` folds into one series: the object, the type, the reason and the action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    /// `apiVersion kind namespace/name uid` of the object.
    regarding: String,
    warning: bool,
    reason: String,
    action: String,
}

/// How many series [`KubeEvents`] remembers before it forgets them all (a forgotten series just starts anew).
const MAX_REMEMBERED_SERIES: usize = 4096;

impl KubeEvents {
    /// A recorder reporting as `controller` (and `instance`, e.g. the pod name, when several replicas run).
    pub fn new(client: Client, controller: impl Into<String>, instance: Option<String>) -> Self {
        KubeEvents {
            client,
            reporter: Reporter { controller: controller.into(), instance },
            series: Mutex::new(HashMap::new()),
        }
    }

    /// The recorder for `event` about `regarding`: the one that published the same note last time (so the repeat
    /// joins its series), or a fresh one when the note changed or nothing was published yet.
    fn recorder_for(&self, regarding: &ObjectReference, event: &NewEvent) -> Recorder {
        let key = SeriesKey {
            regarding: format!(
                "{} {} {}/{} {}",
                regarding.api_version.as_deref().unwrap_or_default(),
                regarding.kind.as_deref().unwrap_or_default(),
                regarding.namespace.as_deref().unwrap_or_default(),
                regarding.name.as_deref().unwrap_or_default(),
                regarding.uid.as_deref().unwrap_or_default(),
            ),
            warning: event.severity == Severity::Warning,
            reason: event.reason.clone(),
            action: event.action.clone(),
        };
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((note, recorder)) = series.get(&key)
            && *note == event.note
        {
            return recorder.clone();
        }
        if series.len() >= MAX_REMEMBERED_SERIES {
            series.clear();
        }
        let recorder = Recorder::new(self.client.clone(), self.reporter.clone());
        series.insert(key, (event.note.clone(), recorder.clone()));
        recorder
    }
}

/// The API server refuses an Event whose note is longer than this many bytes.
const NOTE_LIMIT_BYTES: usize = 1024;

/// `note` cut on a character boundary to fit [`NOTE_LIMIT_BYTES`], ending in `…` when cut: a long error (a host
/// that printed a long line) still makes an Event rather than a refused one.
fn fit_note(note: &str) -> String {
    if note.len() <= NOTE_LIMIT_BYTES {
        return note.to_owned();
    }
    let marker = "…";
    let mut cut = NOTE_LIMIT_BYTES - marker.len();
    while !note.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{marker}", &note[..cut])
}

#[async_trait]
impl EventPublisher for KubeEvents {
    async fn publish(&self, regarding: &ObjectReference, event: &NewEvent) -> Result<()> {
        let runtime_event = Event {
            type_: match event.severity {
                Severity::Normal => EventType::Normal,
                Severity::Warning => EventType::Warning,
            },
            reason: event.reason.clone(),
            note: event.note.as_deref().map(|note| fit_note(&wmco_redact::redact(note))),
            action: event.action.clone(),
            secondary: None,
        };
        let kind = regarding.kind.clone().unwrap_or_default();
        let name =
            crate::error::object_name(regarding.namespace.as_deref(), regarding.name.as_deref().unwrap_or_default());
        self.recorder_for(regarding, event)
            .publish(&runtime_event, regarding)
            .await
            .map_err(|source| Error::api(Verb::Publish, "Event", format!("{kind} {name}"), source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_longer_than_the_api_allows_is_cut_on_a_character_boundary() {
        assert_eq!(fit_note("host 10.0.0.5: unreachable"), "host 10.0.0.5: unreachable");
        let long = format!("a{}", "é".repeat(2000));
        let fitted = fit_note(&long);
        assert!(fitted.len() <= NOTE_LIMIT_BYTES && fitted.ends_with('…'), "{} bytes", fitted.len());
        assert!(long.starts_with(fitted.trim_end_matches('…')));
    }
    use crate::test_support::{Exchange, scenario};
    use serde_json::json;

    #[tokio::test]
    async fn publish_creates_an_events_k8s_io_event_regarding_the_object() {
        let regarding = ObjectReference {
            api_version: Some("windowsmachineconfig.openshift.io/v1alpha1".into()),
            kind: Some("WindowsInstance".into()),
            name: Some("win-a".into()),
            namespace: Some("wmco".into()),
            uid: Some("uid-1".into()),
            ..ObjectReference::default()
        };
        let event = NewEvent {
            severity: Severity::Warning,
            reason: "InstanceSetupFailure".into(),
            action: "Configure".into(),
            note: Some("host 10.0.0.5 unreachable".into()),
        };
        // The event's name and time come from the clock; every other field is checked.
        let expected = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"namespace": "wmco"},
            "type": "Warning", "reason": "InstanceSetupFailure", "action": "Configure",
            "note": "host 10.0.0.5 unreachable",
            "reportingController": "wmco-instances", "reportingInstance": "wmco-instances",
            "regarding": {"apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
                          "name": "win-a", "namespace": "wmco", "uid": "uid-1"}
        });
        let created = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "win-a.1", "namespace": "wmco"},
            "eventTime": "2026-01-01T00:00:00.000000Z"
        });
        let exchanges = vec![
            Exchange::post_containing("/apis/events.k8s.io/v1/namespaces/wmco/events?", expected).reply(201, created),
        ];
        scenario(exchanges, |client| async move {
            KubeEvents::new(client, "wmco-instances", None).publish(&regarding, &event).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn a_note_is_published_without_the_credentials_it_quotes() {
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some("win-a".into()),
            uid: Some("uid-3".into()),
            ..ObjectReference::default()
        };
        let event = NewEvent {
            severity: Severity::Warning,
            reason: "InstanceSetupFailure".into(),
            action: "Configure".into(),
            note: Some("setting HTTPS_PROXY to http://wmco:pr0xy-s3cret@proxy.example:3129 failed".into()),
        };
        let expected = json!({"note": "setting HTTPS_PROXY to http://[REDACTED]@proxy.example:3129 failed"});
        let created = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "win-a.1", "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z"
        });
        let exchanges = vec![
            Exchange::post_containing("/apis/events.k8s.io/v1/namespaces/default/events?", expected)
                .reply(201, created),
        ];
        scenario(exchanges, |client| async move {
            KubeEvents::new(client, "wmco-instances", None).publish(&regarding, &event).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn a_different_note_about_the_same_object_is_a_new_event_not_a_series() {
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            name: Some("windows-instances".into()),
            namespace: Some("wmco".into()),
            uid: Some("uid-2".into()),
            ..ObjectReference::default()
        };
        let problem = |key: &str| NewEvent {
            severity: Severity::Warning,
            reason: "InvalidInstanceEntry".into(),
            action: "Validate".into(),
            note: Some(format!("entry {key:?}: not an IPv4 address")),
        };
        let created = |name: &str| {
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": "wmco"},
                   "eventTime": "2026-01-01T00:00:00.000000Z"})
        };
        let exchanges = vec![
            Exchange::post_containing(
                "/apis/events.k8s.io/v1/namespaces/wmco/events?",
                json!({"reason": "InvalidInstanceEntry", "note": "entry \"::1\": not an IPv4 address"}),
            )
            .reply(201, created("windows-instances.1")),
            Exchange::post_containing(
                "/apis/events.k8s.io/v1/namespaces/wmco/events?",
                json!({"reason": "InvalidInstanceEntry", "note": "entry \"10.0.0.300\": not an IPv4 address"}),
            )
            .reply(201, created("windows-instances.2")),
        ];
        scenario(exchanges, |client| async move {
            let events = KubeEvents::new(client, "wmco-instances", None);
            events.publish(&regarding, &problem("::1")).await.unwrap();
            events.publish(&regarding, &problem("10.0.0.300")).await.unwrap();
        })
        .await;
    }
}
