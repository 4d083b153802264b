//! The cmdlets, static members and native-program calls of the subset (windows-commands.md §4, §8), each over the
//! host's simulated state. Errors carry 5.1's messages, categories and FullyQualifiedErrorIds.

use std::time::Instant;

use sha2::Digest;

use super::eval::{Arguments, ErrorAction, Flow, PsError, Session, collect, wildcard};
use super::value::{Object, ObjectKind, Value, to_json};
use crate::disk::{Entry, WinPath};
use crate::host::{DEFENDER_IMAGE, FirewallRule, Host, RegValue, SERVICES_KEY, normalize_key};
use crate::process::{ProcessEvent, executables, stem};
use crate::scm::{StartType, State};

/// Runs one command of a pipeline.
///
/// # Errors
/// Terminating errors and `exit`.
pub fn invoke(
    session: &mut Session<'_>,
    name: &str,
    arguments: Arguments,
    input: Vec<Value>,
    action: Option<ErrorAction>,
) -> Result<Vec<Value>, Flow> {
    let lowered = name.to_ascii_lowercase();
    let call = Call { name: canonical_name(&lowered).unwrap_or(name).to_owned(), arguments, action };
    match lowered.as_str() {
        "where-object" | "where" | "?" => where_object(session, &call, input),
        "foreach-object" | "foreach" | "%" => foreach_object(session, &call, input),
        "select-object" | "select" => Ok(select_object(&call, input)),
        "convertto-json" => Ok(convert_to_json(&call, input)),
        "out-null" => Ok(Vec::new()),
        "write-output" | "echo" => Ok(call.arguments.positional.into_iter().flat_map(Value::enumerate).collect()),
        "get-filehash" => get_file_hash(session, &call),
        "test-path" => test_path(session, &call),
        "new-item" => new_item(session, &call),
        "remove-item" => remove_item(session, &call),
        "get-childitem" | "dir" | "ls" | "gci" => get_child_item(session, &call),
        "import-certificate" => import_certificate(session, &call),
        "move-item" => move_item(session, &call),
        "get-content" => get_content(session, &call),
        "set-content" | "sc" => set_content(session, &call),
        "get-ciminstance" => get_cim_instance(session, &call),
        "get-service" => get_service(session, &call),
        "set-service" => set_service(session, &call),
        "start-service" | "restart-service" | "stop-service" => control_service(session, &call, &lowered),
        "get-process" => get_process(session, &call),
        "stop-process" => stop_process(session, &call),
        "get-netroute" => Ok(vec![route(session.host)]),
        "get-netipaddress" => get_net_ip_address(session, &call),
        "get-netfirewallrule" => get_firewall_rule(session, &call),
        "new-netfirewallrule" => new_firewall_rule(session, &call),
        "remove-netfirewallrule" => remove_firewall_rule(session, &call),
        "get-hnsnetwork" => Ok(session.host.hns_networks.iter().map(hns_object).collect()),
        "remove-hnsnetwork" => remove_hns_network(session, &call, input),
        "get-itemproperty" => get_item_property(session, &call),
        "new-itemproperty" | "set-itemproperty" => set_item_property(session, &call, lowered == "new-itemproperty"),
        "remove-itemproperty" => remove_item_property(session, &call),
        "get-windowsoptionalfeature" => get_optional_feature(session, &call),
        "install-windowsfeature" => install_windows_feature(session, &call),
        "get-mppreference" => get_mp_preference(session, &call),
        "add-mppreference" | "remove-mppreference" => {
            change_mp_preference(session, &call, lowered == "add-mppreference")
        }
        "add-windowscapability" => add_capability(session, &call),
        "get-acl" => get_acl(session, &call),
        "set-acl" => set_acl(session, &call),
        "invoke-restmethod" | "irm" => super::rest::invoke_rest_method(session, &call.arguments),
        "restart-computer" => {
            session.host.reboot_requested = true;
            Ok(Vec::new())
        }
        other => match super::provisioning::cmdlet_name(other) {
            Some(cmdlet) => super::provisioning::invoke(session, cmdlet, call.arguments, input, call.action),
            None => native(session, name, &call.arguments),
        },
    }
}

/// Cmdlet names as PowerShell spells them in error records.
fn canonical_name(lowered: &str) -> Option<&'static str> {
    const NAMES: [&str; 37] = [
        "Get-FileHash",
        "Get-ChildItem",
        "Import-Certificate",
        "Test-Path",
        "New-Item",
        "Remove-Item",
        "Move-Item",
        "Get-Content",
        "Set-Content",
        "Get-CimInstance",
        "Get-Service",
        "Set-Service",
        "Start-Service",
        "Restart-Service",
        "Stop-Service",
        "Get-Process",
        "Stop-Process",
        "Get-NetRoute",
        "Get-NetIPAddress",
        "Get-NetFirewallRule",
        "New-NetFirewallRule",
        "Remove-NetFirewallRule",
        "Get-HnsNetwork",
        "Remove-HnsNetwork",
        "Get-ItemProperty",
        "New-ItemProperty",
        "Set-ItemProperty",
        "Get-WindowsOptionalFeature",
        "Install-WindowsFeature",
        "Get-MpPreference",
        "Add-MpPreference",
        "Remove-MpPreference",
        "Add-WindowsCapability",
        "Get-Acl",
        "Set-Acl",
        "Restart-Computer",
        "ConvertTo-Json",
    ];
    NAMES.iter().find(|name| name.eq_ignore_ascii_case(lowered)).copied()
}

/// A bound call.
struct Call {
    name: String,
    arguments: Arguments,
    action: Option<ErrorAction>,
}

impl Call {
    fn error(&self, message: impl Into<String>, category: &str, exception: &str, id: &str, target: &str) -> PsError {
        PsError::new(&self.name, message, category, exception, &format!("{id},{}", self.command_type()), target)
    }

    fn command_type(&self) -> String {
        if self.name == "Install-WindowsFeature" {
            // ServerManager implements Install-WindowsFeature with the class behind its older name.
            return "Microsoft.Windows.ServerManager.Commands.AddWindowsFeatureCommand".to_owned();
        }
        let module = match self.name.as_str() {
            "Get-CimInstance" => "Microsoft.Management.Infrastructure.CimCmdlets",
            "Get-FileHash" => "Microsoft.PowerShell.Commands",
            _ => "Microsoft.PowerShell.Commands",
        };
        format!("{module}.{}Command", self.name.replace('-', ""))
    }

    fn path(&self) -> Option<String> {
        self.arguments.text("literalpath", None).or_else(|| self.arguments.text("path", Some(0)))
    }

    fn missing_path(&self, path: &str) -> PsError {
        self.error(
            format!("Cannot find path '{path}' because it does not exist."),
            "ObjectNotFound",
            "ItemNotFoundException",
            "PathNotFound",
            path,
        )
    }

    fn missing_argument(&self, parameter: &str) -> Flow {
        Flow::Error {
            error: Box::new(self.error(
                format!("Cannot bind argument to parameter '{parameter}' because it is null."),
                "InvalidData",
                "ParameterBindingValidationException",
                "ParameterArgumentValidationErrorNullNotAllowed",
                "",
            )),
            script: false,
        }
    }
}

fn where_object(session: &mut Session<'_>, call: &Call, input: Vec<Value>) -> Result<Vec<Value>, Flow> {
    match call.arguments.positional.first().cloned() {
        Some(Value::Block(block)) => {
            let mut kept = Vec::new();
            for item in input {
                if collect(session.run_block_with(&block, item.clone())?).truthy() {
                    kept.push(item);
                }
            }
            Ok(kept)
        }
        Some(Value::Str(property)) => where_property(call, &property, input),
        _ => Err(call.missing_argument("FilterScript")),
    }
}

/// The simplified syntax `Where-Object Name -eq 'x'` (also `-ne`, `-like`).
fn where_property(call: &Call, property: &str, input: Vec<Value>) -> Result<Vec<Value>, Flow> {
    let (operator, expected) = ["eq", "ne", "like"]
        .iter()
        .find_map(|operator| call.arguments.get(operator).map(|value| (*operator, value.clone())))
        .ok_or_else(|| call.missing_argument("Value"))?;
    Ok(input
        .into_iter()
        .filter(|item| {
            let actual = item.member(property);
            match operator {
                "eq" => actual.equals(&expected),
                "ne" => !actual.equals(&expected),
                _ => wildcard(&expected.to_text(), &actual.to_text()),
            }
        })
        .collect())
}

