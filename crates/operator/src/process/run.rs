//! [`run`]: the operator process after its flags are parsed and its payload verified. It serves `/healthz` and
//! `/readyz`, connects to the cluster, serves `/metrics` over HTTPS to authorized clients, learns what the cluster is (OpenShift or plain Kubernetes,
//! machine API or not) and its facts, decides the [`OperatorConfig`] and builds the [`Seams`] once, then runs the
//! controllers: as leader of a Lease, or at once when leader election is off.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use wmco_cluster_client::{
    ClusterFacts, ClusterFactsSource, OpenShiftFacts, PlainKubernetesConfig, PlainKubernetesFacts, ProxySettings,
    Seams, serves_machine_api, serves_openshift_config,
};
use wmco_payload_manifest::{Manifest, Payload};
use wmco_vocabulary::IpCidr;

use super::config::{CONTROLLER_NAME, ClusterShape, ConfigError, OperatorConfig, OperatorFlags};
use super::election::ElectionTimings;
use super::leader::{LeaseSettings, lead_then_run};
use super::metrics_endpoint::{self, MetricsEndpointOptions};
use super::supervisor::{Operator, start_controllers};
use crate::connection_limits::ConnectionLimits;
use crate::health::{self, HealthError, Readiness};
use crate::metrics::Metrics;
use crate::metrics_server::MetricsServerError;

/// The plain Kubernetes settings the admin passes as flags (on OpenShift they are read from config objects).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlainKubernetesFlags {
    /// The Service network (`--service-cidr`).
    pub service_cidr: Option<IpCidr>,
    /// The URL Windows nodes reach the API server at (`--api-server-url`).
    pub api_server_url: Option<String>,
    /// The egress proxy Windows nodes use (`--node-http-proxy`, `--node-https-proxy`, `--node-no-proxy`).
    pub proxy: ProxySettings,
}

impl PlainKubernetesFlags {
    /// The plain Kubernetes configuration; both flags are required when the cluster is not OpenShift.
    ///
    /// ```
    /// use wmco_operator::process::PlainKubernetesFlags;
    /// let flags = PlainKubernetesFlags {
    ///     service_cidr: Some("10.96.0.0/12".parse()?),
    ///     api_server_url: None,
    ///     proxy: Default::default(),
    /// };
    /// assert!(flags.config().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RunError::PlainKubernetesFlags`] when either is missing.
    pub fn config(&self) -> Result<PlainKubernetesConfig, RunError> {
        let (Some(service_cidr), Some(api_server_url)) = (&self.service_cidr, &self.api_server_url) else {
            return Err(RunError::PlainKubernetesFlags);
        };
        Ok(PlainKubernetesConfig {
            service_cidr: service_cidr.to_string(),
            api_server_internal_url: api_server_url.clone(),
            proxy: self.proxy.clone(),
            mirror_sets: Vec::new(),
        })
    }
}

/// What [`run`] is given: the admin's flags and the verified payload.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The operator's own settings.
    pub flags: OperatorFlags,
    /// The plain Kubernetes flags (ignored on OpenShift).
    pub plain_kubernetes: PlainKubernetesFlags,
    /// The address of the plain HTTP listener of the probes (`/healthz`, `/readyz`).
    pub listen: SocketAddr,
    /// The secure metrics endpoint.
    pub metrics_endpoint: MetricsEndpointOptions,
    /// This build's version and git revision (`wmco_build_info`).
    pub build: BuildInfo,
    /// The Lease to take part in leader election on; `None` runs the controllers at once (one process only).
    pub lease: Option<String>,
    /// How long a graceful stop lets the host reconciles in flight finish.
    pub shutdown_grace: Duration,
    /// The payload manifest built into the binary.
    pub manifest: Manifest,
    /// The verified payload.
    pub payload: Payload,
}

/// The running binary's version and git revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The version (`0.1.0`).
    pub version: String,
    /// The git commit it was built from.
    pub revision: String,
}

