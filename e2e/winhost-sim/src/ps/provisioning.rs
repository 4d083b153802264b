//! What the product's user data adds to the PowerShell subset (`docs/user-data.md`, "PowerShell used beyond the
//! reference's §8"), over the host's accounts, disk and downloads:
//!
//! - local accounts: `Get-LocalUser [-Name N]`, `Set-LocalUser -Name N -Password P` and `Enable-LocalUser -Name N`
//!   (also with user objects piped in); a missing user is the non-terminating `User N was not found.`;
//! - `ConvertTo-SecureString -String S -AsPlainText -Force`: a `System.Security.SecureString` that keeps the length of
//!   the text, never the text (Windows PowerShell 5.1 refuses `-AsPlainText` without `-Force`);
//! - `Add-Type -AssemblyName System.Web` and then `[System.Web.Security.Membership]::GeneratePassword(length,
//!   nonAlphanumeric)` (.NET Framework; the type is unknown until the assembly is loaded);
//! - `[System.Version]::Parse(text)` and the comparison operators between versions (the right side converted to a
//!   version, as PowerShell converts it to the left side's type);
//! - `Invoke-WebRequest -Uri U -OutFile P [-UseBasicParsing]`: the host's [`Host::downloads`] hold what it can reach,
//!   any other URL is `Unable to connect to the remote server` (message as 5.1 prints it for a refused connection;
//!   the simulator does not tell DNS failures and time-outs apart);
//! - `Start-Process -FilePath F [-ArgumentList A] [-Wait] [-PassThru] [-NoNewWindow]`: the program runs to its end
//!   (the simulator does not model a process that outlives the call); `-ArgumentList` items are joined with spaces
//!   into one command line, without quoting, as 5.1 does, and split again by the program's rules; `-PassThru` gives a
//!   `System.Diagnostics.Process` whose `ExitCode` is set with `-Wait` (without it, `$null`). `$LASTEXITCODE` is not
//!   set. A program the host does not have is recorded as an unknown command.
//!
//! Parameters outside these forms are refused by name (never ignored).
//!
//! [`Host::downloads`]: crate::host::Host::downloads

use std::cmp::Ordering;

use super::eval::{Arguments, ErrorAction, Flow, PsError, Session};
use super::value::{Object, ObjectKind, Value};
use crate::disk::WinPath;
use crate::host::LocalUser;

/// The cmdlets of this module, as PowerShell spells them.
const CMDLETS: [&str; 7] = [
    "Get-LocalUser",
    "Set-LocalUser",
    "Enable-LocalUser",
    "ConvertTo-SecureString",
    "Add-Type",
    "Invoke-WebRequest",
    "Start-Process",
];

/// The .NET type of a local account object.
const LOCAL_USER_TYPE: &str = "Microsoft.PowerShell.Commands.LocalUser";
/// The .NET type `ConvertTo-SecureString` returns.
const SECURE_STRING_TYPE: &str = "System.Security.SecureString";
/// The .NET type `[System.Version]::Parse` returns.
const VERSION_TYPE: &str = "System.Version";
/// The assemblies `Add-Type -AssemblyName` can load (lower case).
const KNOWN_ASSEMBLIES: [&str; 1] = ["system.web"];
/// The characters `Membership.GeneratePassword` draws from: letters and digits, and its punctuation.
const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const PUNCTUATION: &[u8] = b"!@#$%^&*()_-+=[{]};:>|./?";

/// The canonical name of a cmdlet of this module (`lowered`: the name as written, lower-cased).
///
/// ```
/// assert_eq!(winhost_sim::ps::provisioning::cmdlet_name("get-localuser"), Some("Get-LocalUser"));
/// assert_eq!(winhost_sim::ps::provisioning::cmdlet_name("get-service"), None);
/// ```
pub fn cmdlet_name(lowered: &str) -> Option<&'static str> {
    CMDLETS.iter().find(|name| name.eq_ignore_ascii_case(lowered)).copied()
}

/// One bound call of a cmdlet of this module.
struct Call {
    name: &'static str,
    arguments: Arguments,
    action: Option<ErrorAction>,
}

impl Call {
    fn error(&self, message: impl Into<String>, category: &str, exception: &str, id: &str, target: &str) -> PsError {
        let command_type = format!("Microsoft.PowerShell.Commands.{}Command", self.name.replace('-', ""));
        PsError::new(self.name, message, category, exception, &format!("{id},{command_type}"), target)
    }

