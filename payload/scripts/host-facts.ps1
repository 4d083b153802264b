# wmco: report the facts the operator needs about this host as one JSON document: host name and FQDN, the IPv4
# address of the default-route interface (the kubelet's node IP), the Windows build, whether the Containers
# feature is enabled, and the HNS networks with their subnets and management address.
$ProgressPreference = 'SilentlyContinue'
$ErrorActionPreference = 'Stop'

$hostName = [System.Net.Dns]::GetHostName()
$fqdn = [System.Net.Dns]::GetHostEntry($hostName).HostName

$defaultRoute = Get-NetRoute -DestinationPrefix '0.0.0.0/0' | Select-Object -First 1
$nodeIp = $null
if ($defaultRoute -ne $null) {
    $address = Get-NetIPAddress -InterfaceIndex $defaultRoute.InterfaceIndex -AddressFamily IPv4 | Select-Object -First 1
    $nodeIp = $address.IPAddress
}

$version = Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$containers = Get-WindowsOptionalFeature -Online -FeatureName Containers
$containersEnabled = $containers.State -eq 'Enabled'

$networks = @()
try {
    $networks = @(Get-HnsNetwork | ForEach-Object {
        [ordered]@{
            name = $_.Name
            type = $_.Type
            management_ip = $_.ManagementIP
            subnets = @($_.Subnets | ForEach-Object { [ordered]@{ address_prefix = $_.AddressPrefix; gateway = $_.GatewayAddress } })
        }
    })
} catch {
    $networks = @()
}

[ordered]@{
    host_name = $hostName
    fqdn = $fqdn
    node_ip = $nodeIp
    build = $version.CurrentBuildNumber
    update_build_revision = $version.UBR
    containers_enabled = $containersEnabled
    hns_networks = $networks
} | ConvertTo-Json -Compress -Depth 5
exit 0
