//! Events read back: the core/v1 Events about one object or one kind of object (what `kubectl describe` lists),
//! for the `wmco status` and `wmco diagnose` answers. Read-only; [`last_seen`] orders them.

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::error::{Error, Result, Verb};

/// When an Event was last seen: the last occurrence of its series, else its last timestamp, event time, first
/// timestamp or creation time, whichever is set first in that order.
///
/// ```
/// use k8s_openapi::api::core::v1::Event;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
/// let mut event = Event { event_time: Some(MicroTime("2026-11-26T10:00:00Z".parse()?)), ..Event::default() };
/// assert_eq!(wmco_cluster_client::last_seen(&event), Some("2026-11-26T10:00:00Z".parse()?));
/// event.last_timestamp = Some(Time("2026-11-26T10:05:00Z".parse()?));
/// assert_eq!(wmco_cluster_client::last_seen(&event), Some("2026-11-26T10:05:00Z".parse()?));
/// assert_eq!(wmco_cluster_client::last_seen(&Event::default()), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn last_seen(event: &Event) -> Option<Timestamp> {
    event
        .series
        .as_ref()
        .and_then(|series| series.last_observed_time.as_ref())
        .map(|time| time.0)
        .or_else(|| event.last_timestamp.as_ref().map(|time| time.0))
        .or_else(|| event.event_time.as_ref().map(|time| time.0))
        .or_else(|| event.first_timestamp.as_ref().map(|time| time.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|time| time.0))
}

/// Reads the Events about objects.
#[async_trait]
pub trait EventHistory: Send + Sync {
    /// The Events whose involved object is of `kind` — only the one named `name`, when given — in `namespace`, or in
    /// every namespace when `None` (Events about cluster-scoped objects such as Nodes live in `default`); oldest
    /// first by [`last_seen`], then by name.
    async fn list_about(&self, namespace: Option<&str>, kind: &str, name: Option<&str>) -> Result<Vec<Event>>;
}

/// [`EventHistory`] over the API server: one LIST with a field selector on the involved object.
#[derive(Clone)]
pub struct KubeEventHistory {
    client: Client,
}

impl KubeEventHistory {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeEventHistory { client }
    }
}

/// Orders Events oldest first by [`last_seen`] (unknown times first), then by name.
pub(crate) fn sort_events(events: &mut [Event]) {
    events.sort_by(|a, b| (last_seen(a), &a.metadata.name).cmp(&(last_seen(b), &b.metadata.name)));
}

#[async_trait]
impl EventHistory for KubeEventHistory {
    async fn list_about(&self, namespace: Option<&str>, kind: &str, name: Option<&str>) -> Result<Vec<Event>> {
        let api: Api<Event> = match namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        };
        let mut selector = format!("involvedObject.kind={kind}");
        if let Some(name) = name {
            selector.push_str(&format!(",involvedObject.name={name}"));
        }
        let about = match name {
            Some(name) => format!("about {kind} {name}"),
            None => format!("about {kind}s"),
        };
        let scope = namespace.map_or_else(|| "in every namespace".to_owned(), |namespace| format!("in {namespace}"));
        let mut events = api
            .list(&ListParams::default().fields(&selector))
            .await
            .map_err(|source| Error::api(Verb::List, "Event", format!("{about} {scope}"), source))?
            .items;
        sort_events(&mut events);
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario, status_reply};
    use serde_json::json;

    fn event(name: &str, reason: &str, last: &str) -> serde_json::Value {
        json!({"metadata": {"name": name, "namespace": "wmco"}, "reason": reason, "lastTimestamp": last,
               "involvedObject": {"kind": "WindowsInstance", "name": "byoh-10-0-0-5"}})
    }

    #[tokio::test]
    async fn list_about_one_object_selects_it_by_kind_and_name_and_sorts_oldest_first() {
        let list = json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [
            event("b", "InstanceSetup", "2026-11-26T10:05:00Z"),
            event("a", "InstanceSetupFailure", "2026-11-26T10:00:00Z"),
        ]});
        let exchanges = vec![
            Exchange::get(
                "/api/v1/namespaces/wmco/events?&fieldSelector=involvedObject.kind%3DWindowsInstance%2CinvolvedObject.name%3Dbyoh-10-0-0-5",
            )
            .reply(200, list),
        ];
        let events = scenario(exchanges, |client| async move {
            KubeEventHistory::new(client).list_about(Some("wmco"), "WindowsInstance", Some("byoh-10-0-0-5")).await
        })
        .await
        .unwrap();
        let reasons: Vec<_> = events.iter().map(|event| event.reason.clone().unwrap_or_default()).collect();
        assert_eq!(reasons, ["InstanceSetupFailure", "InstanceSetup"]);
    }

    #[tokio::test]
    async fn list_about_a_kind_in_every_namespace_names_the_scope_when_refused() {
        let exchanges = vec![
            Exchange::get("/api/v1/events?&fieldSelector=involvedObject.kind%3DNode")
                .reply(403, status_reply(403, "Forbidden", "events is forbidden")),
        ];
        let error =
            scenario(
                exchanges,
                |client| async move { KubeEventHistory::new(client).list_about(None, "Node", None).await },
            )
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), "list Event about Nodes in every namespace failed");
        assert_eq!(error.status_code(), Some(403));
    }
}