    /// A statement-terminating error (parameter binding and validation).
    fn terminating(&self, message: impl Into<String>, category: &str, exception: &str, id: &str) -> Flow {
        Flow::Error { error: Box::new(self.error(message, category, exception, id, "")), script: false }
    }

    /// Refuses named parameters other than `allowed` (lower case).
    fn only(&self, allowed: &[&str]) -> Result<(), Flow> {
        match self.arguments.named.iter().find(|(name, _)| !allowed.contains(&name.as_str())) {
            Some((name, _)) => Err(self.terminating(
                format!("the simulator does not model parameter -{name} of {}", self.name),
                "NotImplemented",
                "NotSupportedException",
                "ParameterNotModelled",
            )),
            None => Ok(()),
        }
    }

    fn missing_argument(&self, parameter: &str) -> Flow {
        self.terminating(
            format!("Cannot bind argument to parameter '{parameter}' because it is null."),
            "InvalidData",
            "ParameterBindingValidationException",
            "ParameterArgumentValidationErrorNullNotAllowed",
        )
    }

    /// Reports a non-terminating error under the call's `-ErrorAction` (or the preference); no output.
    fn fail(&self, session: &mut Session<'_>, error: PsError) -> Result<Vec<Value>, Flow> {
        session.report(error, self.action)?;
        Ok(Vec::new())
    }
}

/// Runs cmdlet `name` (from [`cmdlet_name`]) with its bound `arguments` and pipeline `input`.
///
/// # Errors
/// Terminating errors, and non-terminating ones under `-ErrorAction Stop`.
pub fn invoke(
    session: &mut Session<'_>,
    name: &'static str,
    arguments: Arguments,
    input: Vec<Value>,
    action: Option<ErrorAction>,
) -> Result<Vec<Value>, Flow> {
    let call = Call { name, arguments, action };
    match name {
        "Get-LocalUser" => get_local_user(session, &call),
        "Set-LocalUser" => change_local_user(session, &call, input, true),
        "Enable-LocalUser" => change_local_user(session, &call, input, false),
        "ConvertTo-SecureString" => convert_to_secure_string(&call),
        "Add-Type" => add_type(session, &call),
        "Invoke-WebRequest" => invoke_web_request(session, &call),
        _ => start_process(session, &call),
    }
}

fn local_user_object(user: &LocalUser) -> Value {
    Value::Object(Box::new(Object::typed(
        LOCAL_USER_TYPE,
        vec![
            ("Name", Value::str(user.name.clone())),
            ("Enabled", Value::Bool(user.enabled)),
            ("Description", Value::str("")),
        ],
    )))
}

fn user_not_found(call: &Call, name: &str) -> PsError {
    call.error(format!("User {name} was not found."), "ObjectNotFound", "UserNotFoundException", "UserNotFound", name)
}

fn get_local_user(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    call.only(&["name"])?;
    let Some(name) = call.arguments.text("name", Some(0)) else {
        return Ok(session.host.local_users.iter().map(local_user_object).collect());
    };
    match session.host.local_users.iter().find(|user| user.name.eq_ignore_ascii_case(&name)) {
        Some(user) => Ok(vec![local_user_object(user)]),
        None => call.fail(session, user_not_found(call, &name)),
    }
}

/// `Set-LocalUser -Password` (`set_password`) or `Enable-LocalUser`, for `-Name` or the user objects piped in.
fn change_local_user(
    session: &mut Session<'_>,
    call: &Call,
    input: Vec<Value>,
    set_password: bool,
) -> Result<Vec<Value>, Flow> {
    call.only(if set_password { &["name", "password"] } else { &["name"] })?;
    let names: Vec<String> = match call.arguments.text("name", Some(0)) {
        Some(name) => vec![name],
        None => input.iter().map(|user| user.member("Name").to_text()).filter(|name| !name.is_empty()).collect(),
    };
    if names.is_empty() {
        return Err(call.missing_argument("Name"));
    }
    if set_password {
        match call.arguments.get("password") {
            Some(password) if is_typed(password, SECURE_STRING_TYPE) => {}
            Some(other) => {
                return Err(call.terminating(
                    format!(
                        "Cannot bind parameter 'Password'. Cannot convert the \"{}\" value of type \"System.String\" \
                         to type \"System.Security.SecureString\".",
                        other.to_text()
                    ),
                    "InvalidArgument",
                    "ParameterBindingException",
                    "CannotConvertArgumentNoMessage",
                ));
            }
            None => return Ok(Vec::new()),
        }
    }
    for name in names {
        match session.host.local_users.iter_mut().find(|user| user.name.eq_ignore_ascii_case(&name)) {
            Some(user) if set_password => user.password_set = true,
            Some(user) => user.enabled = true,
            None => {
                call.fail(session, user_not_found(call, &name))?;
            }
        }
    }
    Ok(Vec::new())
}

