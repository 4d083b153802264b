# wmco: remove what configuring the host left on disk (deconfiguration): the payload directory, the kubelet's and
# containerd's state, CNI state and the services' logs. Services must be stopped and deleted first. Reports the
# directories it removed as JSON.
$ProgressPreference = 'SilentlyContinue'
$ErrorActionPreference = 'Stop'

$directories = @(
    'C:\k',
    'C:\var\lib\kubelet',
    'C:\var\lib\cni',
    'C:\var\log\kubelet',
    'C:\var\log\kube-proxy',
    'C:\var\log\containerd',
    'C:\var\log\hybrid-overlay',
    'C:\var\log\csi-proxy',
    'C:\var\log\windows_exporter',
    'C:\ProgramData\containerd'
)
$removed = @($directories | Where-Object { Test-Path -LiteralPath $_ })
foreach ($directory in $removed) {
    Remove-Item -LiteralPath $directory -Recurse -Force
}

[ordered]@{ removed = $removed } | ConvertTo-Json -Compress -Depth 2
exit 0