fn foreach_object(session: &mut Session<'_>, call: &Call, input: Vec<Value>) -> Result<Vec<Value>, Flow> {
    let Some(Value::Block(block)) = call.arguments.positional.first().cloned() else {
        return Err(call.missing_argument("Process"));
    };
    let mut output = Vec::new();
    for item in input {
        output.extend(session.run_block_with(&block, item)?.into_iter().flat_map(Value::enumerate));
    }
    Ok(output)
}

fn select_object(call: &Call, input: Vec<Value>) -> Vec<Value> {
    let mut items = input;
    if let Some(first) = call.arguments.get("first").and_then(Value::as_int) {
        items.truncate(usize::try_from(first).unwrap_or(0));
    }
    match call.arguments.text("expandproperty", None) {
        Some(property) => {
            items.iter().flat_map(|item| item.member(&property).enumerate()).filter(|v| *v != Value::Null).collect()
        }
        None => items,
    }
}

fn convert_to_json(call: &Call, input: Vec<Value>) -> Vec<Value> {
    let depth = call.arguments.get("depth").and_then(Value::as_int).unwrap_or(2);
    let compress = call.arguments.switch("compress");
    let value = match input.len() {
        0 => return Vec::new(),
        1 => input.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(input),
    };
    vec![Value::Str(to_json(&value, usize::try_from(depth).unwrap_or(0), compress))]
}

fn parse_path(call: &Call, path: &str) -> Result<WinPath, Box<PsError>> {
    WinPath::parse(path).map_err(|_| {
        Box::new(call.error(
            format!(
                "Cannot find drive. A drive with the name '{}' does not exist.",
                path.split(':').next().unwrap_or(path)
            ),
            "ObjectNotFound",
            "DriveNotFoundException",
            "DriveNotFound",
            path,
        ))
    })
}

fn fail(session: &mut Session<'_>, call: &Call, error: PsError) -> Result<Vec<Value>, Flow> {
    session.report(error, call.action)?;
    Ok(Vec::new())
}

fn get_file_hash(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("LiteralPath")) };
    let algorithm = call.arguments.text("algorithm", None).unwrap_or_else(|| "SHA256".to_owned()).to_uppercase();
    let path = match parse_path(call, &path_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    if algorithm != "SHA256" {
        let error = call.error(
            format!("Cannot validate argument on parameter 'Algorithm'. The argument \"{algorithm}\" is not supported by this host."),
            "InvalidData",
            "ParameterBindingValidationException",
            "ParameterArgumentValidationError",
            &algorithm,
        );
        return Err(Flow::Error { error: Box::new(error), script: false });
    }
    match session.host.disk.read(&path) {
        Ok(bytes) => {
            let hash = hex::encode_upper(sha2::Sha256::digest(bytes));
            Ok(vec![Value::Object(Box::new(Object::typed(
                "Microsoft.PowerShell.Commands.FileHashInfo",
                vec![
                    ("Algorithm", Value::str("SHA256")),
                    ("Hash", Value::Str(hash)),
                    ("Path", Value::Str(path.to_string())),
                ],
            )))])
        }
        Err(_) => fail(session, call, call.missing_path(&path_text)),
    }
}

/// Whether a registry key exists (services keys come from the SCM; prefixes of stored keys exist).
fn registry_key_exists(host: &Host, key: &str) -> bool {
    let lowered = key.to_lowercase();
    if matches!(lowered.as_str(), "hklm" | "hkcu")
        || service_key_name(key).is_some_and(|name| host.scm.get(&name).is_some())
    {
        return true;
    }
    lowered == SERVICES_KEY.to_lowercase()
        || host.registry.keys().any(|stored| *stored == lowered || stored.starts_with(&format!("{lowered}\\")))
}

/// `HKLM\SYSTEM\CurrentControlSet\Services\<name>` → `name`.
fn service_key_name(key: &str) -> Option<String> {
    let lowered = key.to_lowercase();
    let prefix = format!("{}\\", SERVICES_KEY.to_lowercase());
    let rest = lowered.strip_prefix(&prefix)?;
    (!rest.contains('\\')).then(|| key[prefix.len()..].to_owned())
}

fn is_registry_path(path: &str) -> bool {
    let upper = path.to_ascii_uppercase();
    upper.starts_with("HKLM:") || upper.starts_with("HKCU:") || upper.starts_with("REGISTRY::")
}

fn test_path(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let kind = call.arguments.text("pathtype", None).map(|kind| kind.to_ascii_lowercase());
    let exists = if is_registry_path(&path_text) {
        registry_key_exists(session.host, &normalize_key(&path_text)) && kind.as_deref() != Some("leaf")
    } else {
        match WinPath::parse(&path_text).ok().and_then(|path| session.host.disk.entry(&path)) {
            None => false,
            Some(entry) => match kind.as_deref() {
                Some("leaf") => entry == Entry::File,
                Some("container") => entry == Entry::Directory,
                _ => true,
            },
        }
    };
    Ok(vec![Value::Bool(exists)])
}

fn directory_object(path: &WinPath) -> Value {
    Value::Object(Box::new(Object::typed(
        "System.IO.DirectoryInfo",
        vec![
            ("Name", Value::str(path.file_name().unwrap_or("C:\\"))),
            ("FullName", Value::Str(path.to_string())),
            ("Mode", Value::str("d-----")),
        ],
    )))
}

