// Command etcd runs the etcd server from the pinned go.etcd.io/etcd/server/v3 module, with etcd's own
// command line (flags are passed through unchanged).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
