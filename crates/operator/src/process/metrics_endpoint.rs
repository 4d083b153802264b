//! Starting the secure metrics endpoint ([`crate::metrics_server`]) once the process has a client: the serving
//! certificate from the mounted Secret's files or self-signed, the TLS profile of `APIServer cluster` on OpenShift
//! (watched, so a change applies without a restart), TokenReview and SubjectAccessReview through the operator's
//! own client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt as _;
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use wmco_cluster_client::KubeAccessReviews;
use wmco_cluster_client::types::ApiServer;

use crate::connection_limits::ConnectionLimits;
use crate::metrics::Metrics;
use crate::metrics_server::{
    CertificateSource, MetricsGate, MetricsServerError, TlsProfile, TlsState, bind, keep_fresh, serve,
};

/// The metrics Service's name: the self-signed certificate is made for its DNS names.
pub const METRICS_SERVICE: &str = "windows-machine-config-operator-metrics";

/// Where and how the metrics endpoint listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsEndpointOptions {
    /// The HTTPS listen address.
    pub listen: SocketAddr,
    /// The serving certificate chain (PEM), e.g. `tls.crt` of the mounted Secret.
    pub certificate: Option<PathBuf>,
    /// Its private key (PEM).
    pub key: Option<PathBuf>,
}

/// The endpoint's tasks; dropping the handle does not stop them, [`MetricsEndpoint::stop`] does.
pub(crate) struct MetricsEndpoint {
    tasks: Vec<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Stops serving.
    pub(crate) fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
    }
}

/// Binds the listener and starts serving; on OpenShift also the watch of `APIServer cluster`'s TLS profile.
pub(crate) async fn start(
    client: &Client,
    options: &MetricsEndpointOptions,
    openshift: bool,
    namespace: &str,
    metrics: Arc<Metrics>,
) -> Result<MetricsEndpoint, MetricsServerError> {
    let names = vec![
        format!("{METRICS_SERVICE}.{namespace}.svc"),
        format!("{METRICS_SERVICE}.{namespace}.svc.cluster.local"),
        "localhost".to_owned(),
    ];
    let source = CertificateSource::files_or_self_signed(options.certificate.clone(), options.key.clone(), names);
    match &source {
        CertificateSource::Files { certificate, .. } => {
            tracing::info!(certificate = %certificate.display(), "metrics endpoint: serving certificate from files");
        }
        CertificateSource::SelfSigned { names } => {
            tracing::warn!(names = ?names, "metrics endpoint: no certificate files, serving a self-signed certificate");
        }
    }
    let (profiles, profile_updates) = watch::channel(None);
    let mut tasks = Vec::new();
    if openshift {
        tasks.push(tokio::spawn(follow_tls_profile(client.clone(), profiles)));
    }
    let tls = Arc::new(TlsState::new(source, TlsProfile::intermediate())?);
    let listener = bind(options.listen).await?;
    tracing::info!(listen = %options.listen, "metrics endpoint: /metrics over HTTPS, TokenReview and SubjectAccessReview");
    let gate = Arc::new(MetricsGate::new(Arc::new(KubeAccessReviews::new(client.clone()))));
    tasks.push(tokio::spawn(keep_fresh(Arc::clone(&tls), profile_updates)));
    tasks.push(tokio::spawn(serve(listener, ConnectionLimits::default(), tls, gate, metrics, std::future::pending())));
    Ok(MetricsEndpoint { tasks })
}

/// Publishes the TLS profile of `APIServer cluster` whenever it changes (logging what the endpoint cannot honour).
async fn follow_tls_profile(client: Client, profiles: watch::Sender<Option<TlsProfile>>) {
    let api_servers: Api<ApiServer> = Api::all(client);
    let config = watcher::Config::default().fields("metadata.name=cluster");
    let mut objects = watcher(api_servers, config).default_backoff().applied_objects().boxed();
    while let Some(event) = objects.next().await {
        match event {
            Ok(api_server) => {
                let (profile, notes) = TlsProfile::from_openshift(api_server.spec.tls_security_profile.as_ref());
                for note in &notes {
                    tracing::warn!(profile = %profile.name, "{note}");
                }
                profiles.send_if_modified(|current| {
                    let changed = current.as_ref() != Some(&profile);
                    if changed {
                        tracing::info!(profile = %profile.name, tls12 = profile.tls12, "metrics endpoint: cluster TLS profile");
                        *current = Some(profile);
                    }
                    changed
                });
            }
            Err(error) => tracing::warn!(error = %error, "watching APIServer cluster for its TLS profile"),
        }
    }
}