fn new_item(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let item_type = call.arguments.text("itemtype", None).unwrap_or_else(|| "File".to_owned()).to_ascii_lowercase();
    let path = match parse_path(call, &path_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    if item_type != "directory" {
        let error = call.error(
            "Only -ItemType Directory is available on this host.",
            "InvalidArgument",
            "ArgumentException",
            "NewItemTypeNotSupported",
            &path_text,
        );
        return fail(session, call, error);
    }
    match session.host.disk.entry(&path) {
        Some(Entry::Directory) if call.arguments.switch("force") => Ok(vec![directory_object(&path)]),
        Some(_) => {
            let error = call.error(
                format!("An item with the specified name {path} already exists."),
                "ResourceExists",
                "IOException",
                "DirectoryExist",
                &path.to_string(),
            );
            fail(session, call, error)
        }
        None => match session.host.disk.create_dir_all(&path) {
            Ok(()) => Ok(vec![directory_object(&path)]),
            Err(_) => {
                let error = call.error(
                    format!("Could not find a part of the path '{path}'."),
                    "WriteError",
                    "IOException",
                    "CreateDirectoryIOError",
                    &path.to_string(),
                );
                fail(session, call, error)
            }
        },
    }
}

fn in_use(call: &Call, verb: &str, path: &WinPath) -> PsError {
    call.error(
        format!("Cannot {verb} item {path}: The process cannot access the file '{path}' because it is being used by another process."),
        "WriteError",
        "IOException",
        &format!("{}FileSystemItemIOError", if verb == "remove" { "Remove" } else { "Move" }),
        &path.to_string(),
    )
}

fn remove_item(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    if let Some(thumbprint) = root_store_item(&path_text) {
        return match session.host.root_certificates.remove(&thumbprint) {
            Some(_) => Ok(Vec::new()),
            None => fail(session, call, call.missing_path(&path_text)),
        };
    }
    let path = match parse_path(call, &path_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    session.host.refresh();
    if session.host.disk.entry(&path).is_none() {
        return fail(session, call, call.missing_path(&path_text));
    }
    if session.host.is_locked(&path) {
        return fail(session, call, in_use(call, "remove", &path));
    }
    let is_nonempty_directory = session.host.disk.list(&path).is_ok_and(|entries| !entries.is_empty());
    if is_nonempty_directory && !call.arguments.switch("recurse") {
        let error = call.error(
            format!("The item at {path} has children and the Recurse parameter was not specified."),
            "WriteError",
            "IOException",
            "RemoveItemIOError",
            &path.to_string(),
        );
        return fail(session, call, error);
    }
    match session.host.disk.remove(&path) {
        Ok(()) => Ok(Vec::new()),
        Err(_) => fail(session, call, in_use(call, "remove", &path)),
    }
}

/// The store path `Cert:\LocalMachine\Root` (any case, an optional trailing backslash).
fn is_root_store(path: &str) -> bool {
    path.trim_end_matches('\\').eq_ignore_ascii_case(r"Cert:\LocalMachine\Root")
}

/// The thumbprint named by `Cert:\LocalMachine\Root\<thumbprint>`, upper-cased.
fn root_store_item(path: &str) -> Option<String> {
    let (store, item) = path.rsplit_once('\\')?;
    (is_root_store(store) && !item.is_empty()).then(|| item.to_ascii_uppercase())
}

fn root_certificate_object(thumbprint: &str, certificate: &crate::host::RootCertificate) -> Value {
    Value::Object(Box::new(Object {
        kind: ObjectKind::Custom,
        properties: vec![
            ("Thumbprint".to_owned(), Value::str(thumbprint.to_owned())),
            ("Subject".to_owned(), Value::str(certificate.subject.clone())),
        ],
    }))
}

/// `Get-ChildItem` of the machine's root store, or of a directory (`-LiteralPath D [-Filter W]`: its entries, in
/// name order, as FileInfo / DirectoryInfo objects with `Name`, `FullName`, `Length` (files) and `PSIsContainer`;
/// `-Filter` takes the file system's wildcards `*` and `?`, case-insensitively; a missing directory is the
/// non-terminating `Cannot find path` error).
fn get_child_item(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    if !is_root_store(&path_text) {
        return list_directory(session, call, &path_text);
    }
    Ok(session
        .host
        .root_certificates
        .iter()
        .map(|(thumbprint, certificate)| root_certificate_object(thumbprint, certificate))
        .collect())
}

/// The entries of the directory `path_text` matching `-Filter` (see [`get_child_item`]).
fn list_directory(session: &mut Session<'_>, call: &Call, path_text: &str) -> Result<Vec<Value>, Flow> {
    let path = match parse_path(call, path_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    let Ok(entries) = session.host.disk.list(&path) else {
        return fail(session, call, call.missing_path(path_text));
    };
    let filter = call.arguments.text("filter", None);
    Ok(entries
        .into_iter()
        .filter(|(name, _, _)| filter.as_deref().is_none_or(|filter| wildcard(filter, name)))
        .map(|(name, entry, size)| {
            let full_name = path.join(&name).to_string();
            let directory = entry == Entry::Directory;
            let mut properties = vec![
                ("Name", Value::str(name)),
                ("FullName", Value::str(full_name)),
                ("PSIsContainer", Value::Bool(directory)),
            ];
            if !directory {
                properties.push(("Length", Value::Int(i64::try_from(size).unwrap_or(i64::MAX))));
            }
            let type_name = if directory { "System.IO.DirectoryInfo" } else { "System.IO.FileInfo" };
            Value::Object(Box::new(Object::typed(type_name, properties)))
        })
        .collect())
}

/// `Import-Certificate -FilePath F -CertStoreLocation Cert:\LocalMachine\Root`: the file's first certificate (PEM or
/// DER; a bundle is not split, windows-commands.md §4.1) joins the store, once; prints the imported certificate.
fn import_certificate(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(file_text) = call.arguments.text("filepath", Some(0)) else {
        return Err(call.missing_argument("FilePath"));
    };
    let store = call.arguments.text("certstorelocation", None).unwrap_or_default();
    if !is_root_store(&store) {
        let error = call.error(
            format!("the simulator imports only into Cert:\\LocalMachine\\Root, not '{store}'"),
            "NotImplemented",
            "NotSupportedException",
            "ImportCertificateNotSupported",
            &store,
        );
        return fail(session, call, error);
    }
    let path = match parse_path(call, &file_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    let Ok(bytes) = session.host.disk.read(&path) else {
        return fail(session, call, call.missing_path(&file_text));
    };
    let der = match pem::parse(&bytes) {
        Ok(block) if block.tag() == "CERTIFICATE" => block.into_contents(),
        Ok(_) => Vec::new(),
        Err(_) => bytes,
    };
    let Ok((_, certificate)) = x509_parser::parse_x509_certificate(&der) else {
        let error = call.error(
            "Cannot find the requested object. 0x80092004 (-2146885628 CRYPT_E_NOT_FOUND)".to_owned(),
            "NotSpecified",
            "Exception",
            "System.Runtime.InteropServices.COMException,Microsoft.CertificateServices.Commands.ImportCertificateCommand",
            &file_text,
        );
        return fail(session, call, error);
    };
    let thumbprint = hex::encode_upper(<sha1::Sha1 as sha1::Digest>::digest(&der));
    let entry = crate::host::RootCertificate { subject: certificate.subject().to_string() };
    let printed = root_certificate_object(&thumbprint, &entry);
    session.host.root_certificates.entry(thumbprint).or_insert(entry);
    Ok(vec![printed])
}

fn move_item(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let (Some(from_text), Some(to_text)) = (call.path(), call.arguments.text("destination", Some(1))) else {
        return Err(call.missing_argument("Destination"));
    };
    let (from, to) = match (parse_path(call, &from_text), parse_path(call, &to_text)) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(error), _) | (_, Err(error)) => return fail(session, call, *error),
    };
    session.host.refresh();
    if session.host.disk.entry(&from).is_none() {
        return fail(session, call, call.missing_path(&from_text));
    }
    if session.host.is_locked(&from) || session.host.is_locked(&to) {
        return fail(session, call, in_use(call, "move", &from));
    }
    let to = if session.host.disk.entry(&to) == Some(Entry::Directory) {
        to.join(from.file_name().unwrap_or_default())
    } else {
        to
    };
    if session.host.disk.entry(&to) == Some(Entry::File) {
        if !call.arguments.switch("force") {
            let error = call.error(
                "Cannot create a file when that file already exists.",
                "WriteError",
                "IOException",
                "MoveFileInfoItemIOError",
                &from.to_string(),
            );
            return fail(session, call, error);
        }
        let _ = session.host.disk.remove(&to);
    }
    match session.host.disk.rename(&from, &to) {
        Ok(()) => Ok(Vec::new()),
        Err(_) => {
            let error = call.error(
                format!("Could not find a part of the path '{to}'."),
                "WriteError",
                "IOException",
                "MoveFileInfoItemIOError",
                &from.to_string(),
            );
            fail(session, call, error)
        }
    }
}

/// Decodes file bytes as PowerShell 5.1 reads them (BOM-detected UTF-8/UTF-16LE, else ANSI ≈ Latin-1).
fn decode_text(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        let units: Vec<u16> = rest.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
        return String::from_utf16_lossy(&units);
    }
    bytes.iter().map(|byte| char::from(*byte)).collect()
}

fn get_content(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let path = match parse_path(call, &path_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    match session.host.disk.read(&path) {
        Ok(bytes) => {
            let text = decode_text(&bytes);
            if call.arguments.switch("raw") {
                Ok(vec![Value::Str(text)])
            } else {
                Ok(text.lines().map(|line| Value::str(line.trim_end_matches('\r'))).collect())
            }
        }
        Err(_) => fail(session, call, call.missing_path(&path_text)),
    }
}

fn set_content(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let value = call.arguments.get_or_position("value", 1).cloned().unwrap_or(Value::Null);
    let path = match parse_path(call, &path_text) {
        Ok(path) => path,
        Err(error) => return fail(session, call, *error),
    };
    session.host.refresh();
    if session.host.is_locked(&path) {
        let error = call.error(
            format!("The process cannot access the file '{path}' because it is being used by another process."),
            "WriteError",
            "IOException",
            "GetContentWriterIOError",
            &path.to_string(),
        );
        return fail(session, call, error);
    }
    let mut text = String::new();
    for line in value.enumerate() {
        text.push_str(&line.to_text());
        if !call.arguments.switch("nonewline") {
            text.push_str("\r\n");
        }
    }
    let encoding = call.arguments.text("encoding", None).unwrap_or_else(|| "default".to_owned()).to_ascii_lowercase();
    let bytes: Vec<u8> = match encoding.as_str() {
        "ascii" => text.chars().map(|c| if c.is_ascii() { c as u8 } else { b'?' }).collect(),
        "utf8" => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
        "unicode" => [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect(),
        _ => text.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')).collect(),
    };
    match session.host.disk.write(&path, &bytes) {
        Ok(()) => Ok(Vec::new()),
        Err(_) => {
            let error = call.error(
                format!("Could not find a part of the path '{path}'."),
                "ObjectNotFound",
                "DirectoryNotFoundException",
                "GetContentWriterDirectoryNotFoundError",
                &path.to_string(),
            );
            fail(session, call, error)
        }
    }
}

fn start_mode(start_type: StartType) -> &'static str {
    match start_type {
        StartType::Boot => "Boot",
        StartType::System => "System",
        StartType::Auto => "Auto",
        StartType::Demand => "Manual",
        StartType::Disabled => "Disabled",
    }
}

fn cim_service(service: &crate::scm::Service) -> Value {
    Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#root/cimv2/Win32_Service",
        vec![
            ("Name", Value::str(service.name.clone())),
            ("DisplayName", Value::str(service.display_name.clone())),
            ("Description", service.description.clone().map_or(Value::Null, Value::Str)),
            ("State", Value::str(service.state.cim_name())),
            ("Status", Value::str("OK")),
            ("Started", Value::Bool(service.state != State::Stopped)),
            ("StartMode", Value::str(start_mode(service.start_type))),
            ("DelayedAutoStart", Value::Bool(service.delayed)),
            ("PathName", Value::str(service.image_path.clone())),
            ("ProcessId", Value::Int(i64::from(service.pid))),
            ("StartName", Value::str(service.account.clone())),
            ("ExitCode", Value::Int(i64::from(service.exit_code))),
        ],
    )))
}

