//! What a Windows MachineSet is generated from: the platform, the name, and the platform fields, each of which the
//! admin passes as a flag or the cluster's `Infrastructure cluster` supplies.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use wmco_vocabulary::Platform;

/// A platform the product generates Windows MachineSets for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MachineSetPlatform {
    /// Amazon Web Services.
    #[serde(rename = "AWS")]
    Aws,
    /// Microsoft Azure.
    Azure,
    /// Google Cloud.
    #[serde(rename = "GCP")]
    Gcp,
    /// VMware vSphere.
    VSphere,
    /// Nutanix.
    Nutanix,
}

impl MachineSetPlatform {
    /// Every platform Windows MachineSets are generated for, in the order the CLI lists them.
    pub const ALL: [MachineSetPlatform; 5] = [
        MachineSetPlatform::Aws,
        MachineSetPlatform::Azure,
        MachineSetPlatform::Gcp,
        MachineSetPlatform::VSphere,
        MachineSetPlatform::Nutanix,
    ];

    /// The platform's name in `Infrastructure.status.platformStatus.type`.
    ///
    /// ```
    /// assert_eq!(wmco_machines::MachineSetPlatform::VSphere.openshift_name(), "VSphere");
    /// ```
    pub fn openshift_name(self) -> &'static str {
        Platform::from(self).as_str()
    }

    /// Whether Machine names on this platform become Windows computer names as they are, so the MachineSet name
    /// is used without the infrastructure ID and limited to 9 characters (Windows allows 15; the machine API adds
    /// `-` and 5 characters). vSphere clones name the guest after the VM; Azure refuses longer Windows computer
    /// names.
    pub fn names_windows_computers(self) -> bool {
        matches!(self, MachineSetPlatform::VSphere | MachineSetPlatform::Azure)
    }

    /// The fields a MachineSet of this platform cannot do without (the others have defaults).
    pub fn required_fields(self) -> &'static [Field] {
        match self {
            MachineSetPlatform::Aws => &[Field::InfrastructureId, Field::Region, Field::Zone, Field::Ami],
            MachineSetPlatform::Azure => &[Field::InfrastructureId, Field::Location],
            MachineSetPlatform::Gcp => {
                &[Field::InfrastructureId, Field::ProjectId, Field::Region, Field::Zone, Field::Image]
            }
            MachineSetPlatform::VSphere => &[
                Field::InfrastructureId,
                Field::Server,
                Field::Datacenter,
                Field::Datastore,
                Field::ResourcePool,
                Field::Network,
                Field::Template,
            ],
            MachineSetPlatform::Nutanix => &[Field::InfrastructureId, Field::Cluster, Field::Image, Field::Subnet],
        }
    }
}

impl fmt::Display for MachineSetPlatform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.openshift_name())
    }
}

impl From<MachineSetPlatform> for Platform {
    fn from(platform: MachineSetPlatform) -> Self {
        match platform {
            MachineSetPlatform::Aws => Platform::Aws,
            MachineSetPlatform::Azure => Platform::Azure,
            MachineSetPlatform::Gcp => Platform::Gcp,
            MachineSetPlatform::VSphere => Platform::VSphere,
            MachineSetPlatform::Nutanix => Platform::Nutanix,
        }
    }
}

/// A platform Windows MachineSets are not generated for (platform `None`: bring your own hosts).
///
/// ```
/// use wmco_machines::{MachineSetPlatform, NoMachineSets};
/// use wmco_vocabulary::Platform;
///
/// assert_eq!(MachineSetPlatform::try_from(Platform::Gcp), Ok(MachineSetPlatform::Gcp));
/// assert_eq!(MachineSetPlatform::try_from(Platform::None), Err(NoMachineSets(Platform::None)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no Windows MachineSets are generated for platform {0} (expected AWS, Azure, GCP, VSphere or Nutanix)")]
pub struct NoMachineSets(pub Platform);

impl TryFrom<Platform> for MachineSetPlatform {
    type Error = NoMachineSets;

    fn try_from(platform: Platform) -> Result<Self, NoMachineSets> {
        MachineSetPlatform::ALL
            .into_iter()
            .find(|candidate| Platform::from(*candidate) == platform)
            .ok_or(NoMachineSets(platform))
    }
}

/// One input of a MachineSet, named after its command-line flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    /// The cluster's infrastructure ID (`status.infrastructureName`).
    InfrastructureId,
    /// AWS or GCP region.
    Region,
    /// AWS availability zone, GCP zone or Azure zone.
    Zone,
    /// AWS AMI ID of a Windows Server image.
    Ami,
    /// AWS instance type.
    InstanceType,
    /// Azure location.
    Location,
    /// Azure VM size.
    VmSize,
    /// Azure resource group.
    ResourceGroup,
    /// Azure network resource group.
    NetworkResourceGroup,
    /// GCP project ID.
    ProjectId,
    /// GCP machine type.
    MachineType,
    /// GCP image path, Nutanix image name, or Azure image URN `publisher:offer:sku:version`.
    Image,
    /// vSphere template (VM) to clone.
    Template,
    /// vSphere network (port group).
    Network,
    /// vSphere datacenter.
    Datacenter,
    /// vSphere datastore.
    Datastore,
    /// vSphere resource pool path.
    ResourcePool,
    /// vSphere VM folder path.
    Folder,
    /// vCenter server.
    Server,
    /// Nutanix Prism Element cluster UUID.
    Cluster,
    /// Nutanix subnet name.
    Subnet,
}

