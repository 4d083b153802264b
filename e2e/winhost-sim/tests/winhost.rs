//! The simulator against its two peers: the product's command builders and parsers (`wmco-windows-services`),
//! whose commands must get the results Windows gives, and a real SSH client (libssh2 via `ssh2`) plus the control
//! interface over HTTP.

use std::net::Ipv4Addr;

use anyhow::Context;
use winhost_sim::host::{Host, Identity, Latency};
use wmco_e2e_harness::eventually_true;
use wmco_windows_services::{
    LogRotation, NodeInputs, Platform, ProbeRequest, ScCommand, ServiceName, ServiceState, StartType, Verbosity,
    WinPath, node_services, parse_sc_failure, parse_sc_qc, parse_sc_query,
};

/// How long a test waits for the simulated host's driver (it runs on its own tick) to act.
const HOST_TICKS: std::time::Duration = std::time::Duration::from_secs(5);

fn inputs() -> NodeInputs {
    NodeInputs {
        node_ip: Ipv4Addr::new(203, 0, 113, 10),
        node_name: "winhost-a".into(),
        api_server_url: "https://api-int.example.test:6443".into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    }
}

fn host() -> anyhow::Result<(tempfile::TempDir, Host)> {
    let root = tempfile::tempdir()?;
    let identity = Identity {
        hostname: "winhost-a".into(),
        fqdn: "winhost-a.sim.test".into(),
        build: 20348,
        ubr: 2340,
        node_ip: Ipv4Addr::new(203, 0, 113, 10),
    };
    let host = Host::new(identity, root.path(), Latency::zero())?;
    Ok((root, host))
}

fn put(host: &Host, path: &str, contents: &[u8]) -> anyhow::Result<()> {
    let path = winhost_sim::disk::WinPath::parse(path)?;
    host.disk.create_dir_all(&path.parent().context("no parent")?)?;
    host.disk.write(&path, contents)?;
    Ok(())
}

#[test]
fn product_commands_get_windows_results() -> anyhow::Result<()> {
    let (_root, mut host) = host()?;
    let services = node_services(&inputs())?;
    for service in &services {
        for binary in service.spec.binaries() {
            put(&host, binary.as_str(), b"MZ")?;
        }
        let create = ScCommand::Create(Box::new(service.spec.clone())).render()?;
        let output = host.exec("test", &create.line);
        assert_eq!((output.code, output.stdout.as_str()), (0, "[SC] CreateService SUCCESS\r\n"), "{}", create.line);
        let description =
            ScCommand::Description { name: service.spec.name.clone(), text: service.spec.description.clone() }
                .render()?;
        assert_eq!(host.exec("test", &description.line).code, 0, "{}", description.line);
        let failure =
            ScCommand::Failure { name: service.spec.name.clone(), actions: service.spec.recovery.clone() }.render()?;
        assert_eq!(host.exec("test", &failure.line).code, 0, "{}", failure.line);
        let flag =
            ScCommand::FailureFlag { name: service.spec.name.clone(), enabled: service.spec.failure_flag }.render()?;
        assert_eq!(host.exec("test", &flag.line).code, 0, "{}", flag.line);
    }

    let mut request = ProbeRequest::default();
    for service in &services {
        request.services.insert(service.spec.name.clone());
    }
    request.services.insert(ServiceName::new("absent")?);
    request.files.insert(WinPath::parse(r"C:\k\kubelet.exe")?);
    request.files.insert(WinPath::parse(r"C:\k\none.exe")?);
    request.directories.insert(WinPath::parse(r"C:\k")?);
    let probe = request.script().render()?;
    let script = probe.script_file.as_ref().context("seven services make the probe a -File script")?;
    put(&host, script.path.as_str(), &script.contents)?;
    let output = host.exec("test", &probe.line);
    assert_eq!((output.code, output.stderr.as_str()), (0, ""), "{}", output.stdout);
    let observed = request.parse_output(&output.stdout)?;
    assert_eq!(observed.services.len(), services.len(), "the absent service is missing from the map");
    for service in &services {
        let seen = &observed.services[&service.spec.name];
        assert_eq!(seen.state, Some(ServiceState::Stopped));
        assert_eq!(seen.image_path.as_deref(), Some(service.spec.command.image_path().as_str()));
        assert_eq!(seen.start, Some(service.spec.start));
        assert_eq!(seen.dependencies, service.spec.dependencies);
        assert_eq!(seen.description.as_deref(), Some(service.spec.description.as_str()));
        assert_eq!(seen.recovery.as_ref(), Some(&service.spec.recovery));
        assert_eq!(seen.failure_flag, service.spec.failure_flag);
        assert!(!seen.marked_for_deletion);
    }
    let kubelet_hash = observed.files[&WinPath::parse(r"C:\k\kubelet.exe")?].as_ref().map(|hash| hash.to_string());
    let expected = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"MZ"));
    assert_eq!(kubelet_hash.map(|hash| hash.to_lowercase()), Some(expected));
    assert_eq!(observed.files[&WinPath::parse(r"C:\k\none.exe")?], None);
    assert!(observed.directories[&WinPath::parse(r"C:\k")?]);

    let containerd = ServiceName::new("containerd")?;
    let qc = host.exec("test", &ScCommand::Qc(containerd.clone()).render()?.line);
    let config = parse_sc_qc(&qc.stdout)?;
    assert_eq!(config.start, Some(StartType::Auto));
    let query = host.exec("test", &ScCommand::Query(containerd.clone()).render()?.line);
    assert_eq!(parse_sc_query(&query.stdout)?.state, ServiceState::Stopped);
    assert_eq!(parse_sc_query(&query.stdout)?.win32_exit_code, 1077);
    let start_line = ScCommand::Start(containerd.clone()).render()?.line;
    let start = host.exec("test", &start_line);
    assert_eq!((start.code, parse_sc_query(&start.stdout)?.state), (0, ServiceState::StartPending));
    let query = host.exec("test", &ScCommand::Query(containerd.clone()).render()?.line);
    let status = parse_sc_query(&query.stdout)?;
    assert_eq!((status.state, status.win32_exit_code), (ServiceState::Stopped, 1067), "no config file: it exits");
    let log = host.disk.read(&winhost_sim::disk::WinPath::parse(r"C:\var\log\containerd\containerd.refused.log")?)?;
    assert!(String::from_utf8(log)?.contains("containerd_conf.toml"));
    put(&host, r"C:\k\containerd\containerd_conf.toml", b"version = 2\n")?;
    assert_eq!(host.exec("test", &start_line).code, 0);
    let query = host.exec("test", &ScCommand::Query(containerd.clone()).render()?.line);
    assert_eq!(parse_sc_query(&query.stdout)?.state, ServiceState::Running);
    let again = host.exec("test", &start_line);
    let failure = parse_sc_failure(&again.stdout, again.code).context("sc start of a running service fails")?;
    assert_eq!(failure.code.code(), 1056);
    let missing = host.exec("test", &ScCommand::Query(ServiceName::new("absent")?).render()?.line);
    assert_eq!(parse_sc_failure(&missing.stdout, missing.code).map(|failure| failure.code.code()), Some(1060));
    assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
    Ok(())
}