fn get_cim_instance(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let class = call.arguments.text("classname", Some(0)).unwrap_or_default();
    let items = if class.eq_ignore_ascii_case("Win32_LogicalDisk") {
        vec![system_volume(session)]
    } else if class.eq_ignore_ascii_case("Win32_OperatingSystem") {
        vec![operating_system(session.host)]
    } else if class.eq_ignore_ascii_case("Win32_Service") {
        session.host.refresh();
        session.host.scm.services().map(cim_service).collect()
    } else {
        let error = call.error("Invalid class ", "MetadataError", "CimException", "HRESULT 0x80041010", &class);
        return fail(session, call, error);
    };
    let filter = match call.arguments.text("filter", None) {
        None => None,
        Some(text) => match parse_wql_equality(&text) {
            Some(filter) => Some(filter),
            None => {
                let error =
                    call.error("Invalid query ", "InvalidArgument", "CimException", "HRESULT 0x80041017", &text);
                return fail(session, call, error);
            }
        },
    };
    Ok(items
        .into_iter()
        .filter(|item| {
            filter.as_ref().is_none_or(|(property, value)| item.member(property).equals(&Value::str(value.clone())))
        })
        .collect())
}

/// `Win32_LogicalDisk` `C:`: the system volume with the host's free space and size in bytes (windows-commands.md
/// §4.1), the only volume a simulated host has.
fn system_volume(session: &Session<'_>) -> Value {
    Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#root/cimv2/Win32_LogicalDisk",
        vec![
            ("DeviceID", Value::str("C:")),
            ("DriveType", Value::Int(3)),
            ("FileSystem", Value::str("NTFS")),
            ("FreeSpace", Value::Int(i64::try_from(session.host.volume.free_bytes).unwrap_or(i64::MAX))),
            ("Size", Value::Int(i64::try_from(session.host.volume.size_bytes).unwrap_or(i64::MAX))),
        ],
    )))
}

/// `Win32_OperatingSystem`: the product caption, version and build of the host's Windows build (windows-commands.md
/// §4.1 Builds) and `LastBootUpTime`, a DateTime (the class is the simulator's extension of the §8 subset, by which
/// a completed reboot is told from a pending one).
fn operating_system(host: &Host) -> Value {
    let build = host.identity.build;
    let caption = match build {
        17763 => "Microsoft Windows Server 2019 Datacenter",
        20348 => "Microsoft Windows Server 2022 Datacenter",
        26100 => "Microsoft Windows Server 2025 Datacenter",
        _ => "Microsoft Windows Server",
    };
    let boot_millis = host
        .last_boot_up
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since_epoch| i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX));
    Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#root/cimv2/Win32_OperatingSystem",
        vec![
            ("Caption", Value::str(caption)),
            ("Version", Value::Str(format!("10.0.{build}"))),
            ("BuildNumber", Value::Str(build.to_string())),
            ("CSName", Value::Str(host.identity.netbios_name())),
            ("OSArchitecture", Value::str("64-bit")),
            ("LastBootUpTime", Value::DateTime(boot_millis)),
        ],
    )))
}

/// `Name='x'` (a single WQL equality).
fn parse_wql_equality(text: &str) -> Option<(String, String)> {
    let (property, value) = text.split_once('=')?;
    let property = property.trim();
    let value = value.trim();
    let value = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))?;
    (!property.is_empty() && property.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| (property.to_owned(), value.to_owned()))
}

fn service_not_found(call: &Call, name: &str) -> PsError {
    call.error(
        format!("Cannot find any service with service name '{name}'."),
        "ObjectNotFound",
        "ServiceCommandException",
        "NoServiceFoundForGivenName",
        name,
    )
}

fn get_service(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    session.host.refresh();
    let names: Vec<String> = call
        .arguments
        .get_or_position("name", 0)
        .map(|v| v.clone().enumerate().iter().map(Value::to_text).collect())
        .unwrap_or_default();
    let mut output = Vec::new();
    let all: Vec<crate::scm::Service> = session.host.scm.services().cloned().collect();
    let selected: Vec<&crate::scm::Service> = if names.is_empty() { all.iter().collect() } else { Vec::new() };
    for service in selected {
        output.push(service_controller(session.host, service));
    }
    for name in names {
        let matching: Vec<&crate::scm::Service> = all.iter().filter(|service| wildcard(&name, &service.name)).collect();
        if matching.is_empty() && !name.contains('*') {
            session.report(service_not_found(call, &name), call.action)?;
        }
        for service in matching {
            output.push(service_controller(session.host, service));
        }
    }
    Ok(output)
}

fn service_controller(host: &Host, service: &crate::scm::Service) -> Value {
    let state_name = match service.state {
        State::Stopped => "Stopped",
        State::StartPending => "StartPending",
        State::StopPending => "StopPending",
        State::Running => "Running",
    };
    let start_name = match service.start_type {
        StartType::Boot => "Boot",
        StartType::System => "System",
        StartType::Auto => "Automatic",
        StartType::Demand => "Manual",
        StartType::Disabled => "Disabled",
    };
    Value::Object(Box::new(Object::typed(
        "System.ServiceProcess.ServiceController",
        vec![
            ("Name", Value::str(service.name.clone())),
            ("DisplayName", Value::str(service.display_name.clone())),
            ("Status", Value::enumeration(state_name, i64::from(service.state.code()))),
            ("StartType", Value::enumeration(start_name, i64::from(service.start_type.code()))),
            (
                "DependentServices",
                Value::Array(host.scm.dependents(&service.name).into_iter().map(Value::Str).collect()),
            ),
            ("ServicesDependedOn", Value::Array(service.dependencies.iter().cloned().map(Value::Str).collect())),
        ],
    )))
}

fn set_service(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("name", Some(0)) else { return Err(call.missing_argument("Name")) };
    if session.host.scm.get(&name).is_none() {
        let error = call.error(
            format!("Service '{name}' was not found on computer '.'."),
            "ObjectNotFound",
            "InvalidOperationException",
            "InvalidOperationException",
            &name,
        );
        return fail(session, call, error);
    }
    if let Some(start) = call.arguments.text("startuptype", None) {
        let start = match start.to_ascii_lowercase().as_str() {
            "automatic" => (StartType::Auto, false),
            "manual" => (StartType::Demand, false),
            "disabled" => (StartType::Disabled, false),
            _ => {
                let error = call.error(
                    format!("Cannot bind parameter 'StartupType'. Cannot convert value \"{start}\"."),
                    "InvalidArgument",
                    "ParameterBindingException",
                    "CannotConvertArgumentNoMessage",
                    &start,
                );
                return Err(Flow::Error { error: Box::new(error), script: false });
            }
        };
        let config = crate::scm::ServiceConfig { start: Some(start), ..Default::default() };
        if session.host.scm.configure(&name, config).is_err() {
            let error = call.error(format!("Service '{name}' cannot be configured due to the following error: The specified service has been marked for deletion"), "PermissionDenied", "ServiceCommandException", "CouldNotSetService", &name);
            return fail(session, call, error);
        }
    }
    Ok(Vec::new())
}