/// Why the operator stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The health listener cannot be bound.
    #[error("--listen")]
    Listen(#[source] HealthError),
    /// The metrics endpoint cannot start (its address, its certificate files).
    #[error("--metrics-listen, --metrics-tls-cert, --metrics-tls-key")]
    MetricsEndpoint(#[source] MetricsServerError),
    /// No Kubernetes configuration was found.
    #[error("cannot find a Kubernetes configuration (in-cluster or kubeconfig)")]
    KubeConfig(#[source] kube::config::InferConfigError),
    /// The Kubernetes client cannot be built.
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    /// The API groups the cluster serves cannot be read.
    #[error("cannot discover the API groups")]
    Discovery(#[source] wmco_cluster_client::Error),
    /// The cluster's facts cannot be read.
    #[error("cannot read the cluster facts")]
    Facts(#[source] wmco_cluster_client::Error),
    /// The cluster is not OpenShift and the plain Kubernetes flags are missing.
    #[error("the cluster does not serve config.openshift.io: pass --service-cidr and --api-server-url")]
    PlainKubernetesFlags,
    /// The configuration decided from the flags, facts and payload is not usable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The cluster seams cannot be built.
    #[error("cannot build the cluster clients")]
    Seams(#[source] wmco_cluster_client::Error),
    /// No renewal of the Lease succeeded for the renew deadline: the controllers were aborted before another
    /// replica may take the Lease over.
    #[error(
        "could not renew Lease {name} for {renew_deadline:?}: controllers stopped, exiting so a new leader takes over"
    )]
    RenewDeadlinePassed {
        /// The Lease's name.
        name: String,
        /// The renew deadline that passed.
        renew_deadline: Duration,
    },
    /// Another replica took the lease.
    #[error("lost Lease {name} to {holder}: exiting so the new leader runs alone")]
    LeaseLost {
        /// The Lease's name.
        name: String,
        /// The replica holding it now.
        holder: String,
    },
}

impl RunError {
    /// Whether the error is the admin's input (a flag, the cluster's facts): `wmco run` exits 2 on those.
    pub fn is_unusable_input(&self) -> bool {
        matches!(
            self,
            RunError::Listen(_) | RunError::MetricsEndpoint(_) | RunError::PlainKubernetesFlags | RunError::Config(_)
        )
    }
}

/// Runs the operator until `shutdown` completes (controllers stopped gracefully: `Ok`) or it fails; a lost lease
/// is an error (controllers aborted at once: another replica may already lead).
///
/// ```no_run
/// # async fn example(options: wmco_operator::process::RunOptions) -> Result<(), wmco_operator::process::RunError> {
/// wmco_operator::process::run(options, wmco_operator::shutdown::termination_requested()).await
/// # }
/// ```
///
/// # Errors
/// [`RunError`]: the listener, the cluster connection, the facts, the configuration or the Lease.
pub async fn run(options: RunOptions, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
    let readiness = Arc::new(Readiness::default());
    let metrics = Arc::new(Metrics::new());
    metrics.set_build_info(&options.build.version, &options.build.revision);
    let listener = health::bind(options.listen).await.map_err(RunError::Listen)?;
    let (stop_health, health_stopped) = tokio::sync::oneshot::channel::<()>();
    let limits = ConnectionLimits::default();
    let health_server = tokio::spawn(health::serve(listener, limits, Arc::clone(&readiness), async {
        let _ = health_stopped.await;
    }));
    let outcome = operate(options, metrics, Arc::clone(&readiness), shutdown).await;
    let _ = stop_health.send(());
    match health_server.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(error = %error, "health server"),
        Err(error) => tracing::warn!(error = %error, "health server task"),
    }
    outcome
}

async fn operate(
    options: RunOptions,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let drain_config = kube::Config::infer().await.map_err(RunError::KubeConfig)?;
    let client = Client::try_from(drain_config.clone()).map_err(RunError::Client)?;
    let (facts, shape) = discover(&client, &options.plain_kubernetes).await?;
    let endpoint = metrics_endpoint::start(
        &client,
        &options.metrics_endpoint,
        shape.openshift,
        &options.flags.namespace,
        Arc::clone(&metrics),
    )
    .await
    .map_err(RunError::MetricsEndpoint)?;
    let outcome = operate_with(options, client, drain_config, facts, shape, metrics, readiness, shutdown).await;
    endpoint.stop();
    outcome
}

/// The rest of [`operate`] once the client, the facts and the metrics endpoint are there.
#[expect(clippy::too_many_arguments, reason = "the process's pieces, assembled once in `operate`")]
async fn operate_with(
    options: RunOptions,
    client: Client,
    drain_config: kube::Config,
    facts: ClusterFacts,
    shape: ClusterShape,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let config = Arc::new(OperatorConfig::new(options.flags, &facts, shape, &options.manifest)?);
    let seams =
        Seams::for_client(&client, drain_config, CONTROLLER_NAME, shape.machine_api).map_err(RunError::Seams)?;
    let operator = Operator {
        client: client.clone(),
        seams,
        config,
        manifest: options.manifest,
        payload: options.payload,
        metrics,
        readiness: Arc::clone(&readiness),
    };
    match options.lease {
        Some(name) => {
            let lease = LeaseSettings { name, grace: options.shutdown_grace, timings: ElectionTimings::default() };
            lead_then_run(&client, &lease, &operator, &readiness, shutdown).await
        }
        None => {
            let controllers = start_controllers(&operator);
            operator.metrics.set_leader(true);
            readiness.set_ready(true);
            tracing::info!("leader election off: controllers started");
            shutdown.await;
            controllers.stop_gracefully(options.shutdown_grace, std::future::pending()).await;
            Ok(())
        }
    }
}

/// What the cluster is, and its facts: from OpenShift's config objects, or from the plain Kubernetes flags.
async fn discover(client: &Client, plain: &PlainKubernetesFlags) -> Result<(ClusterFacts, ClusterShape), RunError> {
    let openshift = serves_openshift_config(client).await.map_err(RunError::Discovery)?;
    let facts = if openshift {
        OpenShiftFacts::new(client.clone()).gather().await
    } else {
        PlainKubernetesFacts::new(client.clone(), plain.config()?).gather().await
    }
    .map_err(RunError::Facts)?;
    tracing::info!(
        openshift,
        service_cidr = %facts.service_cidr,
        api_server = %facts.api_server_internal_url,
        kubernetes_version = %facts.kubernetes_version,
        "cluster facts gathered"
    );
    let machine_api = serves_machine_api(client).await.map_err(RunError::Discovery)?;
    if !machine_api {
        tracing::info!(
            "the cluster does not serve machine.openshift.io: the Machine and user-data controllers are off"
        );
    }
    Ok((facts, ClusterShape { openshift, machine_api }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_kubernetes_needs_both_flags_and_says_which() {
        let only_cidr = PlainKubernetesFlags {
            service_cidr: Some("10.96.0.0/12".parse().expect("cidr")),
            api_server_url: None,
            proxy: ProxySettings::default(),
        };
        let error = only_cidr.config().expect_err("api server url missing");
        assert!(error.is_unusable_input());
        assert_eq!(
            error.to_string(),
            "the cluster does not serve config.openshift.io: pass --service-cidr and --api-server-url"
        );
        let both = PlainKubernetesFlags { api_server_url: Some("https://10.0.0.1:6443".into()), ..only_cidr };
        let config = both.config().expect("both flags given");
        assert_eq!(config.service_cidr, "10.96.0.0/12");
        assert_eq!(config.api_server_internal_url, "https://10.0.0.1:6443");
    }

    #[test]
    fn a_lost_lease_is_a_failure_not_unusable_input() {
        assert!(!RunError::LeaseLost { name: "wmco".into(), holder: "wmco-b".into() }.is_unusable_input());
    }
}