fn is_typed(value: &Value, type_name: &str) -> bool {
    matches!(value, Value::Object(object) if object.kind == ObjectKind::Typed(type_name.to_owned()))
}

fn convert_to_secure_string(call: &Call) -> Result<Vec<Value>, Flow> {
    call.only(&["string", "asplaintext", "force"])?;
    let text = call.arguments.text("string", Some(0)).ok_or_else(|| call.missing_argument("String"))?;
    if !call.arguments.switch("asplaintext") {
        return Err(call.terminating(
            "the simulator converts plain text only (-AsPlainText -Force)",
            "NotImplemented",
            "NotSupportedException",
            "ParameterNotModelled",
        ));
    }
    if !call.arguments.switch("force") {
        return Err(call.terminating(
            "The system cannot protect plain text input. To suppress this warning and convert the plain text to a \
             SecureString, reissue the command specifying the Force parameter. For more information ,type: get-help \
             ConvertTo-SecureString.",
            "InvalidArgument",
            "ArgumentException",
            "ImportSecureString_InvalidArgument",
        ));
    }
    let length = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
    Ok(vec![Value::Object(Box::new(Object::typed(SECURE_STRING_TYPE, vec![("Length", Value::Int(length))])))])
}

fn add_type(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    call.only(&["assemblyname"])?;
    let assembly = call.arguments.text("assemblyname", None).ok_or_else(|| call.missing_argument("AssemblyName"))?;
    let lowered = assembly.to_ascii_lowercase();
    if !KNOWN_ASSEMBLIES.contains(&lowered.trim_end_matches(".dll")) {
        let error = call.error(
            format!("Cannot add type. The assembly '{assembly}' could not be found."),
            "ObjectNotFound",
            "Exception",
            "ASSEMBLY_NOT_FOUND",
            &assembly,
        );
        return call.fail(session, error);
    }
    let loaded = lowered.trim_end_matches(".dll").to_owned();
    if !session.assemblies.contains(&loaded) {
        session.assemblies.push(loaded);
    }
    Ok(Vec::new())
}

fn invoke_web_request(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    call.only(&["uri", "outfile", "usebasicparsing"])?;
    let uri = call.arguments.text("uri", Some(0)).ok_or_else(|| call.missing_argument("Uri"))?;
    let Some(out_file) = call.arguments.text("outfile", None) else {
        return Err(call.terminating(
            "the simulator models downloads to a file only (-OutFile)",
            "NotImplemented",
            "NotSupportedException",
            "ParameterNotModelled",
        ));
    };
    let Some(content) = session.host.downloads.get(&uri).cloned() else {
        let error = call.error(
            "Unable to connect to the remote server",
            "InvalidOperation",
            "WebException",
            "WebCmdletWebResponseException",
            &uri,
        );
        return call.fail(session, error);
    };
    let written = WinPath::parse(&out_file).ok().is_some_and(|path| session.host.disk.write(&path, &content).is_ok());
    if !written {
        let error = call.error(
            format!("Could not find a part of the path '{out_file}'."),
            "NotSpecified",
            "DirectoryNotFoundException",
            "System.IO.DirectoryNotFoundException",
            &out_file,
        );
        return call.fail(session, error);
    }
    Ok(Vec::new())
}

fn start_process(session: &mut Session<'_>, call: &Call) -> Result<Vec<Value>, Flow> {
    call.only(&["filepath", "argumentlist", "wait", "passthru", "nonewwindow"])?;
    let program = call.arguments.text("filepath", Some(0)).ok_or_else(|| call.missing_argument("FilePath"))?;
    let raw = match call.arguments.get_or_position("argumentlist", 1) {
        Some(list) => list.clone().enumerate().iter().map(Value::to_text).collect::<Vec<_>>().join(" "),
        None => String::new(),
    };
    let argv = crate::argv::split(&raw);
    let Some(output) = crate::native::run(session.host, &program, &argv, &raw) else {
        session.host.record_unknown("powershell", &program);
        let error = call.error(
            "This command cannot be run due to the error: The system cannot find the file specified.",
            "InvalidOperation",
            "InvalidOperationException",
            "InvalidOperationException",
            "",
        );
        return call.fail(session, error);
    };
    if !call.arguments.switch("passthru") {
        return Ok(Vec::new());
    }
    let waited = call.arguments.switch("wait");
    let process_name = crate::process::stem(&program);
    let id = 4096 + i64::try_from(session.host.command_log.len()).unwrap_or(0) * 4;
    Ok(vec![Value::Object(Box::new(Object::typed(
        "System.Diagnostics.Process",
        vec![
            ("Id", Value::Int(id)),
            ("ProcessName", Value::Str(process_name)),
            ("HasExited", Value::Bool(waited)),
            ("ExitCode", if waited { Value::Int(i64::from(output.code as i32)) } else { Value::Null }),
        ],
    )))])
}