fn control_service(session: &mut Session<'_>, call: &Call, verb: &str) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("name", Some(0)) else { return Err(call.missing_argument("Name")) };
    if session.host.scm.get(&name).is_none() {
        return fail(session, call, service_not_found(call, &name));
    }
    if verb != "start-service" {
        wait_for_stable(session.host, &name);
        let running = session.host.scm.get(&name).is_some_and(|service| service.state != State::Stopped);
        if running {
            if let Err(error) = session.host.stop_service(&name) {
                let error = call.error(
                    format!(
                        "Service '{name} ({name})' cannot be stopped due to the following error: {}",
                        crate::scm::win32_message(error.0)
                    ),
                    "CloseError",
                    "ServiceCommandException",
                    "CouldNotStopService",
                    &name,
                );
                return fail(session, call, error);
            }
            wait_for_stable(session.host, &name);
        }
        if verb == "stop-service" {
            return Ok(Vec::new());
        }
    }
    if session.host.scm.get(&name).is_some_and(|service| service.state != State::Stopped) {
        return Ok(Vec::new());
    }
    match session.host.start_service(&name) {
        Ok(()) => {
            wait_for_stable(session.host, &name);
            if session.host.scm.get(&name).is_some_and(|service| service.state == State::Running) {
                Ok(Vec::new())
            } else {
                let error = call.error(
                    format!("Failed to start service '{name} ({name})'."),
                    "OpenError",
                    "ServiceCommandException",
                    "StartServiceFailed",
                    &name,
                );
                fail(session, call, error)
            }
        }
        Err(error) => {
            let error = call.error(
                format!("Service '{name} ({name})' cannot be started due to the following error: Cannot start service {name} on computer '.'. {}", crate::scm::win32_message(error.0)),
                "OpenError",
                "ServiceCommandException",
                "CouldNotStartService",
                &name,
            );
            fail(session, call, error)
        }
    }
}

/// Start-/Stop-/Restart-Service wait for the pending state to end (bounded by a few transition delays).
fn wait_for_stable(host: &mut Host, name: &str) {
    let deadline = Instant::now() + host.latency.service_transition * 3;
    loop {
        host.refresh();
        let pending = host.scm.get(name).is_some_and(|s| matches!(s.state, State::StartPending | State::StopPending));
        if !pending || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Running processes: (name, id, path, service).
/// The processes of running services (name, id, image, service), and Defender's `MsMpEng` while it runs.
fn processes(host: &Host) -> Vec<(String, u32, String, String)> {
    let mut found: Vec<_> = host
        .scm
        .services()
        .filter(|service| service.state != State::Stopped)
        .flat_map(|service| {
            executables(&service.image_path)
                .into_iter()
                .enumerate()
                .map(|(index, exe)| {
                    (stem(&exe), service.pid + u32::try_from(index).unwrap_or(0), exe, service.name.clone())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if host.defender.as_ref().is_some_and(|defender| defender.running) {
        found.push(("MsMpEng".to_owned(), DEFENDER_PID, DEFENDER_IMAGE.to_owned(), "WinDefend".to_owned()));
    }
    found
}

/// The process id Defender's `MsMpEng` has on every simulated host.
const DEFENDER_PID: u32 = 3164;

fn get_process(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    session.host.refresh();
    let Some(name) = call.arguments.text("name", Some(0)) else { return Err(call.missing_argument("Name")) };
    let found: Vec<Value> = processes(session.host)
        .into_iter()
        .filter(|(process, ..)| wildcard(&name, process))
        .map(|(process, id, path, _)| {
            Value::Object(Box::new(Object::typed(
                "System.Diagnostics.Process",
                vec![
                    ("Name", Value::str(process.clone())),
                    ("ProcessName", Value::Str(process)),
                    ("Id", Value::Int(i64::from(id))),
                    ("Path", Value::Str(path)),
                ],
            )))
        })
        .collect();
    if found.is_empty() {
        let error = call.error(
            format!(
                "Cannot find a process with the name \"{name}\". Verify the process name and call the cmdlet again."
            ),
            "ObjectNotFound",
            "ProcessCommandException",
            "NoProcessFoundForGivenName",
            &name,
        );
        return fail(session, call, error);
    }
    Ok(found)
}

fn stop_process(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    session.host.refresh();
    let Some(name) = call.arguments.text("name", Some(0)) else { return Err(call.missing_argument("Name")) };
    let services: Vec<String> = processes(session.host)
        .into_iter()
        .filter(|(process, ..)| wildcard(&name, process))
        .map(|(.., service)| service)
        .collect();
    if services.is_empty() {
        let error = call.error(
            format!(
                "Cannot find a process with the name \"{name}\". Verify the process name and call the cmdlet again."
            ),
            "ObjectNotFound",
            "ProcessCommandException",
            "NoProcessFoundForGivenName",
            &name,
        );
        return fail(session, call, error);
    }
    for service in services {
        session.host.scm.kill(&service, Instant::now());
        session.host.process_events.push(ProcessEvent::Stopped { service });
    }
    Ok(Vec::new())
}

/// The interface index of the simulated NIC.
const INTERFACE_INDEX: i64 = 6;

fn route(host: &Host) -> Value {
    let octets = host.identity.node_ip.octets();
    Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#ROOT/StandardCimv2/MSFT_NetRoute",
        vec![
            ("DestinationPrefix", Value::str("0.0.0.0/0")),
            ("NextHop", Value::Str(format!("{}.{}.{}.1", octets[0], octets[1], octets[2]))),
            ("InterfaceIndex", Value::Int(INTERFACE_INDEX)),
            ("ifIndex", Value::Int(INTERFACE_INDEX)),
            ("InterfaceAlias", Value::str("Ethernet")),
            ("RouteMetric", Value::Int(0)),
            ("AddressFamily", Value::enumeration("IPv4", 2)),
        ],
    )))
}

fn get_net_ip_address(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let index = call.arguments.get("interfaceindex").and_then(Value::as_int);
    if index.is_some_and(|index| index != INTERFACE_INDEX) {
        let index = index.unwrap_or_default();
        let error = call.error(
            format!("No MSFT_NetIPAddress objects found with property 'InterfaceIndex' equal to '{index}'.  Verify the value of the property and retry."),
            "ObjectNotFound",
            "CimJobException",
            "CmdletizationQuery_NotFound_InterfaceIndex",
            &index.to_string(),
        );
        return fail(session, call, error);
    }
    Ok(vec![Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#ROOT/StandardCimv2/MSFT_NetIPAddress",
        vec![
            ("IPAddress", Value::Str(session.host.identity.node_ip.to_string())),
            ("InterfaceIndex", Value::Int(INTERFACE_INDEX)),
            ("InterfaceAlias", Value::str("Ethernet")),
            ("AddressFamily", Value::enumeration("IPv4", 2)),
            ("PrefixLength", Value::Int(24)),
            ("PrefixOrigin", Value::enumeration("Dhcp", 3)),
        ],
    )))])
}

fn firewall_object(rule: &FirewallRule) -> Value {
    let (direction, direction_number) =
        if rule.direction.eq_ignore_ascii_case("outbound") { ("Outbound", 2) } else { ("Inbound", 1) };
    let (action, action_number) = if rule.action.eq_ignore_ascii_case("block") { ("Block", 4) } else { ("Allow", 2) };
    Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#root/StandardCimv2/MSFT_NetFirewallRule",
        vec![
            ("Name", Value::str(rule.name.clone())),
            ("DisplayName", Value::str(rule.display_name.clone())),
            ("Description", Value::Null),
            ("DisplayGroup", Value::Null),
            ("Group", Value::Null),
            (
                "Enabled",
                Value::enumeration(if rule.enabled { "True" } else { "False" }, if rule.enabled { 1 } else { 2 }),
            ),
            ("Profile", Value::enumeration("Any", 0)),
            ("Platform", Value::Array(Vec::new())),
            ("Direction", Value::enumeration(direction, direction_number)),
            ("Action", Value::enumeration(action, action_number)),
            ("EdgeTraversalPolicy", Value::enumeration("Block", 0)),
            ("LooseSourceMapping", Value::Bool(false)),
            ("LocalOnlyMapping", Value::Bool(false)),
            ("Owner", Value::Null),
            ("PrimaryStatus", Value::enumeration("OK", 1)),
            ("Status", Value::str("The rule was parsed successfully from the store. (65536)")),
            ("EnforcementStatus", Value::enumeration("NotApplicable", 0)),
            ("PolicyStoreSource", Value::str("PersistentStore")),
            ("PolicyStoreSourceType", Value::enumeration("Local", 1)),
        ],
    )))
}

