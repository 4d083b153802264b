//! Events: one kube-runtime `Recorder` per controller, behind the [`EventPublisher`] seam.

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

/// [`EventPublisher`] over a kube-runtime [`Recorder`] (events.k8s.io/v1).
#[derive(Clone)]
pub struct KubeEvents {
    recorder: Recorder,
}

impl KubeEvents {
    /// A recorder reporting as `controller` (and `instance`, e.g. the pod name, when several replicas run).
    pub fn new(client: Client, controller: impl Into<String>, instance: Option<String>) -> Self {
        KubeEvents { recorder: Recorder::new(client, Reporter { controller: controller.into(), instance }) }
    }
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
            note: event.note.clone(),
            action: event.action.clone(),
            secondary: None,
        };
        let kind = regarding.kind.clone().unwrap_or_default();
        let name =
            crate::error::object_name(regarding.namespace.as_deref(), regarding.name.as_deref().unwrap_or_default());
        self.recorder
            .publish(&runtime_event, regarding)
            .await
            .map_err(|source| Error::api(Verb::Publish, "Event", format!("{kind} {name}"), source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