/// `[Type]::Member(...)` of this module: `None` when `type_name` is not one of its types.
///
/// # Errors
/// A method called with unusable arguments (MethodInvocationException), or `Membership` before its assembly is loaded.
pub fn static_call(
    session: &Session<'_>,
    type_name: &str,
    member: &str,
    arguments: &[Value],
) -> Option<Result<Value, Flow>> {
    let lowered_type = type_name.to_ascii_lowercase();
    let lowered_member = member.to_ascii_lowercase();
    match (lowered_type.as_str(), lowered_member.as_str()) {
        ("system.web.security.membership", _) if !session.assemblies.iter().any(|name| name == "system.web") => None,
        ("system.web.security.membership", "generatepassword") => Some(generate_password(arguments)),
        ("system.version" | "version", "parse") => {
            let text = arguments.first().map(Value::to_text).unwrap_or_default();
            Some(match parse_version(&text) {
                Some(parts) => Ok(version_object(parts)),
                None => Err(method_error("Parse", arguments.len(), "Input string was not in a correct format.")),
            })
        }
        _ => None,
    }
}

/// A MethodInvocationException (statement-terminating).
fn method_error(method: &str, count: usize, message: &str) -> Flow {
    let error = PsError::runtime(
        format!("Exception calling \"{method}\" with \"{count}\" argument(s): \"{message}\""),
        "NotSpecified",
        "ArgumentException",
    );
    Flow::Error { error: Box::new(error), script: false }
}

/// `Membership.GeneratePassword(length, numberOfNonAlphanumericCharacters)`: `length` characters (1 to 128), at
/// least the asked number of them punctuation.
fn generate_password(arguments: &[Value]) -> Result<Value, Flow> {
    let length = arguments.first().and_then(Value::as_int).unwrap_or(0);
    let punctuation = arguments.get(1).and_then(Value::as_int).unwrap_or(-1);
    if !(1..=128).contains(&length) {
        return Err(method_error(
            "GeneratePassword",
            arguments.len(),
            "The length of parameter 'length' needs to be greater or equal to '1'.",
        ));
    }
    if !(0..=length).contains(&punctuation) {
        return Err(method_error(
            "GeneratePassword",
            arguments.len(),
            "The value of parameter 'numberOfNonAlphanumericCharacters' needs to be greater than or equal to 0 and less than or equal to length.",
        ));
    }
    let pick = |set: &[u8]| char::from(set[rand::random_range(0..set.len())]);
    let mut characters: Vec<char> = (0..length).map(|_| pick(ALPHANUMERIC)).collect();
    let mut positions: Vec<usize> = (0..characters.len()).collect();
    for _ in 0..punctuation {
        let position = positions.swap_remove(rand::random_range(0..positions.len()));
        characters[position] = pick(PUNCTUATION);
    }
    Ok(Value::Str(characters.into_iter().collect()))
}

/// `System.Version.Parse`: two to four non-negative components; a missing build or revision is -1.
///
/// ```
/// use winhost_sim::ps::provisioning::parse_version;
/// assert_eq!(parse_version("2.0.2107"), Some([2, 0, 2107, -1]));
/// assert_eq!(parse_version(" 10.1 "), Some([10, 1, -1, -1]));
/// assert_eq!(parse_version("2"), None);
/// assert_eq!(parse_version("v2.0.1"), None);
/// ```
pub fn parse_version(text: &str) -> Option<[i64; 4]> {
    let parts: Vec<&str> = text.trim().split('.').collect();
    if !(2..=4).contains(&parts.len()) {
        return None;
    }
    let mut version = [-1; 4];
    for (slot, part) in version.iter_mut().zip(parts) {
        let number: i32 = part.parse().ok()?;
        if number < 0 {
            return None;
        }
        *slot = i64::from(number);
    }
    Some(version)
}