fn firewall_not_found(call: &Call, name: &str) -> PsError {
    call.error(
        format!("No MSFT_NetFirewallRule objects found with property 'Name' equal to '{name}'.  Verify the value of the property and retry."),
        "ObjectNotFound",
        "CimJobException",
        "CmdletizationQuery_NotFound_Name",
        name,
    )
}

fn get_firewall_rule(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("name", Some(0)) else {
        return Ok(session.host.firewall.iter().map(firewall_object).collect());
    };
    match session.host.firewall.iter().find(|rule| rule.name.eq_ignore_ascii_case(&name)) {
        Some(rule) => Ok(vec![firewall_object(rule)]),
        None => fail(session, call, firewall_not_found(call, &name)),
    }
}

fn new_firewall_rule(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let display_name = call.arguments.text("displayname", None).unwrap_or_default();
    let name = call.arguments.text("name", None).unwrap_or_else(|| {
        let count = session.host.firewall.len();
        format!("{{{count:08x}-0000-4000-8000-000000000000}}")
    });
    if session.host.firewall.iter().any(|rule| rule.name.eq_ignore_ascii_case(&name)) {
        let error = call.error(
            "Cannot create a file when that file already exists.",
            "AlreadyExists",
            "CimException",
            "Windows System Error 183",
            &name,
        );
        return fail(session, call, error);
    }
    let rule = FirewallRule {
        name,
        display_name,
        direction: call.arguments.text("direction", None).unwrap_or_else(|| "Inbound".to_owned()),
        protocol: call.arguments.text("protocol", None).unwrap_or_else(|| "Any".to_owned()),
        local_port: call.arguments.text("localport", None).unwrap_or_else(|| "Any".to_owned()),
        action: call.arguments.text("action", None).unwrap_or_else(|| "Allow".to_owned()),
        enabled: call.arguments.text("enabled", None).is_none_or(|text| text.eq_ignore_ascii_case("true")),
    };
    let object = firewall_object(&rule);
    session.host.firewall.push(rule);
    Ok(vec![object])
}

fn remove_firewall_rule(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("name", Some(0)) else { return Err(call.missing_argument("Name")) };
    let before = session.host.firewall.len();
    session.host.firewall.retain(|rule| !rule.name.eq_ignore_ascii_case(&name));
    if session.host.firewall.len() == before {
        return fail(session, call, firewall_not_found(call, &name));
    }
    Ok(Vec::new())
}

fn hns_object(network: &crate::host::HnsNetwork) -> Value {
    let subnets = match &network.address_prefix {
        Some(prefix) => vec![Value::Object(Box::new(Object {
            kind: ObjectKind::Custom,
            properties: vec![
                ("AddressPrefix".to_owned(), Value::str(prefix.clone())),
                ("GatewayAddress".to_owned(), network.gateway.clone().map_or(Value::Null, Value::Str)),
            ],
        }))],
        None => Vec::new(),
    };
    Value::Object(Box::new(Object {
        kind: ObjectKind::Custom,
        properties: vec![
            ("ActivityId".to_owned(), Value::str(network.id.clone())),
            ("Id".to_owned(), Value::str(network.id.clone())),
            ("Name".to_owned(), Value::str(network.name.clone())),
            ("Type".to_owned(), Value::str(network.kind.clone())),
            ("Subnets".to_owned(), Value::Array(subnets)),
            ("ManagementIP".to_owned(), Value::Null),
        ],
    }))
}

fn remove_hns_network(session: &mut Session<'_>, call: &Call, input: Vec<Value>) -> Result<Vec<Value>, Flow> {
    let targets: Vec<Value> = call.arguments.get("inputobjects").cloned().map(Value::enumerate).unwrap_or(input);
    for target in targets {
        let id = target.member("Id").to_text();
        session.host.hns_networks.retain(|network| !network.id.eq_ignore_ascii_case(&id));
    }
    Ok(Vec::new())
}

fn registry_value(value: &RegValue) -> Value {
    match value {
        RegValue::String(text) => Value::str(text.clone()),
        RegValue::Dword(number) => Value::Int(i64::from(*number)),
        RegValue::Binary(bytes) => Value::Array(bytes.iter().map(|byte| Value::Int(i64::from(*byte))).collect()),
        RegValue::MultiString(items) => Value::Array(items.iter().cloned().map(Value::Str).collect()),
    }
}

/// The values of a key: stored ones, plus, under `Services\<name>`, the SCM's view of the service.
fn key_values(host: &Host, key: &str) -> Vec<(String, Value)> {
    let mut values = Vec::new();
    if let Some(service) = service_key_name(key).and_then(|name| host.scm.get(&name)) {
        values.push(("Type".to_owned(), Value::Int(i64::from(service.service_type))));
        values.push(("Start".to_owned(), Value::Int(i64::from(service.start_type.code()))));
        values.push(("ErrorControl".to_owned(), Value::Int(i64::from(service.error_control))));
        values.push(("ImagePath".to_owned(), Value::str(service.image_path.clone())));
        values.push(("DisplayName".to_owned(), Value::str(service.display_name.clone())));
        values.push(("ObjectName".to_owned(), Value::str(service.account.clone())));
        if let Some(description) = &service.description {
            values.push(("Description".to_owned(), Value::str(description.clone())));
        }
        if !service.dependencies.is_empty() {
            values.push((
                "DependOnService".to_owned(),
                Value::Array(service.dependencies.iter().cloned().map(Value::Str).collect()),
            ));
        }
        if service.delayed {
            values.push(("DelayedAutostart".to_owned(), Value::Int(1)));
        }
        if let Some(actions) = &service.failure_actions {
            values.push(("FailureActions".to_owned(), registry_value(&RegValue::Binary(actions.registry_bytes()))));
        }
        if service.failure_flag {
            values.push(("FailureActionsOnNonCrashFailures".to_owned(), Value::Int(1)));
        }
        if service.marked_for_deletion {
            values.push(("DeleteFlag".to_owned(), Value::Int(1)));
        }
    }
    if let Some(stored) = host.registry.get(&key.to_lowercase()) {
        for (name, value) in stored.values.values() {
            values.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
            values.push((name.clone(), registry_value(value)));
        }
    }
    values
}

fn get_item_property(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    session.host.refresh();
    let key = normalize_key(&path_text);
    if !is_registry_path(&path_text) || !registry_key_exists(session.host, &key) {
        return fail(session, call, call.missing_path(&path_text));
    }
    let mut properties = key_values(session.host, &key);
    if let Some(name) = call.arguments.text("name", Some(1)) {
        properties.retain(|(existing, _)| existing.eq_ignore_ascii_case(&name));
        if properties.is_empty() {
            return fail(session, call, missing_property(call, &name, &path_text));
        }
    }
    let child = key.rsplit('\\').next().unwrap_or_default().to_owned();
    properties.push((
        "PSPath".to_owned(),
        Value::Str(format!("Microsoft.PowerShell.Core\\Registry::{}", key.replacen("HKLM", "HKEY_LOCAL_MACHINE", 1))),
    ));
    properties.push(("PSChildName".to_owned(), Value::Str(child)));
    Ok(vec![Value::Object(Box::new(Object { kind: ObjectKind::Custom, properties }))])
}

fn set_item_property(session: &mut Session<'_>, call: &Call, create: bool) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let Some(name) = call.arguments.text("name", Some(1)) else { return Err(call.missing_argument("Name")) };
    let value = call.arguments.get_or_position("value", 2).cloned().unwrap_or(Value::Null);
    let key = normalize_key(&path_text);
    if !is_registry_path(&path_text) || !registry_key_exists(session.host, &key) {
        return fail(session, call, call.missing_path(&path_text));
    }
    let exists = key_values(session.host, &key).iter().any(|(existing, _)| existing.eq_ignore_ascii_case(&name));
    if create && exists && !call.arguments.switch("force") {
        let error = call.error(
            "The property already exists.",
            "ResourceExists",
            "IOException",
            "System.IO.IOException",
            &path_text,
        );
        return fail(session, call, error);
    }
    let property_type =
        call.arguments.text("propertytype", None).unwrap_or_else(|| "String".to_owned()).to_ascii_lowercase();
    let stored = match property_type.as_str() {
        "dword" => match value.as_int().and_then(|n| u32::try_from(n).ok()) {
            Some(number) => RegValue::Dword(number),
            None => {
                let error = call.error(
                    format!("Cannot convert value \"{}\" to type \"System.UInt32\".", value.to_text()),
                    "InvalidArgument",
                    "ArgumentException",
                    "System.ArgumentException",
                    &name,
                );
                return fail(session, call, error);
            }
        },
        "multistring" => RegValue::MultiString(value.enumerate().iter().map(Value::to_text).collect()),
        _ => RegValue::String(value.to_text()),
    };
    session.host.set_registry_value(&key, &name, stored.clone());
    if create {
        return Ok(vec![Value::Object(Box::new(Object {
            kind: ObjectKind::Custom,
            properties: vec![(name, registry_value(&stored))],
        }))]);
    }
    Ok(Vec::new())
}

