//! `wmco machineset generate`: prints a Windows MachineSet for AWS, Azure, GCP, vSphere or Nutanix. Fields not given
//! as flags (the infrastructure ID, and per platform the region, project, resource groups or vCenter placement) are
//! read from the cluster's `Infrastructure cluster` (`--kubeconfig`, `--context`); a vSphere or Azure name longer
//! than 9 characters exits 1. It prints the MachineSet itself (YAML, or JSON with `-o json`), ready for
//! `oc apply -f`: a Kubernetes object with its own `apiVersion` and `kind`, never wrapped.

use std::error::Error;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use kube::{Api, Client};
use wmco_cluster_client::types::Infrastructure;
use wmco_machines::{
    ClusterDefaults, Field, MachineSetDocument, MachineSetError, MachineSetOptions, MachineSetPlatform, generate,
    machineset_name,
};
use wmco_vocabulary::Platform;

use crate::cli_support::{KubeArgs, Outcome, OutputArgs, OutputFormat, UnusableInput, print_stdout, to_machine_text};

/// How long reading the Infrastructure object may take before the cluster counts as unreachable.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(15);

/// Arguments of `wmco machineset`.
#[derive(Debug, clap::Args)]
pub struct MachineSetArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: MachineSetCommand,
}

/// The `wmco machineset` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum MachineSetCommand {
    /// Print a Windows MachineSet (YAML; JSON with -o json) labelled for the operator, using the
    /// `windows-user-data` Secret. Flags not given are read from the cluster's `Infrastructure cluster`
    /// (`--kubeconfig`, `--context`); exit 2 naming the flags to pass when the cluster cannot be read, exit 1 when a vSphere or
    /// Azure name is longer than 9 characters (Windows machine names are limited to 15).
    Generate(Box<GenerateArgs>),
}

/// The `--platform` values `wmco machineset generate` takes: the CLI names of [`MachineSetPlatform::ALL`], with
/// their descriptions.
fn machineset_platform_parser() -> impl TypedValueParser<Value = MachineSetPlatform> {
    let values =
        MachineSetPlatform::ALL.into_iter().filter_map(|platform| Platform::from(platform).to_possible_value());
    PossibleValuesParser::new(values).try_map(|name| -> Result<MachineSetPlatform, Box<dyn Error + Send + Sync>> {
        Ok(MachineSetPlatform::try_from(name.parse::<Platform>()?)?)
    })
}