fn version_object(parts: [i64; 4]) -> Value {
    let [major, minor, build, revision] = parts;
    Value::Object(Box::new(Object::typed(
        VERSION_TYPE,
        vec![
            ("Major", Value::Int(major)),
            ("Minor", Value::Int(minor)),
            ("Build", Value::Int(build)),
            ("Revision", Value::Int(revision)),
        ],
    )))
}

/// The components of a `System.Version` value.
fn version_parts(value: &Value) -> Option<[i64; 4]> {
    let Value::Object(object) = value else { return None };
    if object.kind != ObjectKind::Typed(VERSION_TYPE.to_owned()) {
        return None;
    }
    let part = |name: &str| object.get(name).and_then(Value::as_int);
    Some([part("Major")?, part("Minor")?, part("Build")?, part("Revision")?])
}

/// How `left` orders against `right` when `left` is a `System.Version` (the right side converted to a version);
/// `None` otherwise, or when the right side is no version.
pub fn version_ordering(left: &Value, right: &Value) -> Option<Ordering> {
    let left = version_parts(left)?;
    let right = version_parts(right).or_else(|| parse_version(&right.to_text()))?;
    Some(left.cmp(&right))
}

#[cfg(test)]
mod tests {
    use crate::host::Host;
    use crate::host::tests::test_host;
    use crate::ps::{ErrorStream, run_script};

    fn ps(host: &mut Host, script: &str) -> crate::host::Output {
        run_script(host, script, ErrorStream::Text)
    }

    #[test]
    fn the_administrator_is_enabled_with_a_password_and_the_text_is_never_kept() {
        let (_root, mut host) = test_host();
        let script = "$ErrorActionPreference = 'Stop'\n\
            if (-not (Get-LocalUser -Name 'capi' -ErrorAction SilentlyContinue)) {\n\
                $a = Get-LocalUser -Name 'Administrator' -ErrorAction SilentlyContinue\n\
                if ($a -and -not $a.Enabled) {\n\
                    Add-Type -AssemblyName 'System.Web'\n\
                    Set-LocalUser -Name 'Administrator' -Password (ConvertTo-SecureString -String \
                     ([System.Web.Security.Membership]::GeneratePassword(16, 2)) -AsPlainText -Force)\n\
                    Enable-LocalUser -Name 'Administrator'\n\
                }\n\
            }\n\
            (Get-LocalUser -Name 'Administrator').Enabled\nexit 0";
        let output = ps(&mut host, script);
        assert_eq!((output.code, output.stdout.as_str(), output.stderr.as_str()), (0, "True\r\n", ""));
        assert_eq!(
            host.local_users,
            [crate::host::LocalUser { name: "Administrator".into(), enabled: true, password_set: true }]
        );
        assert!(host.unknown_commands.is_empty());
    }

    #[test]
    fn passwords_are_random_of_the_asked_shape_and_need_the_assembly() {
        let (_root, mut host) = test_host();
        let before = ps(&mut host, "[System.Web.Security.Membership]::GeneratePassword(16, 2)");
        assert!(before.stderr.contains("Unable to find type [System.Web.Security.Membership]"), "{before:?}");
        let output = ps(
            &mut host,
            "Add-Type -AssemblyName System.Web\n\
             [System.Web.Security.Membership]::GeneratePassword(16, 2)\n\
             [System.Web.Security.Membership]::GeneratePassword(16, 2)",
        );
        let passwords: Vec<&str> = output.stdout.lines().collect();
        assert_eq!(passwords.len(), 2, "{output:?}");
        assert_ne!(passwords[0], passwords[1]);
        for password in passwords {
            assert_eq!(password.chars().count(), 16);
            assert!(password.chars().filter(|c| !c.is_ascii_alphanumeric()).count() >= 2, "{password}");
        }
        let bad = ps(
            &mut host,
            "Add-Type -AssemblyName System.Web\n[System.Web.Security.Membership]::GeneratePassword(0, 2)",
        );
        assert!(bad.stderr.contains("Exception calling \"GeneratePassword\""), "{bad:?}");
        let missing = ps(&mut host, "Add-Type -AssemblyName Nope.Assembly");
        assert!(
            missing.stderr.contains("ASSEMBLY_NOT_FOUND,Microsoft.PowerShell.Commands.AddTypeCommand"),
            "{missing:?}"
        );
    }

