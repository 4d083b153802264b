//! Native programs the host has, shared by cmd.exe and PowerShell: `sc.exe`, `powershell.exe`, `cmd.exe`,
//! `hostname.exe`, `icacls.exe`, `certutil.exe` and `msiexec.exe`, found by bare name, with or without `.exe`, or by
//! their System32 path; and, once installed, EC2Launch v2's `EC2Launch.exe` by its full path
//! ([`crate::ec2launch`]).

use crate::acl::{Ace, AclSettings, parse_icacls_grant, principal_sid};
use crate::disk::WinPath;
use crate::host::{Host, Output};

/// The program a command name resolves to (`None`: not a program this host has).
pub fn resolve(name: &str) -> Option<&'static str> {
    let lowered = name.to_ascii_lowercase().replace('/', "\\");
    let (directory, file) = match lowered.rsplit_once('\\') {
        Some((directory, file)) => (Some(directory.to_owned()), file.to_owned()),
        None => (None, lowered),
    };
    let system_directory = |expected: &str| directory.as_deref().is_none_or(|d| d == expected);
    let stem = file.strip_suffix(".exe").unwrap_or(&file);
    match stem {
        "sc" if system_directory(r"c:\windows\system32") => Some("sc"),
        "cmd" if system_directory(r"c:\windows\system32") => Some("cmd"),
        "hostname" if system_directory(r"c:\windows\system32") => Some("hostname"),
        "icacls" if system_directory(r"c:\windows\system32") => Some("icacls"),
        "certutil" if system_directory(r"c:\windows\system32") => Some("certutil"),
        "msiexec" if system_directory(r"c:\windows\system32") => Some("msiexec"),
        "ec2launch" if directory.as_deref() == Some(r"c:\program files\amazon\ec2launch") => Some("ec2launch"),
        "powershell" if system_directory(r"c:\windows\system32\windowspowershell\v1.0") => Some("powershell"),
        _ => None,
    }
}

/// Runs a native program with its argv (`raw` is the unsplit argument text, for `cmd /c`). `None` if the host has
/// no such program.
pub fn run(host: &mut Host, name: &str, arguments: &[String], raw: &str) -> Option<Output> {
    Some(match resolve(name)? {
        "msiexec" => crate::ec2launch::msiexec(host, arguments),
        "ec2launch" => return crate::ec2launch::ec2launch(host, arguments),
        "sc" => crate::sc::run(host, arguments),
        "powershell" => crate::ps::run_powershell_exe(host, arguments),
        "hostname" => Output::ok(format!("{}\r\n", host.identity.hostname)),
        "icacls" => icacls(host, arguments),
        "certutil" => certutil(host, arguments),
        _ => cmd(host, raw),
    })
}

fn cmd(host: &mut Host, raw: &str) -> Output {
    let trimmed = raw.trim_start();
    match trimmed.get(..2) {
        Some(switch) if switch.eq_ignore_ascii_case("/c") => crate::cmd::run_line(host, trimmed[2..].trim_start()),
        _ => Output::new("", "cmd: only /c is available in a non-interactive session\r\n", 1),
    }
}