/// Arguments of `wmco machineset generate`.
#[derive(Debug, Default, clap::Args)]
pub struct GenerateArgs {
    /// The cloud or virtualization platform.
    #[arg(long, required = true, value_parser = machineset_platform_parser())]
    pub platform: Option<MachineSetPlatform>,
    /// The MachineSet name; AWS, GCP and Nutanix prefix it with the infrastructure ID, vSphere and Azure use it as
    /// is (at most 9 characters).
    #[arg(long)]
    pub name: String,
    /// How many Machines the set keeps.
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// The cluster's infrastructure ID (`oc get infrastructure cluster -o jsonpath='{.status.infrastructureName}'`).
    #[arg(long)]
    pub infrastructure_id: Option<String>,
    /// AWS or GCP region (read from the cluster when absent).
    #[arg(long)]
    pub region: Option<String>,
    /// AWS availability zone, GCP zone, or Azure availability zone (optional on Azure).
    #[arg(long)]
    pub zone: Option<String>,
    /// AWS: the AMI ID of a Windows Server image.
    #[arg(long)]
    pub ami: Option<String>,
    /// AWS instance type (default m5a.large).
    #[arg(long)]
    pub instance_type: Option<String>,
    /// Azure location, e.g. centralus.
    #[arg(long)]
    pub location: Option<String>,
    /// Azure VM size (default Standard_D2s_v3).
    #[arg(long)]
    pub vm_size: Option<String>,
    /// Azure resource group (read from the cluster, else `<infrastructure ID>-rg`).
    #[arg(long)]
    pub resource_group: Option<String>,
    /// Azure network resource group (read from the cluster, else the resource group).
    #[arg(long)]
    pub network_resource_group: Option<String>,
    /// GCP project ID (read from the cluster when absent).
    #[arg(long)]
    pub project_id: Option<String>,
    /// GCP machine type (default n1-standard-4).
    #[arg(long)]
    pub machine_type: Option<String>,
    /// GCP image path, Nutanix image name, or Azure image URN publisher:offer:sku:version.
    #[arg(long)]
    pub image: Option<String>,
    /// vSphere: the Windows template (VM) to clone.
    #[arg(long)]
    pub template: Option<String>,
    /// vSphere network (read from the cluster's first failure domain when absent).
    #[arg(long)]
    pub network: Option<String>,
    /// vSphere datacenter (read from the cluster when absent).
    #[arg(long)]
    pub datacenter: Option<String>,
    /// vSphere datastore (read from the cluster when absent).
    #[arg(long)]
    pub datastore: Option<String>,
    /// vSphere resource pool (read from the cluster when absent).
    #[arg(long)]
    pub resource_pool: Option<String>,
    /// vSphere VM folder (read from the cluster, else `/<datacenter>/vm/<infrastructure ID>`).
    #[arg(long)]
    pub folder: Option<String>,
    /// vCenter server (read from the cluster when absent).
    #[arg(long)]
    pub server: Option<String>,
    /// Nutanix Prism Element cluster UUID (read from the cluster's first failure domain when absent).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Nutanix subnet name.
    #[arg(long)]
    pub subnet: Option<String>,
    /// The cluster to read `Infrastructure cluster` from, for the fields not given as flags.
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl GenerateArgs {
    /// The options the flags give.
    fn options(&self) -> MachineSetOptions {
        let flags = [
            (Field::InfrastructureId, &self.infrastructure_id),
            (Field::Region, &self.region),
            (Field::Zone, &self.zone),
            (Field::Ami, &self.ami),
            (Field::InstanceType, &self.instance_type),
            (Field::Location, &self.location),
            (Field::VmSize, &self.vm_size),
            (Field::ResourceGroup, &self.resource_group),
            (Field::NetworkResourceGroup, &self.network_resource_group),
            (Field::ProjectId, &self.project_id),
            (Field::MachineType, &self.machine_type),
            (Field::Image, &self.image),
            (Field::Template, &self.template),
            (Field::Network, &self.network),
            (Field::Datacenter, &self.datacenter),
            (Field::Datastore, &self.datastore),
            (Field::ResourcePool, &self.resource_pool),
            (Field::Folder, &self.folder),
            (Field::Server, &self.server),
            (Field::Cluster, &self.cluster),
            (Field::Subnet, &self.subnet),
        ];
        flags.into_iter().fold(MachineSetOptions::new(&self.name, self.replicas), |options, (field, value)| match value
        {
            Some(value) => options.with(field, value),
            None => options,
        })
    }
}

/// Runs the subcommand.
pub fn run(args: &MachineSetArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        MachineSetCommand::Generate(generate_args) => {
            let document = generate_document(generate_args, |platform| read_cluster_defaults(generate_args, platform))?;
            let text = match generate_args.output.format {
                OutputFormat::Human | OutputFormat::Yaml => document.to_yaml()?,
                OutputFormat::Json => to_machine_text(OutputFormat::Json, document.as_json())?,
            };
            print_stdout(&text)?;
            Ok(Outcome::Clean)
        }
    }
}