/// The `PSArgumentException` Windows PowerShell raises for a registry value `name` that key `path_text` lacks.
fn missing_property(call: &Call, name: &str, path_text: &str) -> PsError {
    call.error(
        format!("Property {name} does not exist at path {path_text}."),
        "InvalidArgument",
        "PSArgumentException",
        "System.Management.Automation.PSArgumentException",
        name,
    )
}

/// `Remove-ItemProperty -Path <key> -Name <value>`: deletes a stored value; a value that does not exist is the
/// `PSArgumentException` Windows PowerShell raises.
fn remove_item_property(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let Some(name) = call.arguments.text("name", Some(1)) else { return Err(call.missing_argument("Name")) };
    let key = normalize_key(&path_text);
    if !is_registry_path(&path_text) || !registry_key_exists(session.host, &key) {
        return fail(session, call, call.missing_path(&path_text));
    }
    let removed = session
        .host
        .registry
        .get_mut(&key.to_lowercase())
        .and_then(|stored| stored.values.remove(&name.to_lowercase()))
        .is_some();
    if !removed {
        return fail(session, call, missing_property(call, &name, &path_text));
    }
    Ok(Vec::new())
}

fn get_optional_feature(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("featurename", None) else { return Err(call.missing_argument("FeatureName")) };
    let (state, number) = match session.host.features.iter().find(|(feature, _)| feature.eq_ignore_ascii_case(&name)) {
        Some((_, state)) => crate::host::feature_state(state).unwrap_or(("Disabled", 0)),
        None => {
            let error = call.error(
                "Feature name is unknown.",
                "NotSpecified",
                "COMException",
                "Microsoft.Dism.Commands.GetWindowsOptionalFeatureCommand",
                &name,
            );
            return fail(session, call, error);
        }
    };
    Ok(vec![Value::Object(Box::new(Object::typed(
        "Microsoft.Dism.Commands.AdvancedFeatureObject",
        vec![
            ("FeatureName", Value::str(name.clone())),
            ("DisplayName", Value::str(name)),
            ("Description", Value::str("")),
            ("RestartRequired", Value::enumeration("Possible", 1)),
            ("State", Value::enumeration(state, number)),
        ],
    )))])
}

/// `Install-WindowsFeature -Name <feature>` (windows-commands.md §4.1): an enabled feature needs no change; a
/// disabled one (also with its payload removed, or with a removal pending) becomes `EnablePending` until the next
/// reboot and asks for a restart, as does installing it again before that reboot; an unknown name is a
/// non-terminating error plus a failed result. The host is always a Server SKU with the ServerManager module.
fn install_windows_feature(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("name", Some(0)) else { return Err(call.missing_argument("Name")) };
    let feature = session.host.features.iter_mut().find(|(feature, _)| feature.eq_ignore_ascii_case(&name));
    let Some((feature_name, state)) = feature else {
        let error = call.error(
            format!("ArgumentNotValid: The role, role service, or feature name is not valid: '{name}'. The name was not found."),
            "InvalidArgument",
            "Exception",
            "NameDoesNotExist",
            &name,
        );
        session.report(error, call.action)?;
        return Ok(vec![feature_operation_result(false, "No", "Failed", None)]);
    };
    Ok(vec![match state.as_str() {
        "Enabled" => feature_operation_result(true, "No", "NoChangeNeeded", None),
        "EnablePending" => feature_operation_result(true, "Yes", "SuccessRestartRequired", None),
        _ => {
            "EnablePending".clone_into(state);
            feature_operation_result(true, "Yes", "SuccessRestartRequired", Some(feature_name.as_str()))
        }
    }])
}

/// The `FeatureOperationResult` `Install-WindowsFeature` returns, with the feature it installed (if any) in
/// `FeatureResult`. Windows PowerShell 5.1 gives `RestartNeeded` and `ExitCode` as enums; the simulator keeps their
/// names as strings, which `-eq` and `.ToString()` treat alike (the product compares them with `-eq` and reads
/// `.Success`; `ConvertTo-Json` would print numbers on Windows and names here).
fn feature_operation_result(success: bool, restart_needed: &str, exit_code: &str, installed: Option<&str>) -> Value {
    let feature_results = installed.into_iter().map(|feature| {
        Value::Object(Box::new(Object::typed(
            "Microsoft.Windows.ServerManager.Commands.FeatureResult",
            vec![
                ("DisplayName", Value::str(feature)),
                ("Name", Value::str(feature)),
                ("RestartNeeded", Value::Bool(true)),
                ("Success", Value::Bool(true)),
            ],
        )))
    });
    Value::Object(Box::new(Object::typed(
        "Microsoft.Windows.ServerManager.Commands.FeatureOperationResult",
        vec![
            ("Success", Value::Bool(success)),
            ("RestartNeeded", Value::str(restart_needed)),
            ("FeatureResult", Value::Array(feature_results.collect())),
            ("ExitCode", Value::str(exit_code)),
        ],
    )))
}

/// Defender's preferences, for the `MpPreference` cmdlets: not installed is an unknown command, not running fails
/// with the service's HRESULT.
fn defender<'h>(session: &'h mut Session<'_>, call: &Call) -> Result<Option<&'h mut crate::host::Defender>, Flow> {
    match session.host.defender.as_ref().map(|defender| defender.running) {
        None => Err(command_not_found(&call.name)),
        Some(false) => {
            let error = call.error(
                "Operation failed with the following error: 0x800106ba",
                "NotSpecified",
                "CimException",
                "HRESULT 0x800106ba",
                "MSFT_MpPreference",
            );
            fail(session, call, error)?;
            Ok(None)
        }
        Some(true) => Ok(session.host.defender.as_mut()),
    }
}

fn get_mp_preference(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(defender) = defender(session, call)? else { return Ok(Vec::new()) };
    let exclusions = match defender.exclusion_process.as_slice() {
        [] => Value::Null,
        list => Value::Array(list.iter().cloned().map(Value::Str).collect()),
    };
    Ok(vec![Value::Object(Box::new(Object::typed(
        "Microsoft.Management.Infrastructure.CimInstance#ROOT/Microsoft/Windows/Defender/MSFT_MpPreference",
        vec![("DisableRealtimeMonitoring", Value::Bool(false)), ("ExclusionProcess", exclusions)],
    )))])
}

/// `Add-MpPreference` (idempotent) and `Remove-MpPreference` (an absent exclusion is no error) of `-ExclusionProcess`.
fn change_mp_preference(session: &mut Session<'_>, call: &Call, add: bool) -> Result<Vec<Value>, Flow> {
    let Some(program) = call.arguments.text("exclusionprocess", None) else {
        return Err(call.missing_argument("ExclusionProcess"));
    };
    let Some(defender) = defender(session, call)? else { return Ok(Vec::new()) };
    let present = defender.exclusion_process.iter().any(|existing| existing.eq_ignore_ascii_case(&program));
    if add && !present {
        defender.exclusion_process.push(program);
    } else if !add {
        defender.exclusion_process.retain(|existing| !existing.eq_ignore_ascii_case(&program));
    }
    Ok(Vec::new())
}

fn add_capability(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(name) = call.arguments.text("name", None) else { return Err(call.missing_argument("Name")) };
    if !session.host.capabilities.iter().any(|existing| existing.eq_ignore_ascii_case(&name)) {
        if name.to_ascii_lowercase().starts_with("openssh.server~") {
            install_openssh_server(session.host);
        }
        session.host.capabilities.push(name);
    }
    Ok(vec![Value::Object(Box::new(Object::typed(
        "Microsoft.Dism.Commands.ImageObject",
        vec![("Path", Value::Null), ("Online", Value::Bool(true)), ("RestartNeeded", Value::Bool(false))],
    )))])
}