/// `icacls <path> /reset [/q] [/c]`, or `icacls <path> [/inheritance:e|d|r] [/grant[:r] <principal>:<perm>...]...
/// [/remove[:g|:d] <principal>...]... [/q] [/c]` (options applied in order; principals as `*S-1-5-18` or English
/// account names): changes the path's own ACL settings ([`crate::acl`]); what lies below follows by inheritance.
fn icacls(host: &mut Host, arguments: &[String]) -> Output {
    let Some((target, options)) = arguments.split_first() else {
        return Output::new("", "Invalid parameter \"\"\r\n", 87);
    };
    let Ok(path) = WinPath::parse(target) else {
        return Output::new(
            "",
            format!(
                "{target}: The filename, directory name, or volume label syntax is incorrect.\r\nSuccessfully processed 0 files; Failed processing 1 files\r\n"
            ),
            123,
        );
    };
    let Some(dacl) = host.disk.dacl(&path) else {
        return Output::new(
            "",
            format!(
                "{target}: The system cannot find the file specified.\r\nSuccessfully processed 0 files; Failed processing 1 files\r\n"
            ),
            2,
        );
    };
    let mut settings = host.disk.acl_settings(&path);
    let mut quiet = false;
    let invalid = |option: &str| Output::new("", format!("Invalid parameter \"{option}\"\r\n"), 87);
    let resets = options.iter().any(|option| option.eq_ignore_ascii_case("/reset"));
    let mut index = 0;
    while index < options.len() {
        let option = options[index].to_ascii_lowercase();
        let values: Vec<&String> = options[index + 1..].iter().take_while(|value| !value.starts_with('/')).collect();
        match option.as_str() {
            "/q" => quiet = true,
            "/c" => {}
            "/reset" => settings = AclSettings::default(),
            _ if resets => return invalid(&options[index]),
            "/inheritance:r" => settings.protected = true,
            "/inheritance:e" => settings.protected = false,
            "/inheritance:d" => {
                if !settings.protected {
                    let copies = dacl.entries.iter().filter(|entry| entry.inherited);
                    settings.explicit.extend(copies.map(|entry| Ace { inherited: false, ..entry.clone() }));
                }
                settings.protected = true;
            }
            "/grant" | "/grant:r" | "/remove" | "/remove:g" | "/remove:d" if !values.is_empty() => {
                for value in &values {
                    if let Err(output) = apply_icacls_value(&mut settings, &option, value) {
                        return output;
                    }
                }
                index += values.len();
            }
            _ => return invalid(&options[index]),
        }
        index += 1;
    }
    settings.explicit.sort_by_key(|entry| entry.allow);
    host.disk.set_acl(&path, settings);
    let processed = if quiet { String::new() } else { format!("processed file: {target}\r\n") };
    Output::ok(format!("{processed}Successfully processed 1 files; Failed processing 0 files\r\n"))
}

/// One `<principal>:<perm>` of `/grant` (`/grant:r` first drops the principal's explicit grants; a plain `/grant`
/// adds to an explicit grant of the same inheritance) or one `<principal>` of `/remove` (`:g` grants only, `:d`
/// denials only).
fn apply_icacls_value(settings: &mut AclSettings, option: &str, value: &str) -> Result<(), Output> {
    let unmapped = || {
        Output::new(
            "",
            format!(
                "{value}: No mapping between account names and security IDs was done.\r\nSuccessfully processed 0 files; Failed processing 1 files\r\n"
            ),
            1332,
        )
    };
    if let Some(kind) = option.strip_prefix("/remove") {
        let sid = principal_sid(value).ok_or_else(unmapped)?;
        settings.explicit.retain(|entry| {
            let matches_kind = match kind {
                ":g" => entry.allow,
                ":d" => !entry.allow,
                _ => true,
            };
            !(entry.sid == sid && matches_kind)
        });
        return Ok(());
    }
    let (principal, permission) = value.split_once(':').ok_or_else(unmapped)?;
    let sid = principal_sid(principal).ok_or_else(unmapped)?;
    let grant = parse_icacls_grant(&sid, permission)
        .ok_or_else(|| Output::new("", format!("Invalid parameter \"{value}\"\r\n"), 87))?;
    if option == "/grant:r" {
        settings.explicit.retain(|entry| !(entry.allow && entry.sid == sid));
    }
    let same = settings.explicit.iter_mut().find(|entry| {
        entry.allow
            && entry.sid == sid
            && (entry.object_inherit, entry.container_inherit, entry.inherit_only, entry.no_propagate)
                == (grant.object_inherit, grant.container_inherit, grant.inherit_only, grant.no_propagate)
    });
    match same {
        Some(entry) => entry.mask |= grant.mask,
        None => settings.explicit.push(grant),
    }
    Ok(())
}