impl Field {
    /// The command-line flag that sets the field.
    ///
    /// ```
    /// assert_eq!(wmco_machines::Field::InfrastructureId.flag(), "--infrastructure-id");
    /// ```
    pub fn flag(self) -> &'static str {
        match self {
            Field::InfrastructureId => "--infrastructure-id",
            Field::Region => "--region",
            Field::Zone => "--zone",
            Field::Ami => "--ami",
            Field::InstanceType => "--instance-type",
            Field::Location => "--location",
            Field::VmSize => "--vm-size",
            Field::ResourceGroup => "--resource-group",
            Field::NetworkResourceGroup => "--network-resource-group",
            Field::ProjectId => "--project-id",
            Field::MachineType => "--machine-type",
            Field::Image => "--image",
            Field::Template => "--template",
            Field::Network => "--network",
            Field::Datacenter => "--datacenter",
            Field::Datastore => "--datastore",
            Field::ResourcePool => "--resource-pool",
            Field::Folder => "--folder",
            Field::Server => "--server",
            Field::Cluster => "--cluster",
            Field::Subnet => "--subnet",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.flag())
    }
}

/// The inputs of one Windows MachineSet: the name, the replica count and the platform fields given so far (by
/// flags, then by the cluster).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineSetOptions {
    /// The MachineSet's own name part (`--name`); AWS, GCP and Nutanix prefix it with the infrastructure ID.
    pub name: String,
    /// How many Machines the set keeps.
    pub replicas: u32,
    /// The platform fields given; blank values count as not given.
    pub fields: BTreeMap<Field, String>,
}

impl MachineSetOptions {
    /// Options named `name` with `replicas` Machines and no field given yet.
    pub fn new(name: &str, replicas: u32) -> MachineSetOptions {
        MachineSetOptions { name: name.to_owned(), replicas, fields: BTreeMap::new() }
    }

    /// The options with `field` set to `value` (replacing any earlier value).
    #[must_use]
    pub fn with(mut self, field: Field, value: &str) -> MachineSetOptions {
        self.fields.insert(field, value.to_owned());
        self
    }

    /// The value of `field`, if given.
    pub fn get(&self, field: Field) -> Option<&str> {
        self.fields.get(&field).map(String::as_str).filter(|value| !value.trim().is_empty())
    }

    /// Sets `field` to `value` unless it already holds one.
    pub fn set_if_missing(&mut self, field: Field, value: &str) {
        if self.get(field).is_none() {
            self.fields.insert(field, value.to_owned());
        }
    }

    /// The fields `platform` requires that are not given, in flag order.
    ///
    /// ```
    /// use wmco_machines::{Field, MachineSetOptions, MachineSetPlatform};
    /// let options = MachineSetOptions::new("windows", 1).with(Field::Ami, "ami-0abc");
    /// assert_eq!(options.missing(MachineSetPlatform::Aws), [Field::InfrastructureId, Field::Region, Field::Zone]);
    /// ```
    pub fn missing(&self, platform: MachineSetPlatform) -> Vec<Field> {
        platform.required_fields().iter().copied().filter(|field| self.get(*field).is_none()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_values_count_as_missing_and_set_if_missing_keeps_given_values() {
        let mut options = MachineSetOptions::new("w", 1).with(Field::Region, " ").with(Field::Zone, "z1");
        assert_eq!(options.get(Field::Region), None);
        options.set_if_missing(Field::Region, "us-east-1");
        options.set_if_missing(Field::Zone, "other");
        assert_eq!((options.get(Field::Region), options.get(Field::Zone)), (Some("us-east-1"), Some("z1")));
    }

    #[test]
    fn every_platform_lists_what_it_cannot_default() {
        let empty = MachineSetOptions::default();
        assert_eq!(empty.missing(MachineSetPlatform::Azure), [Field::InfrastructureId, Field::Location]);
        assert_eq!(
            empty.missing(MachineSetPlatform::Nutanix),
            [Field::InfrastructureId, Field::Cluster, Field::Image, Field::Subnet]
        );
        assert_eq!(
            empty.missing(MachineSetPlatform::VSphere).iter().map(|field| field.flag()).collect::<Vec<_>>(),
            [
                "--infrastructure-id",
                "--server",
                "--datacenter",
                "--datastore",
                "--resource-pool",
                "--network",
                "--template"
            ]
        );
    }
}