/// What installing the `OpenSSH.Server` capability leaves on Windows: `sshd.exe` under
/// `C:\Windows\System32\OpenSSH` and a stopped, demand-start `sshd` service running it (an image that already has
/// them keeps them).
fn install_openssh_server(host: &mut Host) {
    let (Ok(directory), Ok(executable)) =
        (WinPath::parse(OPENSSH_DIRECTORY), WinPath::parse(&format!("{OPENSSH_DIRECTORY}\\sshd.exe")))
    else {
        return;
    };
    if host.disk.entry(&executable).is_none()
        && host.disk.create_dir_all(&directory).is_ok()
        && host.disk.write(&executable, b"MZ").is_err()
    {
        return;
    }
    if host.scm.get("sshd").is_none() {
        let config = crate::scm::ServiceConfig {
            image_path: Some(executable.to_string()),
            start: Some((StartType::Demand, false)),
            display_name: Some("OpenSSH SSH Server".to_owned()),
            ..crate::scm::ServiceConfig::default()
        };
        let _ = host.scm.create("sshd", config);
    }
}

/// Where the OpenSSH capability installs its programs.
const OPENSSH_DIRECTORY: &str = r"C:\Windows\System32\OpenSSH";

/// `Get-Acl [-Path|-LiteralPath] P`: a `FileSecurity` (`DirectorySecurity` for a directory) with `Sddl`, `Owner`,
/// `Access` (one text per entry, [`crate::acl::Dacl::access_texts`]), `AccessToString` and
/// `AreAccessRulesProtected`.
fn get_acl(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let Ok(path) = WinPath::parse(&path_text) else { return fail(session, call, call.missing_path(&path_text)) };
    let Some(dacl) = session.host.disk.dacl(&path) else {
        return fail(session, call, call.missing_path(&path_text));
    };
    let kind = match session.host.disk.entry(&path) {
        Some(crate::disk::Entry::Directory) => "System.Security.AccessControl.DirectorySecurity",
        _ => "System.Security.AccessControl.FileSecurity",
    };
    let owner = session.host.disk.owner(&path);
    let entries = dacl.access_texts();
    Ok(vec![Value::Object(Box::new(Object::typed(
        kind,
        vec![
            ("Path", Value::Str(path.to_string())),
            ("Owner", Value::Str(crate::acl::account_name(owner))),
            ("Access", Value::Array(entries.iter().cloned().map(Value::Str).collect())),
            ("AccessToString", Value::Str(entries.join("\n"))),
            ("AreAccessRulesProtected", Value::Bool(dacl.protected)),
            ("Sddl", Value::Str(dacl.sddl(owner))),
        ],
    )))])
}

/// `Set-Acl -Path P -AclObject $acl`: the object's explicit entries and protection become the path's own settings.
fn set_acl(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    let Some(path_text) = call.path() else { return Err(call.missing_argument("Path")) };
    let Some(acl) = call.arguments.get_or_position("aclobject", 1).cloned() else {
        return Err(call.missing_argument("AclObject"));
    };
    let Ok(path) = WinPath::parse(&path_text) else { return fail(session, call, call.missing_path(&path_text)) };
    if session.host.disk.entry(&path).is_none() {
        return fail(session, call, call.missing_path(&path_text));
    }
    let explicit = acl
        .member("Access")
        .enumerate()
        .iter()
        .filter_map(|entry| crate::acl::parse_access_text(&entry.to_text()))
        .filter(|entry| !entry.inherited)
        .collect();
    let protected = acl.member("AreAccessRulesProtected").truthy();
    session.host.disk.set_acl(&path, crate::acl::AclSettings { protected, explicit });
    Ok(Vec::new())
}

/// A native program call: argv from the values (5.1 drops empty strings), output lines as strings,
/// `$LASTEXITCODE` and `$?` set. Unknown names are CommandNotFoundException and recorded.
fn native(session: &mut Session<'_>, name: &str, arguments: &Arguments) -> Result<Vec<Value>, Flow> {
    let mut argv = Vec::new();
    for (parameter, value) in &arguments.named {
        argv.push(format!("-{parameter}"));
        if *value != Value::Bool(true) {
            argv.extend(value.clone().enumerate().iter().map(Value::to_text));
        }
    }
    argv.extend(arguments.positional.iter().flat_map(|value| value.clone().enumerate()).map(|value| value.to_text()));
    argv.retain(|argument| !argument.is_empty());
    let raw = argv.join(" ");
    let Some(output) = crate::native::run(session.host, name, &argv, &raw) else {
        session.host.record_unknown("powershell", name);
        return Err(command_not_found(name));
    };
    session.set_variable("LASTEXITCODE", Value::Int(i64::from(output.code as i32)));
    let mut lines: Vec<Value> =
        output.stdout.split("\r\n").map(|line| Value::str(line.trim_end_matches('\n'))).collect();
    if lines.last() == Some(&Value::str("")) {
        lines.pop();
    }
    for line in output.stderr.lines() {
        let error = PsError::new("", line.to_owned(), "NotSpecified", "RemoteException", "NativeCommandError", line);
        session.errors.push(error);
    }
    session.last_success = output.code == 0;
    Ok(lines)
}

/// `[Type]::Member(...)` of the subset.
///
/// # Errors
/// Unknown types and members.
pub fn static_member(
    session: &mut Session<'_>,
    type_name: &str,
    member: &str,
    called: bool,
    arguments: Vec<Value>,
) -> Result<Value, Flow> {
    let text = |index: usize| arguments.get(index).map(Value::to_text).unwrap_or_default();
    let lowered_type = type_name.to_ascii_lowercase();
    let lowered_member = member.to_ascii_lowercase();
    match (lowered_type.trim_start_matches("system."), lowered_member.as_str(), called) {
        ("environment", "setenvironmentvariable", true) => {
            if text(2).eq_ignore_ascii_case("machine") {
                let value = arguments.get(1).filter(|value| **value != Value::Null).map(Value::to_text);
                session.host.set_machine_env(&text(0), value.as_deref());
            }
            Ok(Value::Null)
        }
        ("environment", "getenvironmentvariable", true) => Ok(if text(1).eq_ignore_ascii_case("machine") {
            session.host.machine_env(&text(0)).map_or(Value::Null, Value::Str)
        } else {
            session.host.session_env(&text(0)).map_or(Value::Null, Value::Str)
        }),
        ("net.dns", "gethostname", true) => Ok(Value::str(session.host.identity.hostname.clone())),
        ("net.dns", "gethostentry", true) => {
            let identity = &session.host.identity;
            let asked = text(0);
            let known = [
                identity.hostname.clone(),
                identity.fqdn.clone(),
                identity.node_ip.to_string(),
                "localhost".to_owned(),
            ];
            if !known.iter().any(|name| name.eq_ignore_ascii_case(&asked)) {
                let error = PsError::runtime(
                    "Exception calling \"GetHostEntry\" with \"1\" argument(s): \"No such host is known\"",
                    "NotSpecified",
                    "SocketException",
                );
                return Err(Flow::Error { error: Box::new(error), script: false });
            }
            Ok(Value::Object(Box::new(Object::typed(
                "System.Net.IPHostEntry",
                vec![
                    ("HostName", Value::str(identity.fqdn.clone())),
                    ("Aliases", Value::Array(Vec::new())),
                    ("AddressList", Value::Array(vec![Value::Str(identity.node_ip.to_string())])),
                ],
            ))))
        }
        _ => {
            if called && let Some(result) = super::provisioning::static_call(session, type_name, member, &arguments) {
                return result;
            }
            let error =
                PsError::runtime(format!("Unable to find type [{type_name}]."), "InvalidOperation", "TypeNotFound");
            Err(Flow::Error { error: Box::new(error), script: false })
        }
    }
}

/// The terminating error of a command that does not exist on the host.
fn command_not_found(name: &str) -> Flow {
    let error = PsError::new(
        "",
        format!(
            "The term '{name}' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again."
        ),
        "ObjectNotFound",
        "CommandNotFoundException",
        "CommandNotFoundException",
        name,
    );
    Flow::Error { error: Box::new(error), script: false }
}