/// `certutil -hashfile <path> [algorithm]` (windows-commands.md §2.1): the file's hash in lower-case hex between
/// certutil's header and trailer lines. Only SHA256 is modelled (certutil's default, SHA1, and its other
/// algorithms are refused as a host without them would refuse an unknown one); any other verb is refused.
fn certutil(host: &mut Host, arguments: &[String]) -> Output {
    let (Some(verb), Some(target)) = (arguments.first(), arguments.get(1)) else {
        return certutil_failure("", "0x80070057 (WIN32: 87 ERROR_INVALID_PARAMETER)", "The parameter is incorrect.");
    };
    if !verb.eq_ignore_ascii_case("-hashfile") || arguments.len() > 3 {
        return certutil_failure(verb, "0x80070057 (WIN32: 87 ERROR_INVALID_PARAMETER)", "The parameter is incorrect.");
    }
    let algorithm = arguments.get(2).map_or("SHA1", String::as_str);
    if !algorithm.eq_ignore_ascii_case("SHA256") {
        return certutil_failure("-hashfile", "0x80090008 (-2146893816 NTE_BAD_ALGID)", "Invalid algorithm specified.");
    }
    let hash = WinPath::parse(target).ok().and_then(|path| host.file_hash(&path));
    match hash {
        Some(hash) => Output::ok(format!(
            "SHA256 hash of {target}:\r\n{hash}\r\nCertUtil: -hashfile command completed successfully.\r\n"
        )),
        None => certutil_failure(
            "-hashfile",
            "0x80070002 (WIN32: 2 ERROR_FILE_NOT_FOUND)",
            "The system cannot find the file specified.",
        ),
    }
}

