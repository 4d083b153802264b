// Pins github.com/kubernetes-csi/csi-proxy v1.1.3 for the Windows payload (written by payload/build/pin.sh; see payload/README.md).
module wmco-rs.payload/csi-proxy

go 1.20

replace k8s.io/gengo => github.com/mauriciopoppe/gengo v0.0.0-20210525224835-9c78f58f3486

require github.com/kubernetes-csi/csi-proxy/client v1.1.3 // indirect

require (
	github.com/Microsoft/go-winio v0.6.1 // indirect
	github.com/go-logr/logr v1.2.0 // indirect
	github.com/golang/protobuf v1.5.3 // indirect
	github.com/kubernetes-csi/csi-proxy v1.1.3 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/mod v0.8.0 // indirect
	golang.org/x/net v0.9.0 // indirect
	golang.org/x/sys v0.11.0 // indirect
	golang.org/x/text v0.9.0 // indirect
	golang.org/x/tools v0.6.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20230525234030-28d5490b6b19 // indirect
	google.golang.org/grpc v1.57.0 // indirect
	google.golang.org/protobuf v1.31.0 // indirect
	k8s.io/klog/v2 v2.100.1 // indirect
)

tool github.com/kubernetes-csi/csi-proxy/cmd/csi-proxy
