//! Why a Windows MachineSet cannot be generated; each error names the input and what to pass instead.

use super::options::{Field, MachineSetPlatform};

/// Why [`generate`](crate::generate) refused.
#[derive(Debug, thiserror::Error)]
pub enum MachineSetError {
    /// The name would make Machine names longer than Windows computer names may be.
    #[error(
        "MachineSet name {name:?} is {length} characters long: on {platform} Windows machine names are limited to 15 \
         characters and the machine API appends 6 to the MachineSet name, so use a name of at most 9 characters"
    )]
    NameTooLong {
        /// The platform.
        platform: MachineSetPlatform,
        /// The name given.
        name: String,
        /// Its length in characters.
        length: usize,
    },
    /// The name (or, with the infrastructure ID, the full MachineSet name) is not a valid label value.
    #[error(
        "MachineSet name {full_name:?} is not valid: it must be 1-63 lower-case letters, digits and '-', starting and \
         ending with a letter or digit; pass another --name"
    )]
    InvalidName {
        /// The full MachineSet name.
        full_name: String,
    },
    /// Required fields were given neither as flags nor by the cluster.
    #[error("{platform} MachineSets need {}: pass {}", list(.fields, false), list(.fields, true))]
    MissingFields {
        /// The platform.
        platform: MachineSetPlatform,
        /// The fields missing, in flag order.
        fields: Vec<Field>,
    },
    /// A field's value cannot be used.
    #[error("{field} {value:?}: {reason}")]
    InvalidField {
        /// The field.
        field: Field,
        /// The value given.
        value: String,
        /// What is wrong and what is expected.
        reason: &'static str,
    },
    /// The generated document could not be rendered as YAML.
    #[error("rendering the MachineSet as YAML failed")]
    Render(#[source] serde_saphyr::SerializeError),
}

fn list(fields: &[Field], as_flags: bool) -> String {
    let names: Vec<String> = fields
        .iter()
        .map(|field| if as_flags { format!("{field} VALUE") } else { field.flag().trim_start_matches('-').to_owned() })
        .collect();
    names.join(if as_flags { " " } else { ", " })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_input_and_what_to_pass() {
        let too_long = MachineSetError::NameTooLong {
            platform: MachineSetPlatform::VSphere,
            name: "windows-ws".into(),
            length: 10,
        };
        assert_eq!(
            too_long.to_string(),
            "MachineSet name \"windows-ws\" is 10 characters long: on VSphere Windows machine names are limited to 15 \
             characters and the machine API appends 6 to the MachineSet name, so use a name of at most 9 characters"
        );
        let missing = MachineSetError::MissingFields {
            platform: MachineSetPlatform::Aws,
            fields: vec![Field::InfrastructureId, Field::Ami],
        };
        assert_eq!(
            missing.to_string(),
            "AWS MachineSets need infrastructure-id, ami: pass --infrastructure-id VALUE --ami VALUE"
        );
    }
}