/// The MachineSet the flags ask for. `cluster_defaults` is asked only when a required field has no flag.
fn generate_document(
    args: &GenerateArgs,
    cluster_defaults: impl FnOnce(MachineSetPlatform) -> anyhow::Result<ClusterDefaults>,
) -> anyhow::Result<MachineSetDocument> {
    let platform =
        args.platform.ok_or_else(|| UnusableInput("pass --platform aws|azure|gcp|vsphere|nutanix".to_owned()))?;
    let mut options = args.options();
    if platform.names_windows_computers() {
        machineset_name(platform, &options).map_err(classify)?;
    }
    let missing = options.missing(platform);
    if !missing.is_empty() {
        let defaults = cluster_defaults(platform).map_err(|error| {
            UnusableInput(format!(
                "the cluster's Infrastructure could not be read ({}); pass {}",
                first_and_root_cause(&error),
                missing.iter().map(|field| format!("{field} VALUE")).collect::<Vec<_>>().join(" ")
            ))
        })?;
        if let Some(cluster_platform) = defaults.platform_type.as_deref()
            && cluster_platform != platform.openshift_name()
        {
            return Err(UnusableInput(format!(
                "the cluster runs on {cluster_platform}, not {platform}: pass the platform it runs on, or every field \
                 as a flag"
            ))
            .into());
        }
        defaults.fill(&mut options);
    }
    generate(platform, &options).map_err(classify)
}

/// `error` and, when it has causes, its root cause (the middle of a kube error chain repeats both).
fn first_and_root_cause(error: &anyhow::Error) -> String {
    if error.chain().count() > 1 { format!("{error}: {}", error.root_cause()) } else { error.to_string() }
}

/// A name too long for Windows is a finding (exit 1); every other refusal is unusable input (exit 2).
fn classify(error: MachineSetError) -> anyhow::Error {
    match error {
        MachineSetError::NameTooLong { .. } => anyhow::Error::new(error),
        other => anyhow::Error::new(UnusableInput(other.to_string())),
    }
}

/// Reads `Infrastructure cluster` with the kubeconfig and keeps what `platform` can use.
fn read_cluster_defaults(args: &GenerateArgs, platform: MachineSetPlatform) -> anyhow::Result<ClusterDefaults> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let infrastructure = runtime.block_on(async {
        tokio::time::timeout(CLUSTER_TIMEOUT, read_infrastructure(&args.kube))
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {} s", CLUSTER_TIMEOUT.as_secs()))?
    })?;
    Ok(ClusterDefaults::from_infrastructure(&infrastructure, platform))
}

