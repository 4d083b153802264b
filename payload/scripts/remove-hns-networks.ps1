# wmco: remove the HNS networks hybrid-overlay-node created (deconfiguration), and report their names as JSON.
# Removing a network can briefly interrupt the host's connectivity, so the operator runs this last.
$ProgressPreference = 'SilentlyContinue'
$ErrorActionPreference = 'Stop'

$overlayNetworks = @(Get-HnsNetwork | Where-Object { $_.Name -eq 'OVNKubernetesHybridOverlayNetwork' -or $_.Name -eq 'BaseOVNKubernetesHybridOverlayNetwork' })
$removedNames = @($overlayNetworks | ForEach-Object { $_.Name })
foreach ($network in $overlayNetworks) {
    $network | Remove-HnsNetwork
}

[ordered]@{ removed = $removedNames } | ConvertTo-Json -Compress -Depth 2
exit 0