/// certutil's two failure lines (on stdout) and the HRESULT of `code` as its exit status.
fn certutil_failure(verb: &str, code: &str, message: &str) -> Output {
    let status = code
        .strip_prefix("0x")
        .and_then(|hex| hex.split_whitespace().next())
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .unwrap_or(1);
    Output::new(format!("CertUtil: {verb} command FAILED: {code}\r\nCertUtil: {message}\r\n"), "", status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{ADMINISTRATORS, SYSTEM, USERS};
    use crate::host::tests::test_host;

    #[test]
    fn resolves_programs_by_name_and_system_path_only() {
        assert_eq!(resolve("SC.EXE"), Some("sc"));
        assert_eq!(resolve(r"C:\Windows\System32\sc.exe"), Some("sc"));
        assert_eq!(resolve(r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"), Some("powershell"));
        assert_eq!(resolve(r"C:\k\sc.exe"), None);
        assert_eq!(resolve("ls"), None);
        assert_eq!(resolve("msiexec"), Some("msiexec"));
        assert_eq!(resolve(r"C:\Program Files\Amazon\EC2Launch\EC2Launch.exe"), Some("ec2launch"));
        assert_eq!(resolve("EC2Launch.exe"), None, "not on the PATH");
    }

    #[test]
    fn certutil_hashes_a_file_and_fails_on_a_missing_one_with_its_hresult() {
        let (_root, mut host) = test_host();
        host.disk.create_dir_all(&WinPath::parse(r"C:\k").unwrap()).unwrap();
        host.disk.write(&WinPath::parse(r"C:\k\a b.txt").unwrap(), b"abc").unwrap();
        let output = host.exec("c", r#"certutil -hashfile "C:\k\a b.txt" sha256"#);
        assert_eq!(output.code, 0, "{output:?}");
        assert_eq!(
            output.stdout,
            "SHA256 hash of C:\\k\\a b.txt:\r\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\r\n\
             CertUtil: -hashfile command completed successfully.\r\n"
        );
        let missing = host.exec("c", r"certutil.exe -hashfile C:\k\none SHA256");
        assert_eq!(missing.code, 0x8007_0002);
        assert!(missing.stdout.starts_with("CertUtil: -hashfile command FAILED: 0x80070002"), "{missing:?}");
        let chained = host.exec("c", r"certutil -hashfile C:\k\none SHA256 && echo after");
        assert!(!chained.stdout.contains("after"), "{chained:?}");
        assert_eq!(host.exec("c", r#"certutil -hashfile "C:\k\a b.txt""#).code, 0x8009_0008);
        assert_eq!(host.exec("c", "certutil -dump").code, 0x8007_0057);
    }

    #[test]
    fn hostname_cmd_and_icacls() {
        let (_root, mut host) = test_host();
        assert_eq!(host.exec("c", "hostname").stdout, "winworker-1\r\n");
        assert_eq!(host.exec("c", "cmd /c hostname").stdout, "winworker-1\r\n");
        host.disk.write(&WinPath::parse(crate::host::ADMIN_AUTHORIZED_KEYS).unwrap(), b"k").unwrap();
        let output = host.exec(
            "c",
            r#"icacls.exe "C:\ProgramData\ssh\administrators_authorized_keys" /inheritance:r /grant "Administrators:F" /grant "SYSTEM:F""#,
        );
        assert_eq!(output.code, 0, "{output:?}");
        let key = WinPath::parse(crate::host::ADMIN_AUTHORIZED_KEYS).unwrap();
        let dacl = host.disk.dacl(&key).unwrap();
        assert!(dacl.protected);
        assert_eq!(dacl.grantees(), [ADMINISTRATORS, SYSTEM]);
    }

    #[test]
    fn icacls_restricts_a_directory_and_what_lies_below_follows() {
        let (_root, mut host) = test_host();
        let k = WinPath::parse(r"C:\k").unwrap();
        host.disk.create_dir_all(&k.join("cni")).unwrap();
        host.disk.write(&k.join("bootstrap-kubeconfig"), b"token").unwrap();
        let token = k.join("bootstrap-kubeconfig");
        assert!(host.disk.dacl(&token).unwrap().grantees().contains(&USERS.to_owned()), "C:\\ lets Users read");
        let output = host.exec(
            "c",
            "icacls.exe C:\\k /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F /grant:r *S-1-5-32-544:(OI)(CI)F /q",
        );
        assert_eq!(
            (output.code, output.stdout.as_str()),
            (0, "Successfully processed 1 files; Failed processing 0 files\r\n")
        );
        assert_eq!(host.disk.dacl(&k).unwrap().sddl(ADMINISTRATORS), "O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
        assert_eq!(host.disk.dacl(&token).unwrap().grantees(), [SYSTEM, ADMINISTRATORS]);
        assert_eq!(host.disk.dacl(&k.join("cni")).unwrap().grantees(), [SYSTEM, ADMINISTRATORS]);
        // An explicit grant survives /inheritance:r and /grant:r of others; /reset drops it and inherits again.
        assert_eq!(host.exec("c", r"icacls C:\k\cni /grant Users:(OI)(CI)RX").code, 0);
        assert!(host.disk.dacl(&k.join("cni")).unwrap().grantees().contains(&USERS.to_owned()));
        assert_eq!(host.exec("c", r"icacls C:\k\cni /reset /grant Users:RX").code, 87, "/reset stands alone");
        assert_eq!(host.exec("c", r"icacls C:\k\cni /reset /q").code, 0);
        assert_eq!(host.disk.dacl(&k.join("cni")).unwrap().grantees(), [SYSTEM, ADMINISTRATORS]);
        assert_eq!(host.exec("c", r"icacls C:\k /grant nobody:F").code, 1332);
        assert_eq!(host.exec("c", r"icacls C:\k /grant Users:Q").code, 87);
        // Removing the directory takes its settings along: a new C:\k inherits from C:\ again.
        host.disk.remove(&k).unwrap();
        host.disk.create_dir_all(&k).unwrap();
        assert!(!host.disk.dacl(&k).unwrap().only_system_and_administrators());
    }
}