async fn read_infrastructure(kube: &KubeArgs) -> anyhow::Result<Infrastructure> {
    let mut config = kube.config().await?;
    config.connect_timeout = Some(CLUSTER_TIMEOUT);
    let client = Client::try_from(config)?;
    let infrastructures: Api<Infrastructure> = Api::all(client);
    infrastructures.get("cluster").await.context("GET infrastructures.config.openshift.io/cluster")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct GenerateCli {
        #[command(flatten)]
        generate: GenerateArgs,
    }

    #[test]
    fn platform_flag_takes_the_five_machineset_platforms_by_cli_name() {
        let platform = |name: &str| {
            GenerateCli::try_parse_from(["generate", "--platform", name, "--name", "win"])
                .map(|cli| cli.generate.platform)
        };
        assert_eq!(platform("aws").unwrap(), Some(MachineSetPlatform::Aws));
        assert_eq!(platform("vsphere").unwrap(), Some(MachineSetPlatform::VSphere));
        assert_eq!(platform("nutanix").unwrap(), Some(MachineSetPlatform::Nutanix));
        let refused = platform("none").unwrap_err().to_string();
        assert!(refused.contains("[possible values: aws, azure, gcp, vsphere, nutanix]"), "{refused}");
    }

    fn unreachable(_: MachineSetPlatform) -> anyhow::Result<ClusterDefaults> {
        Err(anyhow::anyhow!("connection refused"))
    }

    fn aws_args() -> GenerateArgs {
        GenerateArgs {
            platform: Some(MachineSetPlatform::Aws),
            name: "windows-worker-us-east-1a".into(),
            replicas: 1,
            infrastructure_id: Some("ci-4xk2p".into()),
            region: Some("us-east-1".into()),
            zone: Some("us-east-1a".into()),
            ami: Some("ami-0a1b2c3d4e5f67890".into()),
            ..GenerateArgs::default()
        }
    }

    #[test]
    fn all_flags_given_prints_the_golden_machineset_without_asking_the_cluster() {
        let yaml =
            generate_document(&aws_args(), |_| panic!("the cluster must not be asked")).unwrap().to_yaml().unwrap();
        assert_eq!(yaml, include_str!("../../../../crates/machines/tests/golden/aws.yaml"));
    }

    #[test]
    fn missing_fields_are_read_from_the_cluster() {
        let args = GenerateArgs { infrastructure_id: None, region: None, ..aws_args() };
        let yaml = generate_document(&args, |platform| {
            assert_eq!(platform, MachineSetPlatform::Aws);
            Ok(ClusterDefaults {
                platform_type: Some("AWS".into()),
                fields: [(Field::InfrastructureId, "ci-4xk2p".to_owned()), (Field::Region, "us-east-1".to_owned())]
                    .into(),
            })
        })
        .unwrap()
        .to_yaml()
        .unwrap();
        assert_eq!(yaml, include_str!("../../../../crates/machines/tests/golden/aws.yaml"));
    }

    #[test]
    fn an_unreachable_cluster_exits_2_naming_the_flags_to_pass() {
        let args = GenerateArgs { infrastructure_id: None, region: None, ..aws_args() };
        let error = generate_document(&args, unreachable).unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
        assert_eq!(
            error.to_string(),
            "the cluster's Infrastructure could not be read (connection refused); pass --infrastructure-id VALUE \
             --region VALUE"
        );
    }

    #[test]
    fn a_cluster_on_another_platform_exits_2() {
        let args = GenerateArgs { infrastructure_id: None, ..aws_args() };
        let error = generate_document(&args, |_| {
            Ok(ClusterDefaults { platform_type: Some("GCP".into()), fields: Default::default() })
        })
        .unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
        assert!(error.to_string().starts_with("the cluster runs on GCP, not AWS"), "{error}");
    }

    #[test]
    fn a_ten_character_vsphere_name_exits_1_before_asking_the_cluster() {
        let args = GenerateArgs {
            platform: Some(MachineSetPlatform::VSphere),
            name: "winworker1".into(),
            ..Default::default()
        };
        let error = generate_document(&args, |_| panic!("the cluster must not be asked")).unwrap_err();
        assert!(!error.is::<UnusableInput>(), "{error:#}");
        assert!(error.to_string().contains("Windows machine names are limited to 15 characters"), "{error}");
    }

    #[test]
    fn bad_names_missing_platform_and_fields_still_missing_exit_2() {
        let bad_name = GenerateArgs { name: "Win_1".into(), ..aws_args() };
        let error = generate_document(&bad_name, unreachable).unwrap_err();
        assert!(error.is::<UnusableInput>() && error.to_string().contains("\"ci-4xk2p-Win_1\""), "{error:#}");

        let no_platform = GenerateArgs { platform: None, ..aws_args() };
        assert!(generate_document(&no_platform, unreachable).unwrap_err().is::<UnusableInput>());

        let gcp = GenerateArgs { platform: Some(MachineSetPlatform::Gcp), name: "win".into(), ..Default::default() };
        let error = generate_document(&gcp, |_| {
            Ok(ClusterDefaults {
                platform_type: Some("GCP".into()),
                fields: [(Field::InfrastructureId, "c".to_owned()), (Field::ProjectId, "p".to_owned())].into(),
            })
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "GCP MachineSets need region, zone, image: pass --region VALUE --zone VALUE --image VALUE"
        );
    }

    #[test]
    fn a_kubeconfig_that_does_not_exist_is_an_unreachable_cluster() {
        let args = GenerateArgs {
            infrastructure_id: None,
            kube: KubeArgs { kubeconfig: Some(PathBuf::from("/nonexistent/kubeconfig")), context: None },
            ..aws_args()
        };
        let error = read_cluster_defaults(&args, MachineSetPlatform::Aws).unwrap_err();
        assert!(format!("{error:#}").starts_with("cannot read --kubeconfig /nonexistent/kubeconfig"), "{error:#}");
    }
}