/// A small product probe fits an `-EncodedCommand` line: environment, firewall and registry sections.
#[test]
fn encoded_probe_reads_environment_firewall_and_registry() -> anyhow::Result<()> {
    use wmco_windows_services::{EnvVarName, RegistryData, RegistryKey, RegistryValueName};
    let (_root, mut host) = host()?;
    host.set_machine_env("HTTP_PROXY", Some("http://proxy:3128"));
    let mut request = ProbeRequest::default();
    request.machine_env.insert(EnvVarName::new("HTTP_PROXY")?);
    request.machine_env.insert(EnvVarName::new("NO_PROXY")?);
    request.firewall_rules.insert("ContainerLogsPort".to_owned());
    let build_key =
        (RegistryKey::new(r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion")?, RegistryValueName::new("UBR")?);
    request.registry_values.insert(build_key.clone());
    let rendered = request.script().render()?;
    assert!(rendered.script_file.is_none());
    let output = host.exec("test", &rendered.line);
    assert_eq!((output.code, output.stderr.as_str()), (0, ""));
    let observed = request.parse_output(&output.stdout)?;
    assert_eq!(observed.machine_env[&EnvVarName::new("HTTP_PROXY")?].as_deref(), Some("http://proxy:3128"));
    assert_eq!(observed.machine_env[&EnvVarName::new("NO_PROXY")?], None);
    assert_eq!(observed.firewall_rules["ContainerLogsPort"], None);
    assert_eq!(observed.registry_values[&build_key], Some(RegistryData::Dword(2340)));
    Ok(())
}

/// Runs `script` the way the product does: uploads its script file when the line refers to one.
fn run_script(host: &mut Host, script: &wmco_windows_services::PowerShellScript) -> anyhow::Result<String> {
    let rendered = script.render()?;
    if let Some(file) = &rendered.script_file {
        put(host, file.path.as_str(), &file.contents)?;
    }
    let output = host.exec("test", &rendered.line);
    anyhow::ensure!(output.code == 0 && output.stderr.is_empty(), "{}: {}", output.code, output.stderr);
    Ok(output.stdout)
}

/// A directory created under `C:\` lets Users read everything in it and create files and folders there (issue 36,
/// point 7): the product's probe reads its SDDL and reports it so, its plan restricts it, the host's icacls leaves
/// SYSTEM and Administrators alone on it and on what is already inside, and the next probe finds nothing to do.
#[test]
fn a_user_readable_directory_is_reported_and_restricted() -> anyhow::Result<()> {
    use wmco_windows_services::{HostState, Step, grants_only_system_and_administrators, plan};
    let (_root, mut host) = host()?;
    let (k, cni) = (WinPath::parse(r"C:\k")?, WinPath::parse(r"C:\k\cni")?);
    put(&host, r"C:\k\cni\bootstrap-token", b"token")?;
    let desired = HostState {
        directories: [k.clone(), cni.clone()].into(),
        private_directories: [k.clone()].into(),
        ..HostState::default()
    };
    let request = ProbeRequest::for_state(&desired);
    let observed = request.parse_output(&run_script(&mut host, &request.script())?)?;
    let sddl = observed.directory_acls[&k].clone().context("C:\\k exists")?;
    assert!(sddl.contains("(A;OICIID;0x1200a9;;;BU)") && sddl.contains("(A;CIID;LC;;;BU)"), "{sddl}");
    assert!(!grants_only_system_and_administrators(&sddl), "{sddl}");
    let steps = plan(&desired, &observed)?;
    assert_eq!(steps, [Step::RestrictDirectories { reset: Vec::new(), protect: vec![k.clone()] }]);
    for command in steps[0].commands()? {
        let output = host.exec("test", &command.line);
        assert_eq!((output.code, output.stderr.as_str()), (0, ""), "{}", output.stdout);
    }

    let observed = request.parse_output(&run_script(&mut host, &request.script())?)?;
    assert_eq!(observed.directory_acls[&k].as_deref(), Some("O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"));
    assert_eq!(observed.directory_acls[&cni].as_deref(), Some("O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)"));
    assert_eq!(plan(&desired, &observed)?, Vec::<Step>::new());
    let token = host.disk.dacl(&winhost_sim::disk::WinPath::parse(r"C:\k\cni\bootstrap-token")?).context("token")?;
    assert!(token.only_system_and_administrators(), "the file already there follows");
    assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
    Ok(())
}

#[test]
fn root_certificates_are_imported_recorded_and_only_ours_removed() -> anyhow::Result<()> {
    use wmco_windows_services::{RootSync, Thumbprint, TrustedRoots};
    let (_root, mut host) = host()?;
    let record = WinPath::parse(r"C:\k\wmco\imported-root-certificates.txt")?;
    let mut certificates = std::collections::BTreeMap::new();
    for name in ["proxy-ca", "registry-ca"] {
        let pem = rcgen::generate_simple_self_signed(vec![name.to_owned()])?.cert.pem();
        let der = pem::parse(&pem)?.into_contents();
        let thumbprint = Thumbprint::new(&hex::encode(<sha1::Sha1 as sha1::Digest>::digest(&der)))?;
        let file = WinPath::parse(&format!(r"C:\k\certs\{thumbprint}.crt"))?;
        put(&host, file.as_str(), pem.as_bytes())?;
        certificates.insert(thumbprint, file);
    }
    let builtin = Thumbprint::new(winhost_sim::host::BUILTIN_ROOT_THUMBPRINT)?;
    let request = ProbeRequest { trusted_roots: Some(record.clone()), ..ProbeRequest::default() };
    let probe = |host: &mut Host| -> anyhow::Result<wmco_windows_services::ObservedRoots> {
        request.parse_output(&run_script(host, &request.script())?)?.trusted_roots.context("no trust section")
    };

    // A fresh host trusts only its built-in root and has no record.
    let fresh = probe(&mut host)?;
    assert_eq!(fresh.store, [builtin.clone()].into());
    assert!(fresh.imported.is_empty());

    // Both certificates are imported and recorded; a second sync has nothing to do.
    let desired = TrustedRoots { certificates: certificates.clone(), record: record.clone() };
    let sync = RootSync::between(&desired, &fresh).context("a sync is due")?;
    run_script(&mut host, &sync.script()?)?;
    let synced = probe(&mut host)?;
    assert_eq!(synced.store.len(), 3);
    assert_eq!(synced.imported, certificates.keys().cloned().collect());
    assert_eq!(RootSync::between(&desired, &synced), None);

    // Nothing trusted any more (a deconfigure): what the operator imported goes, the built-in root stays.
    let cleared = RootSync::between(&TrustedRoots::none(record), &synced).context("a removal is due")?;
    run_script(&mut host, &cleared.script()?)?;
    let after = probe(&mut host)?;
    assert_eq!(after.store, [builtin].into());
    assert!(after.imported.is_empty());
    Ok(())
}

/// Minimal HTTP/1.1 client for the control interface.
fn http(address: std::net::SocketAddr, method: &str, path: &str, body: &str) -> anyhow::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response.get(9..12).context("short response")?.parse()?;
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    Ok((status, body))
}

fn run(session: &ssh2::Session, line: &str) -> anyhow::Result<(String, String, i32)> {
    use std::io::Read;
    let mut channel = session.channel_session()?;
    channel.exec(line)?;
    channel.send_eof()?;
    let mut stdout = String::new();
    channel.read_to_string(&mut stdout)?;
    let mut stderr = String::new();
    channel.stderr().read_to_string(&mut stderr)?;
    channel.wait_close()?;
    Ok((stdout, stderr, channel.exit_status()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_sftp_and_control_interface() -> anyhow::Result<()> {
    let ControlledFleet { state: _state, public, pem, fleet, control } = controlled_fleet().await?;
    let request = winhost_sim::fleet::NewHost { authorized_key: Some(public), ..Default::default() };
    let info = fleet.lock().await.add(request).await?;
    assert_eq!(info.ssh_address.ip().to_string(), "127.0.0.10");
    assert_eq!(info.node_ip.to_string(), "203.0.113.10");
    let address = info.ssh_address;
    let name = info.name.clone();
    let bare = fleet.lock().await.add(winhost_sim::fleet::NewHost::default()).await?;

    let result = tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let connect = |address: std::net::SocketAddr| -> anyhow::Result<ssh2::Session> {
            let mut session = ssh2::Session::new()?;
            session.set_tcp_stream(std::net::TcpStream::connect(address)?);
            session.handshake()?;
            session.userauth_pubkey_memory("Administrator", None, &pem, None)?;
            Ok(session)
        };
        assert!(connect(bare.ssh_address).is_err(), "an unprovisioned host has no authorized key");
        let session = connect(address)?;
        // Windows reports the host's name as it was set: stock images name hosts in upper case.
        assert_eq!(run(&session, "hostname")?, ("WINHOST-0\r\n".to_owned(), String::new(), 0));
        let (stdout, _, code) = run(&session, "sc.exe query nosuch")?;
        assert_eq!(code, 1060);
        assert!(stdout.starts_with("[SC] EnumQueryServicesStatus:OpenService FAILED 1060:"));

        let sftp = session.sftp()?;
        sftp.mkdir(std::path::Path::new("/C:/k"), 0o755)?;
        let mut file = sftp.create(std::path::Path::new("C:/k/a.txt"))?;
        std::io::Write::write_all(&mut file, b"first")?;
        drop(file);
        let mut file = sftp.create(std::path::Path::new("C:/k/b.txt"))?;
        std::io::Write::write_all(&mut file, b"second")?;
        drop(file);
        let renamed = sftp.rename(
            std::path::Path::new("C:/k/b.txt"),
            std::path::Path::new("C:/k/a.txt"),
            Some(ssh2::RenameFlags::empty()),
        );
        assert!(renamed.is_err(), "a plain rename onto an existing file fails on Windows");
        let (stdout, _, code) =
            run(&session, r"powershell.exe -NoProfile -Command Get-Content -LiteralPath 'C:\k\a.txt' -Raw")?;
        assert_eq!((stdout.as_str(), code), ("first\r\n", 0));
        Ok(())
    })
    .await?;
    result?;

    let (status, body) = http(control, "GET", &format!("/hosts/{name}/commands"), "")?;
    assert_eq!(status, 200);
    let commands: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!(commands[0]["line"], "hostname");
    assert!(commands[0]["client"].as_str().is_some_and(|client| client.starts_with("SSH-2.0-libssh2")), "{body}");
    assert_eq!(commands[1]["exit_code"], 1060);
    let (status, body) =
        http(control, "POST", &format!("/hosts/{name}/file-hashes"), r#"{"paths":["C:\\k\\a.txt","C:\\k\\z"]}"#)?;
    assert_eq!(status, 200);
    let hashes: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!(hashes[r"C:\k\a.txt"], hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"first")));
    assert_eq!(hashes[r"C:\k\z"], serde_json::Value::Null);
    let (status, body) = http(control, "GET", &format!("/hosts/{name}/unknown-commands"), "")?;
    assert_eq!((status, body.as_str()), (200, "[]"));
    let (status, body) = http(
        control,
        "POST",
        "/hosts/winhost-1/provision",
        r#"{"user_data":"New-Item -ItemType Directory -Force -Path 'C:\\k' | Out-Null\nSet-Content -LiteralPath 'C:\\k\\p.txt' -Value 'provisioned' -Encoding ascii\nexit 3"}"#,
    )?;
    assert_eq!(status, 200);
    let output: serde_json::Value = serde_json::from_str(&body)?;
    assert_eq!((output["code"].as_u64(), output["stderr"].as_str()), (Some(3), Some("")));
    let (status, _) = http(control, "POST", &format!("/hosts/{name}/faults"), r#"{"fail_next":1}"#)?;
    assert_eq!(status, 200);
    let (status, body) = http(control, "POST", &format!("/hosts/{name}/host-key"), "")?;
    assert_eq!(status, 200);
    assert!(body.contains("ssh-ed25519"));
    let (status, _) = http(control, "GET", "/hosts/nosuch/services", "")?;
    assert_eq!(status, 404);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_refusals_stop_the_service_and_are_logged() -> anyhow::Result<()> {
    let state = tempfile::tempdir()?;
    let mut fleet = winhost_sim::fleet::Fleet::new(state.path().to_path_buf(), 0, Latency::zero());
    let info = fleet.add(winhost_sim::fleet::NewHost::default()).await?;
    let server = fleet.server(&info.name)?;
    let log = winhost_sim::disk::WinPath::parse(r"C:\var\log\kubelet\kubelet.refused.log")?;
    {
        let mut host = winhost_sim::ssh::lock(&server.host);
        put(&host, r"C:\k\kubelet.exe", b"MZ")?;
        put(&host, r"C:\k\containerd.exe", b"MZ")?;
        put(&host, r"C:\k\kubelet.conf", b"{}")?;
        let create = r#"sc.exe create kubelet binPath= "C:\k\kubelet.exe --config=C:\k\kubelet.conf --bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig --kubeconfig=C:\k\kubeconfig" start= auto"#;
        assert_eq!(host.exec("test", create).code, 0);
        assert_eq!(host.exec("test", "sc.exe start kubelet").code, 0);
    }
    eventually_true("the kubelet to stop", HOST_TICKS, || {
        let mut host = winhost_sim::ssh::lock(&server.host);
        host.exec("test", "sc.exe query kubelet").stdout.contains("1  STOPPED") && host.disk.read(&log).is_ok()
    })
    .await
    .context("without containerd the kubelet exits")?;
    let text = String::from_utf8(winhost_sim::ssh::lock(&server.host).disk.read(&log)?)?;
    assert!(text.contains("containerd service is not running"), "{text}");
    {
        let mut host = winhost_sim::ssh::lock(&server.host);
        host.disk.remove(&log)?;
        assert_eq!(host.exec("test", r"sc.exe create containerd binPath= C:\k\containerd.exe").code, 0);
        assert_eq!(host.exec("test", "sc.exe config kubelet depend= containerd").code, 0);
        assert_eq!(host.exec("test", "sc.exe start kubelet").code, 0);
    }
    eventually_true("the kubelet's refusal log", HOST_TICKS, || {
        winhost_sim::ssh::lock(&server.host).disk.read(&log).is_ok()
    })
    .await
    .context("the simulated kubelet refuses a missing bootstrap kubeconfig")?;
    let text = String::from_utf8(winhost_sim::ssh::lock(&server.host).disk.read(&log)?)?;
    assert!(text.contains("bootstrap-kubeconfig") || text.contains("kubeconfig"), "{text}");
    let mut host = winhost_sim::ssh::lock(&server.host);
    let query = host.exec("test", "sc.exe query kubelet");
    assert!(query.stdout.contains("1  STOPPED") && query.stdout.contains("1067  (0x42b)"), "{}", query.stdout);
    assert!(host.exec("test", "sc.exe query containerd").stdout.contains("4  RUNNING"));
    Ok(())
}

/// One simulated host with the control interface, authorizing a fresh key.
struct ControlledHost {
    /// Keeps the host's `C:` directory until the test ends.
    _state: tempfile::TempDir,
    /// The private key, PEM.
    pem: String,
    /// The control interface's address.
    control: std::net::SocketAddr,
    /// The host.
    info: winhost_sim::fleet::HostInfo,
    /// Its SSH server (faults, host state).
    server: std::sync::Arc<winhost_sim::ssh::SshServer>,
}

/// An `ssh2` session to `address` as Administrator with the key `pem` (2 s timeout).
fn administrator_session(address: std::net::SocketAddr, pem: &str) -> anyhow::Result<ssh2::Session> {
    let mut session = ssh2::Session::new()?;
    session.set_tcp_stream(std::net::TcpStream::connect(address)?);
    session.set_timeout(2000);
    session.handshake()?;
    session.userauth_pubkey_memory("Administrator", None, pem, None)?;
    Ok(session)
}

/// An empty simulated fleet with its control interface, and a fresh key pair for its hosts.
struct ControlledFleet {
    /// Keeps the hosts' `C:` directories until the test ends.
    state: tempfile::TempDir,
    /// The public key, an OpenSSH line.
    public: String,
    /// The private key, PEM.
    pem: String,
    /// The fleet.
    fleet: std::sync::Arc<tokio::sync::Mutex<winhost_sim::fleet::Fleet>>,
    /// The control interface's address.
    control: std::net::SocketAddr,
}

async fn controlled_fleet() -> anyhow::Result<ControlledFleet> {
    let state = tempfile::tempdir()?;
    let key = winhost_sim::ssh::generate_key()?;
    let public = key.public_key().to_openssh()?;
    let pem = key.to_openssh(russh::keys::ssh_key::LineEnding::LF)?.to_string();
    let fleet = std::sync::Arc::new(tokio::sync::Mutex::new(winhost_sim::fleet::Fleet::new(
        state.path().to_path_buf(),
        0,
        Latency::zero(),
    )));
    let control = winhost_sim::control::start(0, std::sync::Arc::clone(&fleet)).await?;
    Ok(ControlledFleet { state, public, pem, fleet, control })
}

async fn controlled_host() -> anyhow::Result<ControlledHost> {
    let ControlledFleet { state, public, pem, fleet, control } = controlled_fleet().await?;
    let request = winhost_sim::fleet::NewHost { authorized_key: Some(public), ..Default::default() };
    let info = fleet.lock().await.add(request).await?;
    let server = fleet.lock().await.server(&info.name)?;
    Ok(ControlledHost { _state: state, pem, control, info, server })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_and_reboot() -> anyhow::Result<()> {
    let ControlledHost { _state, pem, control, info, server } = controlled_host().await?;
    {
        let mut host = winhost_sim::ssh::lock(&server.host);
        put(&host, r"C:\k\agent.exe", b"MZ")?;
        assert_eq!(host.exec("setup", r"sc.exe create agent binPath= C:\k\agent.exe start= auto").code, 0);
    }
    let (address, name) = (info.ssh_address, info.name.clone());
    let faults =
        move |body: &str| http(control, "POST", &format!("/hosts/{name}/faults"), body).map(|(status, _)| status);
    let connect = move || administrator_session(address, &pem);
    let name = info.name.clone();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        assert_eq!(faults(r#"{"fail_next":1}"#)?, 200);
        let session = connect()?;
        assert_eq!(
            run(&session, "hostname")?,
            (String::new(), "winhost-sim: injected command failure\r\n".to_owned(), 1)
        );
        assert_eq!(run(&session, "hostname")?.2, 0, "only the next command fails");
        assert_eq!(faults(r#"{"hang_commands":true}"#)?, 200);
        assert!(run(&session, "hostname").is_err(), "a hanging command times out on the client");
        assert_eq!(faults(r#"{"drop_connections":true}"#)?, 200);
        let session = connect()?;
        assert!(run(&session, "hostname").is_err(), "the connection drops at exec");
        assert_eq!(faults(r#"{"refuse_connections":true}"#)?, 200);
        assert!(connect().is_err(), "connections are refused");
        assert_eq!(faults("{}")?, 200);
        let session = connect()?;
        assert_eq!(run(&session, "sc.exe query agent")?.2, 0);
        let (status, _) = http(control, "POST", &format!("/hosts/{name}/reboot"), "")?;
        assert_eq!(status, 204);
        let session = connect()?;
        let (stdout, _, _) = run(&session, "sc.exe query agent")?;
        assert!(stdout.contains("4  RUNNING"), "automatic services start at boot: {stdout}");
        let pid = |session: &ssh2::Session| -> anyhow::Result<String> {
            let (stdout, _, _) = run(session, "sc.exe queryex agent")?;
            Ok(stdout.lines().find(|line| line.trim_start().starts_with("PID")).unwrap_or_default().to_owned())
        };
        let before = pid(&session)?;
        let restart = run(&session, "powershell.exe -NoProfile -Command Restart-Computer -Force");
        assert!(restart.as_ref().map_or(true, |(stdout, _, _)| stdout.is_empty()), "{restart:?}");
        let mut session = connect();
        for _ in 0..20 {
            if session.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            session = connect();
        }
        let session = session?;
        assert_ne!(pid(&session)?, before, "the reboot restarted the automatic service");
        let (status, _) = http(control, "POST", &format!("/hosts/{name}/throttle"), r#"{"bytes_per_second":65536}"#)?;
        assert_eq!(status, 204);
        let sftp = session.sftp()?;
        let mut file = sftp.create(std::path::Path::new("C:/k/blob.bin"))?;
        let started = std::time::Instant::now();
        std::io::Write::write_all(&mut file, &vec![7u8; 64 * 1024])?;
        drop(file);
        assert!(started.elapsed() >= std::time::Duration::from_millis(900), "64 KiB at 64 KiB/s takes a second");
        Ok(())
    })
    .await??;
    Ok(())
}

/// Standard output as bytes, and the exit status.
fn run_bytes(session: &ssh2::Session, line: &str) -> anyhow::Result<(Vec<u8>, i32)> {
    use std::io::Read;
    let mut channel = session.channel_session()?;
    channel.exec(line)?;
    channel.send_eof()?;
    let mut stdout = Vec::new();
    channel.read_to_end(&mut stdout)?;
    channel.wait_close()?;
    Ok((stdout, channel.exit_status()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targeted_rules_break_one_step_and_hostile_answers_arrive_as_sent() -> anyhow::Result<()> {
    let ControlledHost { _state, pem, control, info, server } = controlled_host().await?;
    let (address, name) = (info.ssh_address, info.name.clone());
    let connect = move || administrator_session(address, &pem);
    let rules = r#"{"rules": [
        {"at": {"command": "SC.EXE QUERY"}, "action": "fail", "times": 1},
        {"at": {"command": "echo huge"}, "action": {"huge_output": {"bytes": 1048576}}, "times": 1},
        {"at": {"command": "echo text"}, "action": "invalid_text", "times": 1},
        {"at": {"command": "echo json"}, "action": {"deep_json": {"depth": 10000}}, "times": 1},
        {"at": {"command": "echo full"}, "action": "disk_full", "times": 1},
        {"at": {"upload": "full.bin"}, "action": "disk_full", "times": 1},
        {"at": {"upload": "cut.bin"}, "action": "drop", "times": 1},
        {"at": {"command": "echo reboot"}, "action": "reboot", "times": 1}
    ]}"#;
    let (status, body) = http(control, "POST", &format!("/hosts/{name}/faults"), rules)?;
    assert_eq!(status, 200, "{body}");
    let boots_before = winhost_sim::ssh::lock(&server.host).boots;
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let session = connect()?;
        let (_, stderr, code) = run(&session, "sc.exe query agent")?;
        assert_eq!((stderr.as_str(), code), ("winhost-sim: injected command failure\r\n", 1));
        assert_eq!(run(&session, "sc.exe query agent")?.2, 1060, "the rule is spent: the command runs");
        let (stdout, code) = run_bytes(&session, "echo huge")?;
        assert_eq!((stdout.len(), code), (1024 * 1024, 0));
        let (stdout, _) = run_bytes(&session, "echo text")?;
        assert!(std::str::from_utf8(&stdout).is_err(), "{stdout:?}");
        let (stdout, _) = run_bytes(&session, "echo json")?;
        assert_eq!((stdout.len(), &stdout[..5]), (60_001, &b"{\"a\":"[..]), "objects nested 10,000 deep");
        let (_, stderr, code) = run(&session, "echo full")?;
        assert_eq!((stderr.as_str(), code), ("There is not enough space on the disk.\r\n", 1));

        let sftp = session.sftp()?;
        sftp.mkdir(std::path::Path::new("C:/k"), 0o755)?;
        let mut file = sftp.create(std::path::Path::new("C:/k/full.bin"))?;
        let error = std::io::Write::write_all(&mut file, b"data").and_then(|()| std::io::Write::flush(&mut file));
        assert!(error.is_err(), "a full disk refuses the write");
        drop(file);
        let mut file = sftp.create(std::path::Path::new("C:/k/cut.bin"))?;
        let error = std::io::Write::write_all(&mut file, b"data").and_then(|()| std::io::Write::flush(&mut file));
        assert!(error.is_err(), "the connection drops at the write");
        drop(file);
        drop(sftp);
        assert!(run(&session, "hostname").is_err(), "the dropped connection is gone");

        let session = connect()?;
        let before_reboot = connect()?;
        assert!(run(&session, "echo reboot").is_err(), "the rebooting host drops the connection");
        // Back once a new connection runs a command: one made while the host goes down may still be accepted and
        // then dropped, as a real host's sshd does while it stops.
        let back = (0..200).any(|_| {
            let answered = connect().is_ok_and(|session| run(&session, "hostname").is_ok_and(|(_, _, code)| code == 0));
            if !answered {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            answered
        });
        assert!(back, "the host is back");
        assert!(run(&before_reboot, "hostname").is_err(), "a connection from before the reboot is dead");
        Ok(())
    })
    .await??;
    assert_eq!(winhost_sim::ssh::lock(&server.host).boots, boots_before + 1);
    let faults = winhost_sim::ssh::lock(&server.faults).clone();
    assert!(faults.rules.is_empty(), "every rule was spent");
    assert_eq!(faults.rule_hits, 8, "each of the 8 rules answered once");
    Ok(())
}

/// `powershell.exe -EncodedCommand` as the product sends it.
fn encoded(script: &str) -> String {
    format!(
        "powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand {}",
        winhost_sim::ps::encode(script)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_installed_over_ssh_stay_pending_until_restart_computer() -> anyhow::Result<()> {
    let ControlledFleet { state: _state, public, pem, fleet: _fleet, control } = controlled_fleet().await?;
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let (status, body) = http(control, "POST", "/hosts", r#"{"containers":"Off"}"#)?;
        assert_eq!(status, 400, "{body}");
        let request = serde_json::json!({ "authorized_key": public, "containers": "Disabled" }).to_string();
        let (status, body) = http(control, "POST", "/hosts", &request)?;
        assert_eq!(status, 201, "{body}");
        let info: serde_json::Value = serde_json::from_str(&body)?;
        let address: std::net::SocketAddr = info["ssh_address"].as_str().context("ssh_address")?.parse()?;
        let probe = encoded(
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             $c = Get-WindowsOptionalFeature -Online -FeatureName Containers\n\
             $s = @('Enabled', 'EnablePending', 'Disabled', 'DisablePending', 'DisabledWithPayloadRemoved') | Where-Object { $c.State -eq $_ } | Select-Object -First 1\n\
             [ordered]@{ state = $s; boot = (Get-CimInstance Win32_OperatingSystem).LastBootUpTime } | ConvertTo-Json -Compress -Depth 2\n\
             exit 0",
        );
        let read = |session: &ssh2::Session| -> anyhow::Result<(String, String)> {
            let (stdout, stderr, code) = run(session, &probe)?;
            assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
            let parsed: serde_json::Value = serde_json::from_str(&stdout)?;
            Ok((parsed["state"].as_str().unwrap_or_default().to_owned(), parsed["boot"].as_str().unwrap_or_default().to_owned()))
        };
        let session = administrator_session(address, &pem)?;
        let (state, first_boot) = read(&session)?;
        assert_eq!(state, "Disabled");
        assert!(first_boot.starts_with("/Date(") && first_boot.ends_with(")/"), "{first_boot}");

        let install = encoded(
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             $r = Install-WindowsFeature -Name Containers\n\
             if (-not $r.Success) { exit 1 }\nif ($r.RestartNeeded -eq 'Yes') { 'restart' } else { 'ready' }\nexit 0",
        );
        assert_eq!(run(&session, &install)?, ("restart\r\n".to_owned(), String::new(), 0));
        assert_eq!(read(&session)?, ("EnablePending".to_owned(), first_boot.clone()), "nothing settles before the reboot");

        let restart = run(&session, &encoded("Restart-Computer -Force"));
        assert!(restart.as_ref().map_or(true, |(stdout, _, _)| stdout.is_empty()), "{restart:?}");
        let mut after = Err(anyhow::anyhow!("the host did not come back"));
        for _ in 0..40 {
            after = administrator_session(address, &pem).and_then(|session| read(&session));
            if after.as_ref().is_ok_and(|(_, boot)| *boot != first_boot) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let (state, second_boot) = after?;
        assert_eq!(state, "Enabled");
        assert_ne!(second_boot, first_boot, "the boot time tells a completed reboot from a pending one");
        let session = administrator_session(address, &pem)?;
        assert_eq!(run(&session, &install)?, ("ready\r\n".to_owned(), String::new(), 0));
        Ok(())
    })
    .await??;
    Ok(())
}

/// The product's state probe reads the pending-reboot markers the host keeps (issue 37): none on a fresh host, each
/// one where Windows keeps it, an empty `PendingFileRenameOperations` as none, and a reboot clears them all.
#[test]
fn the_probe_reads_the_pending_reboot_markers_a_boot_clears() -> anyhow::Result<()> {
    use winhost_sim::pending_reboot::PendingRebootMarker as Sim;
    use wmco_windows_services::RebootMarker;
    let (_root, mut host) = host()?;
    let request = ProbeRequest::default();
    let probe = |host: &mut Host| -> anyhow::Result<Vec<RebootMarker>> {
        Ok(request.parse_output(&run_script(host, &request.script())?)?.pending_reboot)
    };
    assert!(probe(&mut host)?.is_empty(), "a freshly patched host");
    let empty = winhost_sim::host::RegValue::MultiString(vec![String::new(), String::new()]);
    host.set_registry_value(winhost_sim::pending_reboot::SESSION_MANAGER_KEY, "PendingFileRenameOperations", empty);
    assert!(probe(&mut host)?.is_empty(), "empty strings only");
    host.mark_pending_reboot(Sim::PendingFileRenameOperations)?;
    assert_eq!(probe(&mut host)?, [RebootMarker::PendingFileRenameOperations]);
    host.mark_pending_reboot(Sim::ComponentBasedServicing)?;
    host.mark_pending_reboot(Sim::WindowsUpdate)?;
    assert_eq!(probe(&mut host)?, RebootMarker::ALL);
    host.reboot();
    assert!(probe(&mut host)?.is_empty(), "a boot completes the pending operations");
    assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_reboot_markers_are_set_through_the_control_interface() -> anyhow::Result<()> {
    let ControlledFleet { state: _state, public: _, pem: _, fleet, control } = controlled_fleet().await?;
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let (status, body) = http(control, "POST", "/hosts", r#"{"pending_reboot":["WindowsUpdate"]}"#)?;
        assert_eq!(status, 201, "{body}");
        let (status, body) = http(control, "POST", "/hosts", r#"{"pending_reboot":["Patched"]}"#)?;
        assert_eq!(status, 400, "an unknown marker is refused: {body}");
        let (status, body) =
            http(control, "POST", "/hosts/winhost-0/pending-reboot", r#"{"markers":["PendingFileRenameOperations"]}"#)?;
        assert_eq!((status, body.as_str()), (200, r#"{"markers":["WindowsUpdate","PendingFileRenameOperations"]}"#));
        let (status, _) = http(control, "POST", "/hosts/nobody/pending-reboot", "{}")?;
        assert_eq!(status, 404);
        Ok(())
    })
    .await??;
    let server = fleet.lock().await.server("winhost-0")?;
    let markers = winhost_sim::ssh::lock(&server.host).pending_reboot_markers();
    assert_eq!(markers.len(), 2);
    Ok(())
}