    #[test]
    fn accounts_report_missing_users_and_refuse_a_plain_string_password() {
        let (_root, mut host) = test_host();
        let missing = ps(&mut host, "Get-LocalUser -Name capi");
        assert_eq!(missing.code, 1);
        assert!(missing.stderr.starts_with("Get-LocalUser : User capi was not found."), "{missing:?}");
        assert!(missing.stderr.contains("UserNotFound,Microsoft.PowerShell.Commands.GetLocalUserCommand"));
        let silent = ps(&mut host, "Get-LocalUser -Name capi -ErrorAction SilentlyContinue\nexit 0");
        assert_eq!((silent.code, silent.stdout.as_str(), silent.stderr.as_str()), (0, "", ""));
        let plain = ps(&mut host, "Set-LocalUser -Name Administrator -Password 'secret'");
        assert!(plain.stderr.contains("to type \"System.Security.SecureString\""), "{plain:?}");
        assert!(!host.local_users[0].password_set);
        let no_force = ps(&mut host, "ConvertTo-SecureString -String 'x' -AsPlainText");
        assert!(no_force.stderr.contains("specifying the Force parameter"), "{no_force:?}");
        let unmodelled = ps(&mut host, "Set-LocalUser -Name Administrator -Description 'x'");
        assert!(unmodelled.stderr.contains("does not model parameter -description"), "{unmodelled:?}");
        host.local_users.push(crate::host::LocalUser { name: "capi".into(), enabled: true, password_set: true });
        let piped = ps(&mut host, "Get-LocalUser | Where-Object { -not $_.Enabled } | Enable-LocalUser\nexit 0");
        assert_eq!(piped.code, 0, "{piped:?}");
        assert!(host.local_users.iter().all(|user| user.enabled));
    }

    #[test]
    fn versions_parse_and_compare_by_component() {
        let (_root, mut host) = test_host();
        let output = ps(
            &mut host,
            "[System.Version]::Parse('2.0.863') -lt [System.Version]::Parse('2.0.2107')\n\
             [System.Version]::Parse('2.0.2107') -ge '2.0.2107'\n\
             [System.Version]::Parse('2.5.2') -gt [System.Version]::Parse('2.0.2107')\n\
             [System.Version]::Parse('2.0') -eq [System.Version]::Parse('2.0.0')\n\
             [System.Version]::Parse('2.0.2107').Build",
        );
        assert_eq!(output.stdout, "True\r\nTrue\r\nTrue\r\nFalse\r\n2107\r\n", "{output:?}");
        let bad = ps(&mut host, "[System.Version]::Parse('v2')");
        assert!(bad.stderr.contains("Exception calling \"Parse\" with \"1\" argument(s)"), "{bad:?}");
    }

    #[test]
    fn downloads_reach_only_known_urls_and_processes_report_their_exit_code() {
        let (_root, mut host) = test_host();
        let url = crate::ec2launch::MSI_URL;
        let output = ps(
            &mut host,
            &format!(
                "$ErrorActionPreference = 'Stop'\n\
                 Invoke-WebRequest -Uri '{url}' -OutFile 'C:\\Windows\\Temp\\a.msi' -UseBasicParsing\n\
                 $p = Start-Process -FilePath 'msiexec.exe' -ArgumentList '/i', 'C:\\Windows\\Temp\\a.msi', '/qn' \
                 -Wait -PassThru\n$p.ExitCode\n\
                 $q = Start-Process -FilePath 'msiexec.exe' -ArgumentList '/i', 'C:\\Windows\\Temp\\none.msi', '/qn' \
                 -Wait -PassThru\n$q.ExitCode\nexit 0"
            ),
        );
        assert_eq!((output.code, output.stdout.as_str(), output.stderr.as_str()), (0, "0\r\n1619\r\n", ""));
        assert!(host.ec2launch_version.is_some());
        let offline = ps(&mut host, "Invoke-WebRequest -Uri 'https://example.com/x' -OutFile 'C:\\Windows\\Temp\\x'");
        assert!(
            offline.stderr.starts_with("Invoke-WebRequest : Unable to connect to the remote server"),
            "{offline:?}"
        );
        let no_directory = ps(&mut host, &format!("Invoke-WebRequest -Uri '{url}' -OutFile 'C:\\nowhere\\a.msi'"));
        assert!(no_directory.stderr.contains("Could not find a part of the path"), "{no_directory:?}");
        assert!(host.unknown_commands.is_empty());
        let unknown = ps(&mut host, "Start-Process -FilePath 'setup.exe' -Wait");
        assert!(unknown.stderr.contains("cannot find the file specified"), "{unknown:?}");
        assert_eq!(host.unknown_commands.len(), 1);
    }
}
